"""Number formats of the churn pages."""

from __future__ import annotations

import math

from django import template

register = template.Library()


@register.filter
def churn_value(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.1f}"


@register.filter
def change(value: float | None) -> str:
    """+15.0 %; None (growth from nothing or nothing to compare with) prints as –."""
    if value is None:
        return "–"
    return f"{round(value, 1) + 0.0:+.1f} %"  # + 0.0: no "-0.0 %" for a tiny fall


@register.filter
def cv_percent(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{100 * value:.2f} %"


@register.filter
def times(value: float | None) -> str:
    """How many times steadier: 12.5×; ∞ when churn did not vary at all."""
    if value is None:
        return "–"
    if math.isinf(value):
        return "∞"
    return f"{value:,.1f}×"
