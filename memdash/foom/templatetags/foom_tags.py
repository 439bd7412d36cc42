"""Template filters of the FOOM pages."""

from __future__ import annotations

from django import template

from memdash.foom.logic.classify import class_label
from memdash.foom.logic.exits import VERDICT_NAMES

register = template.Library()


@register.filter
def rate_percent(value: float | str | None, digits: int = 2) -> str:
    """0.0067 -> '0.67%'; FOOM rates are small, so two decimals by default."""
    if value is None or value == "":
        return "–"
    return f"{100 * value:.{int(digits)}f}%"


@register.filter
def foom_class(cls: str) -> str:
    """`background_oom` -> "background OOM" (`classify.class_label`)."""
    return class_label(str(cls))


@register.filter
def os_verdict(verdict: str) -> str:
    """`background_memory` -> "memory kill (background)": what the OS said, in words."""
    return VERDICT_NAMES.get(str(verdict), str(verdict))
