"""Template helpers: byte formatting as Instruments shows it, charts, the app navigation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from django import template
from django.http import QueryDict
from django.templatetags.static import static
from django.urls import reverse
from django.utils.html import format_html, json_script

from memdash.core.links import APP_NAV, page_url
from memdash.core.logic.units import format_bytes, format_duration, format_ms

if TYPE_CHECKING:
    from django.template import Context

    from memdash.core.models import App, Build

register = template.Library()

DEFAULT_CHART_HEIGHT = 450  # plotly's own, for a figure that sets none
CHARTS_DRAWN = "memdash_charts_drawn"  # set on the request by the chart tag


@register.filter(name="bytes")
def bytes_filter(value: float | str | None) -> str:
    if value is None or value == "":
        return ""
    try:
        return format_bytes(float(value))
    except (TypeError, ValueError):
        return ""


@register.filter
def since_launch(at_ms: int | Literal[""] | None) -> str:
    """Milliseconds since launch as the generations page shows them: `00:04.000`."""
    if at_ms is None or at_ms == "":
        return ""
    return format_ms(at_ms)


@register.filter
def duration(ms: int | float | Literal[""] | None) -> str:
    """Milliseconds as people read a duration: `17 min 41 s`
    (`core.logic.units.format_duration`)."""
    if ms is None or ms == "":
        return ""
    return format_duration(ms)


@register.filter
def percent(value: float, total: float) -> str:
    return f"{100 * value / total:.1f}%" if total else "–"


def chart(payload: dict[str, Any], chart_id: str) -> str:
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


@register.simple_tag(name="chart", takes_context=True)
def chart_tag(context: Context, payload: dict[str, Any], chart_id: str) -> str:
    """`{% chart figure "id" %}`: the chart, and a mark on the request that this page draws one,
    so base.html loads the plotly bundle (`chart_scripts`) on this page and on no other."""
    request = context.get("request")
    if request is not None:
        setattr(request, CHARTS_DRAWN, True)
    return chart(payload, chart_id)


@register.simple_tag(takes_context=True)
def chart_scripts(context: Context) -> str:
    """charts.js and the plotly bundle (4.6 MiB) it runs, only on a page whose content drew a
    chart: base.html places this after the content, which has been rendered by then. The bundle
    is preloaded and run by charts.js once the page is parsed: it does not hold the page up."""
    if not getattr(context.get("request"), CHARTS_DRAWN, False):
        return ""
    plotly = static("vendor/plotly.min.js")
    return format_html(
        '<link rel="preload" href="{}" as="script">\n'
        '  <script type="module" src="{}" data-plotly="{}"></script>',
        plotly,
        static("js/charts.js"),
        plotly,
    )


@register.inclusion_tag("core/app_nav_links.html")
def app_nav(app: App, active: str = "") -> dict[str, Any]:
    links = [
        {"url": reverse(name, args=[app.pk]), "label": label, "active": name == active}
        for name, label in APP_NAV
    ]
    return {"app": app, "links": links}


@register.simple_tag(takes_context=True)
def query_with(context: Context, **changes: Any) -> str:
    """The current query string with some parameters changed (for sort links and pages)."""
    params: QueryDict = context["request"].GET.copy()
    for key, value in changes.items():
        if value is None or value == "":
            params.pop(key, None)
        else:
            params[key] = value
    return "?" + params.urlencode()


@register.simple_tag(takes_context=True)
def query_page(context: Context, param: str, number: int) -> str:
    """`query_with` for a page number whose parameter is named at run time (a page holding two
    lists pages them by `page` and `spage`)."""
    result: str = query_with(context, **{param: number})
    return result


@register.simple_tag
def page(kind: str, *args: object) -> str:
    """`{% page "snapshot_diff" snapshot.pk %}`: the URL of another floor's page by what it
    shows (`memdash.core.links`)."""
    return page_url(kind, *args)


@register.simple_tag(takes_context=True)
def csv_link(context: Context, table: str = "", url: str = "") -> str:
    """`{% csv_link "runs" %}`: a link to this table as CSV, with the page's filters and sort
    (its query string, without the page number: every row). `url` when another page answers."""
    params: QueryDict = context["request"].GET.copy()
    for key in ("page", "spage", "format", "table"):
        params.pop(key, None)
    if not url:
        params["format"] = "csv"
        if table:
            params["table"] = table
    query = params.urlencode()
    return format_html(
        '<a class="csv-link" href="{}" download title="these rows as a CSV file">CSV</a>',
        f"{url}?{query}" if query else url or "?",
    )


@register.filter
def build_link(build: Build | None) -> str:
    """`{{ build|build_link }}`: the build as a link to its page; "—" when there is none."""
    if not build:
        return "—"
    return format_html('<a href="{}" class="build-link">{}</a>', build.get_absolute_url(), build)
