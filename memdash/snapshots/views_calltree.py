"""Pages and JSON of call trees (a snapshot's, a build's) and of a snapshot's generations.

The pages render the frame of the tree only; static/js/calltree.js fetches the children of each
node from the API as it is expanded, so a tree of any size opens at once.
"""

from __future__ import annotations

import plotly.graph_objects as go
from django.contrib.auth.decorators import login_required
from django.http import Http404, QueryDict
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.decorators import api_view
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from memdash.allocations import selectors
from memdash.allocations.analysis import LIFESPANS
from memdash.allocations.calltree_selectors import (
    CallTree,
    CallTreeQuery,
    TreeUnavailable,
    build_call_tree_for,
    call_tree_page,
    snapshot_call_tree,
)
from memdash.allocations.generation_selectors import snapshot_generations
from memdash.core.api import page_window
from memdash.core.charts import bytes_axis, figure_payload
from memdash.core.models import Build
from memdash.core.selectors import app_for_user
from memdash.core.units import format_bytes, format_ms
from memdash.snapshots.views import LIFESPAN_LABELS, parse_generation, parse_lifespan

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
TRUE, FALSE = {"1", "true", "yes", "on"}, {"", "0", "false", "no", "off"}
GENERATION_CATEGORIES = 15  # categories listed inline under each generation


def parse_flag(params: QueryDict, name: str) -> bool:
    value = params.get(name, "").strip().lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise ValidationError({name: "must be 1 or 0 (true/false)"})


def parse_calltree_query(params: QueryDict) -> CallTreeQuery:
    """The tree's filters and options from a query string (ValidationError when invalid)."""
    return CallTreeQuery(
        category=params.get("category", ""),
        lifespan=parse_lifespan(params.get("lifespan")),
        generation=parse_generation(params.get("generation")),
        inverted=parse_flag(params, "inverted"),
        hide_system=parse_flag(params, "hide_system"),
        by_thread=parse_flag(params, "thread"),
    )


def _query_or_404(params: QueryDict) -> CallTreeQuery:
    try:
        return parse_calltree_query(params)
    except ValidationError:
        raise Http404("Unknown call-tree option") from None


def _tree_response(request, tree_for) -> Response:
    params = request.query_params
    query = parse_calltree_query(params)
    offset, limit = page_window(params, DEFAULT_LIMIT, MAX_LIMIT)
    expand = params.get("expand", "")
    if expand not in ("", "heaviest"):
        raise ValidationError({"expand": "must be `heaviest` or empty"})
    try:
        tree: CallTree = tree_for(query)
    except TreeUnavailable as exc:
        return Response({"error": str(exc)}, status=status.HTTP_409_CONFLICT)
    data = call_tree_page(tree, params.get("node") or None, offset, limit, expand == "heaviest")
    if data is None:
        raise NotFound("no such node in this call tree")
    return Response(data)


CALLTREE_PARAMETERS = [
    OpenApiParameter("category", str, description="a category name; all categories when absent"),
    OpenApiParameter("lifespan", str, enum=list(LIFESPANS)),
    OpenApiParameter("generation", str, description="an index, or `baseline`"),
    OpenApiParameter("inverted", bool, description="Invert Call Tree"),
    OpenApiParameter("hide_system", bool, description="Hide System Libraries"),
    OpenApiParameter("thread", bool, description="Separate by Thread"),
    OpenApiParameter("node", str, description="a node id from an earlier answer; roots if absent"),
    OpenApiParameter("offset", int),
    OpenApiParameter("limit", int, description=f"at most {MAX_LIMIT}, default {DEFAULT_LIMIT}"),
    OpenApiParameter(
        "expand", str, enum=["heaviest"], description="with the roots, the heaviest path opened"
    ),
]


@extend_schema(
    summary="Children of a node of a snapshot's call tree", parameters=CALLTREE_PARAMETERS
)
@api_view(["GET"])
def api_calltree(request, snapshot_id: int):
    snapshot = selectors.snapshot_for_user(request.user, snapshot_id)
    return _tree_response(request, lambda query: snapshot_call_tree(snapshot, query))


@extend_schema(
    summary="Children of a node of a build's call tree (over its snapshots)",
    parameters=CALLTREE_PARAMETERS,
)
@api_view(["GET"])
def api_build_calltree(request, app_id: int, build_id: int):
    app = app_for_user(request.user, app_id)
    build = get_object_or_404(Build, pk=build_id, app=app)
    return _tree_response(request, lambda query: build_call_tree_for(build, query))


@extend_schema(summary="A snapshot's generations, the allocations before the first mark first")
@api_view(["GET"])
def api_generations(request, snapshot_id: int):
    snapshot = selectors.snapshot_for_user(request.user, snapshot_id)
    return Response([row.as_json() for row in snapshot_generations(snapshot)])


# --- pages ----------------------------------------------------------------------------------------


def _widget_context(request, query: CallTreeQuery, api_url: str) -> dict:
    return {
        "query": query,
        "api_url": api_url,
        "lifespans": LIFESPAN_LABELS,
        "generation_value": "" if query.generation is None else str(query.generation),
    }


@login_required
def calltree_page(request, snapshot_id: int):
    snapshot = selectors.snapshot_for_user(request.user, snapshot_id)
    query = _query_or_404(request.GET)
    context = {
        "app": snapshot.app,
        "snapshot": snapshot,
        "generations": snapshot_generations(snapshot),
        **_widget_context(request, query, reverse("snapshots:api_calltree", args=[snapshot.pk])),
    }
    return render(request, "snapshots/calltree.html", context)


@login_required
def build_calltree_page(request, app_id: int, build_id: int):
    app = app_for_user(request.user, app_id)
    build = get_object_or_404(Build, pk=build_id, app=app)
    query = _query_or_404(request.GET)
    context = {
        "app": app,
        "build": build,
        "snapshot_count": build.snapshots.count(),
        **_widget_context(
            request, query, reverse("snapshots:api_build_calltree", args=[app.pk, build.pk])
        ),
    }
    return render(request, "snapshots/build_calltree.html", context)


def growth_chart(rows) -> dict:
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
def generations_page(request, snapshot_id: int):
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
