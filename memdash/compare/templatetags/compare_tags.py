"""Template helpers of the compare pages: signed byte deltas and p-values."""

from __future__ import annotations

from django import template

from memdash.snapshots.analysis import format_bytes

register = template.Library()


@register.filter
def signed_bytes(value) -> str:
    """`+1.50 MiB`, `-48 Bytes`, `0 Bytes`: a delta always shows its direction."""
    if value is None or value == "":
        return "–"
    number = float(value)
    return ("+" if number > 0 else "") + format_bytes(number)


@register.filter
def signed(value) -> str:
    if value is None or value == "":
        return "–"
    number = float(value)
    text = f"{number:,.1f}".rstrip("0").rstrip(".")
    return ("+" if number > 0 else "") + text


@register.filter
def pvalue(value) -> str:
    if value is None:
        return "–"
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


@register.filter
def number(value) -> str:
    if value is None:
        return "–"
    return f"{float(value):,.1f}".rstrip("0").rstrip(".")
