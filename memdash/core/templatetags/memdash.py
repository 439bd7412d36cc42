"""Template helpers: byte formatting as Instruments shows it, charts, the app navigation."""

from __future__ import annotations

from django import template
from django.urls import reverse
from django.utils.html import format_html, json_script

from memdash.core.links import APP_NAV, page_url
from memdash.core.units import format_bytes, format_ms

register = template.Library()

DEFAULT_CHART_HEIGHT = 450  # plotly's own, for a figure that sets none


@register.filter(name="bytes")
def bytes_filter(value) -> str:
    if value is None or value == "":
        return ""
    try:
        return format_bytes(float(value))
    except (TypeError, ValueError):
        return ""


@register.filter
def since_launch(at_ms) -> str:
    """Milliseconds since launch as the generations page shows them: `00:04.000`."""
    if at_ms is None or at_ms == "":
        return ""
    return format_ms(at_ms)


@register.filter
def percent(value, total) -> str:
    return f"{100 * value / total:.1f}%" if total else "–"


@register.simple_tag
def chart(payload: dict, chart_id: str) -> str:
    """A plotly chart: a div, and its figure as JSON in a script tag (json_script escapes it).
    The div keeps the figure's own height before plotly draws it, so the page does not move."""
    height = payload.get("layout", {}).get("height")
    return format_html(
        '<div class="chart" id="{}" data-chart="{}" style="min-height:{}px"></div>{}',
        chart_id,
        f"{chart_id}-data",
        int(height) if height else DEFAULT_CHART_HEIGHT,
        json_script(payload, f"{chart_id}-data"),
    )


@register.inclusion_tag("core/app_nav_links.html")
def app_nav(app, active: str = "") -> dict:
    links = [
        {"url": reverse(name, args=[app.pk]), "label": label, "active": name == active}
        for name, label in APP_NAV
    ]
    return {"app": app, "links": links}


@register.simple_tag(takes_context=True)
def query_with(context, **changes) -> str:
    """The current query string with some parameters changed (for sort links and pages)."""
    params = context["request"].GET.copy()
    for key, value in changes.items():
        if value is None or value == "":
            params.pop(key, None)
        else:
            params[key] = value
    return "?" + params.urlencode()


@register.simple_tag
def page(kind: str, *args: object) -> str:
    """`{% page "snapshot_diff" snapshot.pk %}`: the URL of another floor's page by what it
    shows (`memdash.core.links`)."""
    return page_url(kind, *args)
