"""Checks of the CI gate over HTTP beside memory growth, judged by the lens that owns the figures.

The compare lens answers the gate (`GET /api/v1/apps/<id>/compare?max_growth=…`); another lens
may add a check of its own, asked for by a query parameter (`max_os_foom_rate`: the FOOM lens's
OS-reported rate). Lenses never import each other, so the site says at start-up which function
judges each parameter (`memdash.site.apps`), as it says which page draws each kind
(`core.links`), and the compare lens runs what is registered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memdash.core.models import Build


@dataclass(frozen=True)
class GateVerdict:
    """What a check says of the target build: why it fails (nothing when it passes), and the
    figures it adds to the gate's answer."""

    failures: list[str] = field(default_factory=list)
    answer: dict[str, Any] = field(default_factory=dict)


# (base build, target build, the parameter's value) -> verdict; ValueError for a value it
# cannot read, whose message the API answers under the parameter's name (400).
GateCheck = Callable[["Build", "Build", str], GateVerdict]

_CHECKS: dict[str, GateCheck] = {}


def add_check(parameter: str, check: GateCheck) -> None:
    """Say that `check` judges the gate's query parameter `parameter` (called by the site)."""
    _CHECKS[parameter] = check


def checks() -> dict[str, GateCheck]:
    """Query parameter -> its check, for every check registered."""
    return dict(_CHECKS)
