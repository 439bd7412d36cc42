"""What an alert rule can watch, and the registry of the functions that look.

The figures an alert is about belong to the lenses (FOOM rates, build compare's gate, retain
cycles, leaks, churn), which sit a floor above this app: the site, which sees them all, says at
start-up which function checks each kind (`add_checker`, as it registers the CI gate's checks),
and the evaluation runs whatever is registered. A checker gets the app and the rule's figures
and answers the conditions that hold now, each a `Finding` with a stable `key`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Kind:
    label: str
    explains: str
    fields: tuple[str, ...]  # the rule's figures this kind reads


KINDS: dict[str, Kind] = {
    "foom_rate": Kind(
        "FOOM rate of a build",
        "FOOMs per classified session of the newest build with enough runs: above the threshold, "
        "or above the previous build's beyond both 95% Wilson intervals",
        ("threshold_percent", "significant", "min_runs"),
    ),
    "os_kill_rate": Kind(
        "OS memory-kill rate of a build",
        "Foreground memory kills the OS reported (MetricKit, ApplicationExitInfo) per foreground "
        "exit, judged as the FOOM rate is",
        ("threshold_percent", "significant", "min_runs"),
    ),
    "category_growth": Kind(
        "Category growth against the previous build",
        "A category's median persistent bytes per snapshot grew past the limit, significant by "
        "the rank test (the CI gate's rule)",
        ("max_growth", "alpha"),
    ),
    "new_problem": Kind(
        "New retain cycle or leak, or a fixed one back",
        "A retain-cycle cluster, leak group or LeakCanary leak that is new since the rule was "
        "made, or one marked fixed that was seen again (a regression)",
        (),
    ),
    "churn": Kind(
        "Churn of a scenario past its gate",
        "A scenario's median churn grew past the app's churn threshold against the previous "
        "build that measured it",
        (),
    ),
}
KIND_CHOICES = [(name, kind.label) for name, kind in KINDS.items()]


# What a rule's and a destination's fields may hold: the API's schema, its serializers and the
# page's forms read these.
MAX_RUNS = 2**31 - 1
# Explicit character ranges, never \s or \S: JavaScript's and Python's disagree (U+0085, U+001C).
_PART = r"[^@,\x00-\x20\x7f-\xa0]+"  # no control character, blank or separator
NAME_PATTERN = r"^[^\x00]*[^\x00-\x20\x7f-\xa0][^\x00]*$"  # something visible, no NUL
EMAILS_PATTERN = rf"^{_PART}@{_PART}(?:, ?{_PART}@{_PART})*$"
HOOK_URL_PATTERN = r"^https?://[^\x00-\x20\x7f-\xa0]+$"


@dataclass(frozen=True)
class RuleFigures:
    """A rule as a checker reads it (plain data)."""

    kind: str
    threshold_percent: float | None = None
    significant: bool = True
    min_runs: int = 100
    max_growth: str = "5%"
    alpha: float = 0.05
    created_at: datetime | None = None


@dataclass(frozen=True)
class Finding:
    """A condition that holds: `key` says which (the same key while it holds), `link` is the
    path of the page that explains it."""

    key: str
    title: str
    text: str
    link: str
    figures: dict[str, Any] = field(default_factory=dict)


# (app, the rule's figures) -> the conditions that hold now.
Checker = Callable[[Any, RuleFigures], list[Finding]]
# The rule's figures -> None, or ValueError saying which figure the checker cannot read.
Validator = Callable[[RuleFigures], None]

_CHECKERS: dict[str, Checker] = {}
_VALIDATORS: dict[str, Validator] = {}


def add_checker(kind: str, checker: Checker, validate: Validator | None = None) -> None:
    """Say which function checks `kind`, and which reads its figures the way the checker will
    (called by the site at start-up)."""
    if kind not in KINDS:
        raise ValueError(f"no alert kind {kind!r}")
    _CHECKERS[kind] = checker
    if validate is not None:
        _VALIDATORS[kind] = validate


def checker_of(kind: str) -> Checker | None:
    return _CHECKERS.get(kind)


def validate(figures: RuleFigures) -> None:
    """ValueError when the rule's checker could not read its figures."""
    if figures.kind not in KINDS:
        raise ValueError(f"no alert kind {figures.kind!r}")
    if figures.threshold_percent is not None and not 0 <= figures.threshold_percent <= 100:
        raise ValueError("the threshold is a percentage from 0 to 100")
    if not 0 < figures.alpha < 1:
        raise ValueError("alpha is a significance level between 0 and 1 (0.05)")
    if not 0 <= figures.min_runs <= MAX_RUNS:
        raise ValueError(f"the runs are a whole number from 0 to {MAX_RUNS}")
    check = _VALIDATORS.get(figures.kind)
    if check is not None:
        check(figures)
