"""Pages and JSON of the snapshots domain: builds, a build, a snapshot's statistics table."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import msgspec
import orjson
import plotly.graph_objects as go
from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, QueryDict
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, render
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import api_view
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from memdash.allocations import tasks as allocation_tasks
from memdash.allocations.logic.analysis import LIFESPANS, generation_index
from memdash.allocations.models import Snapshot
from memdash.allocations.reads import (
    builds as build_selectors,
)
from memdash.allocations.reads import (
    names as symbol_selectors,
)
from memdash.allocations.reads import (
    snapshots as selectors,
)
from memdash.allocations.reads.generations import has_generation
from memdash.allocations.reads.timeline import RangeStatisticsTable, TimeRange
from memdash.core.logic.charts import bytes_axis, figure_payload
from memdash.core.logic.units import format_bytes
from memdash.core.models import Build, natural_key
from memdash.core.web.api import page_fields, page_window
from memdash.core.web.export import csv_table
from memdash.core.web.http import app_or_404, found
from memdash.core.web.schema import array, page_parameters
from memdash.snapshots.web.export import (
    build_list_csv,
    build_statistics_csv,
    snapshot_list_csv,
    statistics_csv,
)
from memdash.snapshots.web.openapi import (
    BUILD,
    BUILD_STATISTICS,
    GENERATION_PARAMETER,
    RANGE_PARAMETERS,
    SNAPSHOT,
    STATISTICS,
)
from memdash.snapshots.web.timeline import page_time_range, parse_time_range, timeline_context

LIFESPAN_LABELS = {
    "all": "All Allocations",
    "persistent": "Created & Persistent",
    "transient": "Created & Destroyed",
}
PAGE_SIZE = 200
# A statistics table as the page and the API read it (len, slices of rows, summary rows)
type AnyStatisticsTable = (
    selectors.StatisticsTable | build_selectors.BuildStatisticsTable | RangeStatisticsTable
)


def parse_lifespan(value: str | None) -> str:
    value = value or "all"
    if value not in LIFESPANS:
        raise ValidationError({"lifespan": f"must be one of {', '.join(LIFESPANS)}"})
    return value


def parse_generation(value: str | None) -> int | str | None:
    """None for the whole snapshot, BASELINE for before the first mark, else an index."""
    if value in (None, ""):
        return None
    generation = generation_index(value)
    if generation is None:
        raise ValidationError({"generation": "must be a generation index or `baseline`"})
    return generation


def _lifespan_or_404(value: str | None) -> str:
    try:
        return parse_lifespan(value)
    except ValidationError:
        raise Http404("Unknown lifespan") from None


def trend_chart(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Median persistent bytes of each build's snapshots, clickable through to the build."""
    fig = go.Figure(
        go.Scatter(
            x=[str(r["build"]) for r in rows],
            y=[r["median_persistent_bytes"] for r in rows],
            customdata=[r["build"].get_absolute_url() for r in rows],
            text=[format_bytes(r["median_persistent_bytes"]) for r in rows],
            hovertemplate="%{x}: %{text}<extra></extra>",
            mode="lines+markers",
        )
    )
    return figure_payload(
        fig,
        height=220,
        yaxis=bytes_axis(
            [r["median_persistent_bytes"] for r in rows], title="persistent bytes (median)"
        ),
    )


@login_required
def app_detail(request: HttpRequest, app_id: int) -> HttpResponseBase:
    app = app_or_404(request.user, app_id)
    rows = selectors.build_rows(app)
    if csv_table(request) is not None:
        return build_list_csv(f"{app.bundle_id}-builds", reversed(rows))  # newest first
    # A build without snapshots has no median to plot (not 0 bytes): the chart leaves it out.
    charted = [row for row in rows if row["build"].snapshot_count]
    return render(
        request,
        "snapshots/app_detail.html",
        {
            "app": app,
            "rows": list(reversed(rows)),
            "chart": trend_chart(charted) if charted else None,
        },
    )


def _table_options(request: HttpRequest) -> dict[str, Any]:
    """The search and sort of a statistics table, from the query string."""
    return {
        "search": request.GET.get("q", ""),
        "sort": request.GET.get("sort", "total_bytes"),
        "descending": request.GET.get("dir", "desc") != "asc",
    }


def _table_context(
    request: HttpRequest,
    table: AnyStatisticsTable,
    lifespan: str,
) -> dict[str, Any]:
    """Search, sort and paging of a statistics table, done by the database (10,000 categories
    stay fast: one page is read)."""
    options = _table_options(request)
    sort = options["sort"]
    return {
        "summary": table.summary,
        # Paginator only takes len() and slices of the table, which is all StatisticsTable offers.
        "page": Paginator(table, PAGE_SIZE).get_page(request.GET.get("page")),  # type: ignore[arg-type]
        "lifespan": lifespan,
        "lifespans": LIFESPAN_LABELS,
        "sort": sort,
        "dir": "desc" if options["descending"] else "asc",
        "q": options["search"],
        "columns": [
            ("category", "Category"),
            ("persistent_bytes", "Persistent Bytes"),
            ("persistent", "# Persistent"),
            ("transient", "# Transient"),
            ("total_bytes", "Total Bytes"),
            ("total", "# Total"),
        ],  # fmt: skip
    }


def snapshot_filters(params: QueryDict) -> dict[str, str]:
    """The build page's snapshot filters (trigger, device model, OS) from a query string."""
    return {name: params.get(name, "") for name in ("trigger", "model", "os")}


@login_required
def build_detail(request: HttpRequest, app_id: int, build_id: int) -> HttpResponseBase:
    """A build: its snapshots and its statistics per snapshot, both over the snapshots the
    filters keep."""
    app = app_or_404(request.user, app_id)
    build = get_object_or_404(Build, pk=build_id, app=app)
    lifespan = _lifespan_or_404(request.GET.get("lifespan"))
    filters = snapshot_filters(request.GET)
    snapshots = selectors.build_snapshots(build, **filters)
    stats = build_selectors.build_statistics(
        build, snapshots, lifespan, **_table_options(request), filters=filters
    )
    table = csv_table(request)
    name = f"build-{build.version}-{build.number}"
    if table == "snapshots":
        return snapshot_list_csv(f"{name}-snapshots", snapshots)
    if table:
        raise Http404("No such table")
    if table is not None:
        return build_statistics_csv(f"{name}-statistics", stats)
    all_snapshots = build.snapshots.all()
    count = all_snapshots.count()
    context = {
        "app": app,
        "build": build,
        "previous_build": selectors.previous_build_with_snapshots(build),
        # the call tree, its flame graph and Top Functions over the same snapshots as the table
        "tree_filters": urlencode({name: value for name, value in filters.items() if value}),
        "snapshots": Paginator(snapshots, 100).get_page(request.GET.get("spage")),
        "snapshot_count": count,
        "chosen_count": stats.snapshot_count,
        "filtered": any(filters.values()),
        # each filter's values: distinct in the database (a build may have 10,000 snapshots)
        "models": sorted(set(_distinct(all_snapshots, "device_model")) - {""}),
        "oses": sorted(set(_distinct(all_snapshots, "os")) - {""}, key=natural_key),
        "triggers": sorted(_distinct(all_snapshots, "trigger")),
        **_table_context(request, stats, lifespan),
        "stale_table": stats.stale,
    }
    _refresh_if_out_of_date(stats)
    return render(request, "snapshots/build_detail.html", context)


def _distinct(snapshots: QuerySet[Snapshot], field: str) -> list[str]:
    return list(snapshots.order_by().values_list(field, flat=True).distinct())


def _refresh_if_out_of_date(table: build_selectors.BuildStatisticsTable) -> None:
    """Queue the making of the build's tables when the one read was not made from the snapshots
    it shows (the summary rows are read first: that is when it is known)."""
    table.summary  # noqa: B018 (reads the table, made ahead or not)
    if table.out_of_date:
        allocation_tasks.queue_build_tables(table.build.pk)


@login_required
def snapshot_detail(request: HttpRequest, snapshot_id: int) -> HttpResponseBase:
    with found():
        snapshot = selectors.snapshot_for_user(request.user, snapshot_id)
    lifespan = _lifespan_or_404(request.GET.get("lifespan"))
    try:
        generation = parse_generation(request.GET.get("generation"))
    except ValidationError:
        raise Http404("Unknown generation") from None
    if not has_generation(snapshot, generation):
        raise Http404("No such generation in this snapshot")  # as the generation diff answers
    chosen = page_time_range(snapshot, request.GET)
    try:
        timeline = timeline_context(snapshot, request.GET, chosen)
    except ValidationError as error:
        raise BadRequest(str(error.detail)) from None
    stats = statistics_of(snapshot, lifespan, generation, chosen, _table_options(request))
    with_callers = generation is None and chosen is None
    if csv_table(request) is not None:
        return statistics_csv(f"snapshot-{snapshot.pk}-statistics", stats, with_callers)
    context = {
        "app": snapshot.app,
        "snapshot": snapshot,
        "generation": generation,
        "generations": snapshot.generations.order_by("index"),  # no join for the default
        "symbols": symbol_selectors.snapshot_status(snapshot),
        "tool_figures": tool_figure_rows(snapshot),
        "show_callers": with_callers,
        "range_query": urlencode(chosen.query_value) if chosen else "",
        **timeline,
        **_table_context(request, stats, lifespan),
    }
    return render(request, "snapshots/snapshot_detail.html", context)


def statistics_of(
    snapshot: Snapshot,
    lifespan: str,
    generation: int | str | None,
    chosen: TimeRange | None,
    options: dict[str, Any],
) -> selectors.StatisticsTable | RangeStatisticsTable:
    """A snapshot's statistics table: of the allocations made in a time range when one is
    chosen (summed from its rows by bucket), else the stored totals."""
    if chosen is not None:
        return RangeStatisticsTable(chosen, lifespan, generation, **options)
    return selectors.snapshot_statistics(snapshot, lifespan, generation, **options)


def tool_figure_rows(snapshot: Snapshot) -> list[dict[str, Any]]:
    """What the producing tool itself reported (heaptrack_print's, ms_print's figures), in the
    tool's order: `[{"label", "value", "unit"}]`, unit `bytes`, `count` or `ms`."""
    figures = sorted(
        (figure.get("order", 0), label, figure) for label, figure in snapshot.tool_figures.items()
    )
    return [
        {"label": label, "value": figure["value"], "unit": figure["unit"]}
        for _order, label, figure in figures
    ]


# --- JSON ---------------------------------------------------------------------------------------


def snapshot_json(snapshot: Snapshot) -> dict[str, Any]:
    return {
        "id": snapshot.pk,
        "app": snapshot.app_id,
        "build": {"version": snapshot.build.version, "number": snapshot.build.number},
        "device": {
            "id": snapshot.device.device_key if snapshot.device else "",
            "model": snapshot.device_model,
            "os": snapshot.os,
        },
        "session": snapshot.session_id,
        "captured_at": snapshot.captured_at.isoformat(),
        "trigger": snapshot.trigger,
        "threads": snapshot.threads,
        "persistent": snapshot.persistent,
        "persistent_bytes": snapshot.persistent_bytes,
        "transient": snapshot.transient,
        "transient_bytes": snapshot.transient_bytes,
        "rows": snapshot.row_count,
        "categories": snapshot.category_count,
        "events": snapshot.event_count,
        "unmatched_frees": snapshot.unmatched_frees,
        "replaced_live_blocks": snapshot.replaced_live_blocks,
        "source_format": snapshot.source_format,
        "tool_figures": tool_figure_rows(snapshot),
        "url": snapshot.get_absolute_url(),
    }


@extend_schema(summary="The builds of an app, in release order", responses={200: array(BUILD)})
@api_view(["GET"])
def api_builds(request: Request, app_id: int) -> Response:
    app = app_or_404(request.user, app_id)
    return Response(
        [
            {
                "id": r["build"].pk,
                "version": r["build"].version,
                "number": r["build"].number,
                "commit": r["build"].commit,
                "snapshots": r["build"].snapshot_count,
                "last_upload": r["build"].last_upload,
                "median_persistent_bytes": r["median_persistent_bytes"],
            }
            for r in selectors.build_rows(app)
        ]
    )


@extend_schema(summary="A snapshot", responses={200: SNAPSHOT})
@api_view(["GET"])
def api_snapshot(request: Request, snapshot_id: int) -> Response:
    with found():
        return Response(snapshot_json(selectors.snapshot_for_user(request.user, snapshot_id)))


STATISTICS_LIMIT = 500  # rows per answer unless `limit` says otherwise
STATISTICS_MAX_LIMIT = 10_000
TABLE_PARAMETERS = [
    OpenApiParameter("lifespan", str, enum=list(LIFESPANS)),
    OpenApiParameter("q", str, description="only categories whose name contains this"),
    OpenApiParameter("sort", str, enum=list(selectors.SORT_COLUMNS)),
    OpenApiParameter("dir", str, enum=["desc", "asc"]),
    *page_parameters(STATISTICS_LIMIT, STATISTICS_MAX_LIMIT),
]


def _api_table_options(request: Request) -> dict[str, Any]:
    params = request.query_params
    sort = params.get("sort") or "total_bytes"
    if sort not in selectors.SORT_COLUMNS:
        raise ValidationError({"sort": f"must be one of {', '.join(selectors.SORT_COLUMNS)}"})
    direction = params.get("dir") or "desc"
    if direction not in ("desc", "asc"):
        raise ValidationError({"dir": "must be desc or asc"})
    return {"search": params.get("q", ""), "sort": sort, "descending": direction == "desc"}


_ROWS_JSON = msgspec.json.Encoder()


def _table_answer(request: Request, table: AnyStatisticsTable) -> dict[str, Any]:
    """One page of a statistics table, with the summary rows of the whole table."""
    offset, limit = page_window(request.query_params, STATISTICS_LIMIT, STATISTICS_MAX_LIMIT)
    rows: list[dict[str, Any]] | orjson.Fragment
    if isinstance(table, selectors.StatisticsTable):
        # A snapshot's rows, encoded straight from their records: 5,000 of them (every
        # category) take a millisecond this way, no row dicts made. msgspec writes the JSON
        # that the renderer's orjson writes for the same dicts, which the renderer then copies
        # as it is. (DRF holds a Response's data in a reference cycle until a full garbage
        # collection; a Fragment is one untracked object.)
        rows = orjson.Fragment(_ROWS_JSON.encode(table.records(slice(offset, offset + limit))))
    else:
        rows = table[offset : offset + limit]
    return {
        "summary": table.summary,
        **page_fields(request, offset, limit, table.count()),
        "rows": rows,
    }


@extend_schema(
    summary="The statistics table of a snapshot, largest categories first, a page at a time",
    parameters=[*TABLE_PARAMETERS, GENERATION_PARAMETER, *RANGE_PARAMETERS],
    responses={200: STATISTICS},
)
@api_view(["GET"])
def api_statistics(request: Request, snapshot_id: int) -> Response:
    with found():
        snapshot = selectors.snapshot_for_user(request.user, snapshot_id)
    lifespan = parse_lifespan(request.query_params.get("lifespan"))
    generation = parse_generation(request.query_params.get("generation"))
    chosen = parse_time_range(snapshot, request.query_params)
    options = _api_table_options(request)
    table = statistics_of(snapshot, lifespan, generation, chosen, options)
    answer = _table_answer(request, table)
    if chosen is not None:  # what the range selects: whole time buckets
        answer["range"] = {"from_ms": chosen.from_ms, "to_ms": chosen.to_ms}
    return Response(answer)


@extend_schema(
    summary="The statistics table of a build per snapshot (median, mean) and summed, a page "
    "at a time",
    parameters=[
        *TABLE_PARAMETERS,
        OpenApiParameter("trigger", str, description="only snapshots with this trigger"),
        OpenApiParameter("model", str, description="only snapshots of this device model"),
        OpenApiParameter("os", str, description="only snapshots of this OS"),
    ],
    responses={200: BUILD_STATISTICS},
)
@api_view(["GET"])
def api_build_statistics(request: Request, app_id: int, build_id: int) -> Response:
    app = app_or_404(request.user, app_id)
    build = get_object_or_404(Build, pk=build_id, app=app)
    lifespan = parse_lifespan(request.query_params.get("lifespan"))
    filters = snapshot_filters(request.query_params)
    snapshots = selectors.build_snapshots(build, **filters)
    table = build_selectors.build_statistics(
        build, snapshots, lifespan, **_api_table_options(request), filters=filters
    )
    data = _table_answer(request, table)
    data["snapshots"] = table.snapshot_count
    data["filters"] = filters
    stale = table.stale
    data["made_at"] = stale.made_at.isoformat() if stale is not None else None
    _refresh_if_out_of_date(table)
    return Response(data)
