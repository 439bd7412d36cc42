"""Pages and JSON of call trees (a snapshot's, a build's) and of a snapshot's generations.

The pages render the frame of the tree only; static/js/calltree.js fetches the children of each
node from the API as it is expanded, so a tree of any size opens at once. A tree too large to build
in a request is built by a task: the API answers 202 with its progress until it is there
(`allocations.reads.calltree.jobs`), and the page shows a progress bar while it asks again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlencode

import plotly.graph_objects as go
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.decorators import api_view
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from memdash.allocations.logic.analysis import LIFESPANS
from memdash.allocations.logic.calltree.per_snapshot import AGGREGATES, MEDIAN
from memdash.allocations.logic.calltree.transform import focus_tree
from memdash.allocations.logic.calltree.tree import CallTree
from memdash.allocations.models import Snapshot
from memdash.allocations.reads import snapshots as selectors
from memdash.allocations.reads.calltree.jobs import InlineBudget, TreeComputing
from memdash.allocations.reads.calltree.made import made_state
from memdash.allocations.reads.calltree.pages import call_tree_page
from memdash.allocations.reads.calltree.query import CallTreeQuery
from memdash.allocations.reads.calltree.trees import (
    TreeUnavailable,
    build_call_tree_for,
    snapshot_call_tree,
)
from memdash.allocations.reads.generations import (
    GenerationRow,
    has_generation,
    snapshot_generations,
)
from memdash.allocations.tasks import read_or_queue
from memdash.allocations.web.params import (
    MAX_MINIMUM,
    MINIMUM_OPENAPI_PARAMETERS,
    RULE_OPENAPI_PARAMETERS,
    parse_rules,
    query_category,
)
from memdash.core.logic.charts import bytes_axis, figure_payload
from memdash.core.logic.units import format_bytes, format_ms
from memdash.core.models import Build
from memdash.core.web.api import PENDING_RESPONSES, page_window, parse_flag, parse_int
from memdash.core.web.http import app_or_404, found
from memdash.core.web.schema import (
    CATEGORY_HASH_PARAMETER,
    STR,
    array,
    error,
    page_parameters,
)
from memdash.snapshots.web.openapi import (
    BUILD_CALLTREE_PAGE,
    CALLTREE_PAGE,
    GENERATION,
    GENERATION_PARAMETER,
    RANGE_PARAMETERS,
)
from memdash.snapshots.web.timeline import page_time_range, parse_time_range
from memdash.snapshots.web.views import (
    LIFESPAN_LABELS,
    parse_generation,
    parse_lifespan,
    snapshot_filters,
)

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
GENERATION_CATEGORIES = 15  # categories listed inline under each generation
MAX_CHARGED = 20  # libraries charged to their callers at once
MAX_SEARCH = 200  # characters of a search
# A tree under a query; `whole`: every node at once (a flame graph, Top Functions); past the
# budget's rows, TreeDeferred (built by a task) rather than built in the request.
TreeSource = Callable[[CallTreeQuery, bool, InlineBudget | None], CallTree]


def parse_calltree_query(params: QueryDict) -> CallTreeQuery:
    """The tree's filters and options from a query string (ValidationError when invalid)."""
    # The limits count what was sent (as the schema states them), before blanks and repeats go.
    if len(params.getlist("charge")) > MAX_CHARGED:
        raise ValidationError({"charge": f"at most {MAX_CHARGED} libraries"})
    charge = tuple(sorted({name for name in params.getlist("charge") if name}))
    search = params.get("search", "")
    if len(search) > MAX_SEARCH:
        raise ValidationError({"search": f"at most {MAX_SEARCH} characters"})
    search = search.strip()
    aggregate = params.get("aggregate") or MEDIAN
    if aggregate not in AGGREGATES:
        raise ValidationError({"aggregate": f"must be one of {', '.join(AGGREGATES)}"})
    return CallTreeQuery(
        category=query_category(params),
        lifespan=parse_lifespan(params.get("lifespan")),
        generation=parse_generation(params.get("generation")),
        inverted=parse_flag(params, "inverted"),
        hide_system=parse_flag(params, "hide_system"),
        by_thread=parse_flag(params, "thread"),
        flatten_recursion=parse_flag(params, "flatten"),
        charge=charge,
        search=search,
        focus=params.get("focus", ""),
        rules=parse_rules(params),
        min_bytes=parse_int(params, "min_bytes", 0, 0, MAX_MINIMUM),
        min_count=parse_int(params, "min_count", 0, 0, MAX_MINIMUM),
        aggregate=aggregate,
    )


def _query_or_404(params: QueryDict) -> CallTreeQuery:
    try:
        return parse_calltree_query(params)
    except (ValidationError, NotFound):
        raise Http404("Unknown call-tree option") from None


def query_tree(source: TreeSource, query: CallTreeQuery, whole: bool = False) -> CallTree:
    """The tree of a query, focused on its `focus` node when it names one (NotFound when that
    node is not in the tree; TreeUnavailable when the rows it needs were pruned; TreeComputing
    while a task builds it)."""
    tree = read_or_queue(lambda budget: source(query, whole, budget))
    if not query.focus:
        return tree
    focused = focus_tree(tree, query.focus)
    if focused is None:
        raise NotFound("no such node to focus on in this call tree")
    return focused


def unavailable(exc: TreeUnavailable) -> Response:
    return Response({"error": str(exc)}, status=status.HTTP_409_CONFLICT)


def computing(exc: TreeComputing, request: Request) -> Response:
    """202 with the tree's progress and its status URL (this request's, asked again) while a
    task builds it (500 when that failed)."""
    url = request.get_full_path()
    state = exc.state
    return Response(state.as_json(url), status=state.http_status, headers=state.headers(url))


def _tree_response(request: Request, source: TreeSource) -> Response:
    params = request.query_params
    query = parse_calltree_query(params)
    offset, limit = page_window(params, DEFAULT_LIMIT, MAX_LIMIT)
    expand = params.get("expand", "")
    if expand not in ("", "heaviest", "matches"):
        raise ValidationError({"expand": "must be `heaviest`, `matches` or empty"})
    try:
        tree = query_tree(source, query)
    except TreeUnavailable as exc:
        return unavailable(exc)
    except TreeComputing as exc:
        return computing(exc, request)
    data = call_tree_page(
        tree, params.get("node") or None, offset, limit, expand == "heaviest",
        search=query.search, expand_matches=expand == "matches",
        open_ids=[i for i in params.get("open", "").split(",") if i],
    )  # fmt: skip
    if data is None:
        raise NotFound("no such node in this call tree")
    return Response(data)


TREE_OPTION_PARAMETERS = [
    OpenApiParameter("category", str, description="a category name; all categories when absent"),
    CATEGORY_HASH_PARAMETER,
    OpenApiParameter("lifespan", str, enum=list(LIFESPANS)),
    GENERATION_PARAMETER,
    OpenApiParameter("inverted", bool, description="Invert Call Tree"),
    OpenApiParameter("hide_system", bool, description="Hide System Libraries"),
    OpenApiParameter("thread", bool, description="Separate by Thread"),
    OpenApiParameter("flatten", bool, description="Flatten Recursion"),
    OpenApiParameter(
        "charge",
        {"type": "array", "items": STR, "maxItems": MAX_CHARGED},
        description="a library (image name) charged to its callers",
    ),
    OpenApiParameter(
        "search",
        {"type": "string", "maxLength": MAX_SEARCH},
        description="Involves Symbol: stacks through a match only",
    ),
    OpenApiParameter("focus", str, description="a node id: its subtree as the tree"),
    *RULE_OPENAPI_PARAMETERS,
    *MINIMUM_OPENAPI_PARAMETERS,
]
# Which of a build's snapshots are read (the Allocations List of a build takes these alone).
SNAPSHOT_FILTER_PARAMETERS = [
    OpenApiParameter("trigger", str, description="only the build's snapshots with this trigger"),
    OpenApiParameter("model", str, description="only the build's snapshots of this device model"),
    OpenApiParameter("os", str, description="only the build's snapshots of this OS"),
]
BUILD_FILTER_PARAMETERS = [
    OpenApiParameter(
        "aggregate",
        str,
        enum=list(AGGREGATES),
        description="each node's median per snapshot over the build's snapshots (the default, "
        "as the build's statistics table and build compare read them), or their sum",
    ),
    *SNAPSHOT_FILTER_PARAMETERS,
]
CALLTREE_PARAMETERS = [
    *TREE_OPTION_PARAMETERS,
    OpenApiParameter("node", str, description="a node id from an earlier answer; roots if absent"),
    *page_parameters(DEFAULT_LIMIT, MAX_LIMIT, "children"),
    OpenApiParameter(
        "expand",
        str,
        enum=["heaviest", "matches"],
        description="with the roots, the heaviest path (or the paths to the search's matches) "
        "opened",
    ),
    OpenApiParameter("open", str, description="node ids (comma-separated) opened with the roots"),
]
# What a tree's JSON answers besides its page: 202 while a task builds it, 500 when that failed,
# 409 when the rows it needs were pruned.
TREE_RESPONSES = {
    **PENDING_RESPONSES,
    409: error(409),
}


@extend_schema(
    summary="Children of a node of a snapshot's call tree",
    parameters=[*CALLTREE_PARAMETERS, *RANGE_PARAMETERS],
    responses={200: CALLTREE_PAGE, **TREE_RESPONSES},
)
@api_view(["GET"])
def api_calltree(request: Request, snapshot_id: int) -> Response:
    with found():
        snapshot = selectors.snapshot_for_user(request.user, snapshot_id)
    return _tree_response(request, snapshot_source(snapshot, request.query_params))


def snapshot_source(snapshot: Snapshot, params: QueryDict) -> TreeSource:
    """The snapshot's tree, of the allocations made in the time range `params` give (if any:
    ValidationError or MissingReference for a bad one)."""
    chosen = parse_time_range(snapshot, params)

    def tree(query: CallTreeQuery, whole: bool, budget: InlineBudget | None) -> CallTree:
        # A generation the snapshot lacks is not there (404, as the page answers), not an
        # empty tree.
        if not has_generation(snapshot, query.generation):
            raise NotFound(f"this snapshot has no generation {query.generation}")
        if chosen is not None:
            query = dataclasses.replace(query, time_range=chosen.span)
        return snapshot_call_tree(snapshot, query, whole, budget=budget)

    return tree


def build_source(build: Build, params: QueryDict) -> TreeSource:
    """The build's tree over the snapshots that the build page's filters in `params` keep."""
    chosen = snapshot_filters(params)
    trigger, model, os = chosen["trigger"], chosen["model"], chosen["os"]

    def tree(query: CallTreeQuery, whole: bool, budget: InlineBudget | None) -> CallTree:
        return build_call_tree_for(build, query, trigger, model, os, budget=budget)

    return tree


@extend_schema(
    summary="Children of a node of a build's call tree (over its snapshots)",
    parameters=[*CALLTREE_PARAMETERS, *BUILD_FILTER_PARAMETERS],
    responses={200: BUILD_CALLTREE_PAGE, **TREE_RESPONSES},
)
@api_view(["GET"])
def api_build_calltree(request: Request, app_id: int, build_id: int) -> Response:
    """The tree's page, with `made_ahead` when read from the tree made ahead (what it was made
    from, and whether that is current)."""
    app = app_or_404(request.user, app_id)
    build = get_object_or_404(Build, pk=build_id, app=app)
    response = _tree_response(request, build_source(build, request.query_params))
    if response.status_code == status.HTTP_200_OK:
        state = made_state(build, parse_calltree_query(request.query_params),
                           **snapshot_filters(request.query_params))  # fmt: skip
        if state is not None:
            response.data["made_ahead"] = state.as_json()
    return response


@extend_schema(
    summary="A snapshot's generations, the allocations before the first mark first",
    responses={200: array(GENERATION)},
)
@api_view(["GET"])
def api_generations(request: Request, snapshot_id: int) -> Response:
    with found():
        snapshot = selectors.snapshot_for_user(request.user, snapshot_id)
    return Response([row.as_json() for row in snapshot_generations(snapshot)])


# --- pages ----------------------------------------------------------------------------------------

SNAPSHOT_URLS = (
    "api_calltree", "api_flame", "api_functions", "functions_csv", "api_sandwich",
    "api_sandwich_csv",
)  # fmt: skip
BUILD_URLS = (
    "api_build_calltree", "api_build_flame", "api_build_functions", "build_functions_csv",
    "api_build_sandwich", "api_build_sandwich_csv",
)  # fmt: skip


def _widget_context(
    request: HttpRequest, query: CallTreeQuery, names: tuple[str, ...], args: list[int]
) -> dict[str, Any]:
    """What the tree widget needs: its query, and the URLs (by name, with `args`) of the tree's
    API, its flame graph, its Top Functions, their CSV, its sandwich and the sandwich's CSV."""
    api, flame, functions, csv, sandwich, sandwich_csv = (
        reverse(f"snapshots:{name}", args=args) for name in names
    )
    return {
        "query": query,
        "api_url": api,
        "flame_url": flame,
        "functions_url": functions,
        "functions_csv_url": csv,
        "sandwich_url": sandwich,
        "sandwich_csv_url": sandwich_csv,
        "lifespans": LIFESPAN_LABELS,
        "generation_value": "" if query.generation is None else str(query.generation),
    }


@login_required
def calltree_page(request: HttpRequest, snapshot_id: int) -> HttpResponse:
    with found():
        snapshot = selectors.snapshot_for_user(request.user, snapshot_id)
    query = _query_or_404(request.GET)
    if not has_generation(snapshot, query.generation):
        raise Http404("No such generation in this snapshot")  # as the statistics page answers
    chosen = page_time_range(snapshot, request.GET)
    context = {
        "app": snapshot.app,
        "snapshot": snapshot,
        "generations": snapshot_generations(snapshot),
        "time_range": chosen,
        # the tree's API, flame graph and Top Functions are asked of the same range
        "fixed_params": urlencode(chosen.query_value) if chosen else "",
        **_widget_context(request, query, SNAPSHOT_URLS, [snapshot.pk]),
    }
    return render(request, "snapshots/calltree.html", context)


@login_required
def build_calltree_page(request: HttpRequest, app_id: int, build_id: int) -> HttpResponse:
    app = app_or_404(request.user, app_id)
    build = get_object_or_404(Build, pk=build_id, app=app)
    query = _query_or_404(request.GET)
    filters = snapshot_filters(request.GET)
    chosen = {name: value for name, value in filters.items() if value}
    fixed = {**chosen, **({"aggregate": query.aggregate} if query.aggregate != MEDIAN else {})}
    context = {
        "app": app,
        "build": build,
        "snapshot_count": selectors.build_snapshots(build, **filters).count(),
        "made_ahead": made_state(build, query, **filters),
        "filters": chosen,
        "per_snapshot": query.aggregate == MEDIAN,
        # the tree's API, flame graph and Top Functions are asked over the same snapshots, and
        # as the same figures (medians per snapshot or sums)
        "fixed_params": urlencode(fixed),
        **_widget_context(request, query, BUILD_URLS, [app.pk, build.pk]),
    }
    return render(request, "snapshots/build_calltree.html", context)


def growth_chart(rows: Sequence[GenerationRow]) -> dict[str, Any]:
    fig = go.Figure(
        go.Bar(
            x=[r.name for r in rows],
            y=[r.growth_bytes for r in rows],
            text=[format_bytes(r.growth_bytes) for r in rows],
            hovertemplate="%{x}: %{text}<extra></extra>",
            marker_color="#9bbcf0",
        )
    )
    return figure_payload(
        fig,
        height=320,
        yaxis=bytes_axis([r.growth_bytes for r in rows], title="growth (persistent bytes)"),
    )


@login_required
def generations_page(request: HttpRequest, snapshot_id: int) -> HttpResponse:
    with found():
        snapshot = selectors.snapshot_for_user(request.user, snapshot_id)
    rows = snapshot_generations(snapshot)
    entries = []
    for row in rows:
        stats = selectors.snapshot_statistics(snapshot, "all", row.query_value)
        entries.append(
            {
                "row": row,
                "time": format_ms(row.at_ms),
                "categories": stats[:GENERATION_CATEGORIES],
                "more_categories": max(0, stats.count() - GENERATION_CATEGORIES),
                "total": stats.summary[0],
            }
        )
    context = {
        "app": snapshot.app,
        "snapshot": snapshot,
        "entries": entries,
        "chart": growth_chart(rows) if len(rows) > 1 else None,
    }
    return render(request, "snapshots/generations.html", context)
