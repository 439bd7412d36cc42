"""Template helpers of the compare pages: signed byte deltas, p-values, the diff tree's
data-mining chips."""

from __future__ import annotations

from typing import Any

from django import template
from django.template import Context

from memdash.core.logic.units import format_bytes

register = template.Library()


@register.filter
def signed_bytes(value: float | str | None) -> str:
    """`+1.50 MiB`, `-48 Bytes`, `0 Bytes`: a delta always shows its direction."""
    if value is None or value == "":
        return "–"
    number = float(value)
    return ("+" if number > 0 else "") + format_bytes(number)


@register.filter
def signed(value: float | str | None) -> str:
    if value is None or value == "":
        return "–"
    number = float(value)
    text = f"{number:,.1f}".rstrip("0").rstrip(".")
    if text in ("0", "-0"):  # a change that rounds to nothing has no direction: never "-0"
        return "0"
    return ("+" if number > 0 else "") + text


@register.filter
def pvalue(value: float | None) -> str:
    """A p-value in a table cell: `0.023`, `< 0.001`."""
    if value is None:
        return "–"
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


@register.filter
def p_clause(value: float | None) -> str:
    """A p-value in a sentence: `p = 0.023`, `p < 0.001` (never `p = < 0.001`), `p n/a`."""
    if value is None:
        return "p n/a"
    return "p < 0.001" if value < 0.001 else f"p = {value:.3f}"


@register.filter
def sign_class(value: float | str | None) -> str:
    """`grow` for a positive delta, `shrink` for a negative one (the site's red and green), so
    each delta is coloured by its own sign."""
    if value is None or value == "":
        return ""
    number = float(value)
    return "grow" if number > 0 else "shrink" if number < 0 else ""


@register.filter
def number(value: float | str | None) -> str:
    if value is None:
        return "–"
    return f"{float(value):,.1f}".rstrip("0").rstrip(".")


CHIP_WORDS = {"charge": "Charged to callers", "prune": "Pruned", "remove": "Removed"}


@register.simple_tag(takes_context=True)
def mining_chips(context: Context) -> list[dict[str, Any]]:
    """The diff tree's data-mining rules (`tree_query.rules`), each with the page's URL
    without it (its chip takes it back)."""
    query = context.get("tree_query")
    chips = []
    for rule in getattr(query, "rules", ()):
        params = context["request"].GET.copy()
        params.setlist(
            rule.parameter, [v for v in params.getlist(rule.parameter) if v != rule.name]
        )
        chips.append(
            {
                "text": f"{CHIP_WORDS[rule.action]}: {rule.name}",
                "label": f"Take back: {CHIP_WORDS[rule.action].lower()} {rule.target} {rule.name}",
                "href": "?" + params.urlencode() + "#difftree",
            }
        )
    return chips
