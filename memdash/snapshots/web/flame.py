"""A call tree (a snapshot's, a build's, a generation's) as a flame graph and as Top Functions,
under the same options as the tree (`views_calltree.parse_calltree_query`).

Both need every node at once: they are made of the tree built whole and kept in the cache
(`allocations.reads.calltree.products`), by a task when the tree is large, which builds the tree
too if need be (202 with its progress meanwhile, as the tree's API answers); a request only
reads them. The flame graph is pruned to what can be seen (`calltree_flame.prune`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, QueryDict, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.decorators import api_view
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from memdash.allocations.logic.calltree.flame import FLAME_LIMIT, TOP_ORDERS, FunctionRow
from memdash.allocations.logic.calltree.per_snapshot import MEDIAN
from memdash.allocations.logic.calltree.products import (
    FLAME_GRAPH,
    SANDWICH,
    TOP_FUNCTIONS,
    FunctionFields,
    Missing,
    Product,
    TreeProduct,
    sandwich_table,
)
from memdash.allocations.models import Snapshot
from memdash.allocations.reads import snapshots as selectors
from memdash.allocations.reads.calltree.jobs import InlineBudget, TreeComputing
from memdash.allocations.reads.calltree.products import build_product, snapshot_product
from memdash.allocations.reads.calltree.query import CallTreeQuery
from memdash.allocations.reads.calltree.trees import TreeUnavailable
from memdash.allocations.reads.generations import has_generation
from memdash.allocations.reads.timeline import TimeRange
from memdash.allocations.tasks import read_or_queue
from memdash.allocations.web.params import MAX_NAME
from memdash.core.models import Build
from memdash.core.web.api import page_window, parse_int
from memdash.core.web.export import Cell, csv_response
from memdash.core.web.http import app_or_404, found
from memdash.core.web.schema import int_parameter, page_parameters
from memdash.snapshots.web.calltree import (
    BUILD_FILTER_PARAMETERS,
    TREE_OPTION_PARAMETERS,
    TREE_RESPONSES,
    computing,
    parse_calltree_query,
    unavailable,
)
from memdash.snapshots.web.openapi import FLAME, FUNCTIONS, RANGE_PARAMETERS, SANDWICH_SCHEMA
from memdash.snapshots.web.timeline import page_time_range, parse_time_range
from memdash.snapshots.web.views import snapshot_filters

MIN_FLAME_LIMIT = 50
FUNCTIONS_PAGE = 100
FUNCTIONS_MAX_PAGE = 5000
FUNCTION_HEADERS = ["Function", "Image", "Self bytes", "Self count", "Total bytes", "Total count"]

FLAME_PARAMETERS = [
    *TREE_OPTION_PARAMETERS,
    int_parameter(
        "limit", MIN_FLAME_LIMIT, FLAME_LIMIT, f"nodes drawn at most (default {FLAME_LIMIT})"
    ),
]
SANDWICH_CSV = OpenApiResponse(
    OpenApiTypes.STR,
    description="the function, then each caller and callee drawn in the sandwich: Side "
    "(function, caller, callee), Depth from the function, Function, Image, Path from the "
    "function, and Total bytes (Total count for a tree without sizes)",
)
SANDWICH_PARAMETERS = [
    *TREE_OPTION_PARAMETERS,
    OpenApiParameter(
        "function", {"type": "string", "minLength": 1, "maxLength": MAX_NAME}, required=True,
        description="the function (a node's symbol, as the tree names it)",
    ),
    int_parameter(
        "limit", MIN_FLAME_LIMIT, FLAME_LIMIT,
        f"nodes drawn at most on each side (default {FLAME_LIMIT})",
    ),
]  # fmt: skip
FUNCTION_PARAMETERS = [
    *TREE_OPTION_PARAMETERS,
    OpenApiParameter("order", str, enum=list(TOP_ORDERS), description="by self or total bytes"),
    *page_parameters(FUNCTIONS_PAGE, FUNCTIONS_MAX_PAGE, "functions"),
]


# A product (a flame graph, Top Functions) of a tree under a query; past the budget's rows,
# TreeDeferred (made by a task) rather than made in the request.
ProductSource = Callable[[CallTreeQuery, TreeProduct, InlineBudget | None], Product]


def snapshot_products(snapshot: Snapshot, chosen: TimeRange | None) -> ProductSource:
    """The snapshot's products, of the allocations made in the time range `chosen` (if any)."""

    def product(query: CallTreeQuery, wanted: TreeProduct, budget: InlineBudget | None) -> Product:
        if not has_generation(snapshot, query.generation):  # as the tree's API answers
            raise NotFound(f"this snapshot has no generation {query.generation}")
        if chosen is not None:
            query = dataclasses.replace(query, time_range=chosen.span)
        return snapshot_product(snapshot, query, wanted, budget=budget)

    return product


def build_products(build: Build, params: QueryDict) -> ProductSource:
    """The build's products over the snapshots that the build page's filters keep."""
    chosen = snapshot_filters(params)
    trigger, model, os = chosen["trigger"], chosen["model"], chosen["os"]

    def product(query: CallTreeQuery, wanted: TreeProduct, budget: InlineBudget | None) -> Product:
        return build_product(build, query, wanted, trigger, model, os, budget=budget)

    return product


def _made(source: ProductSource, query: CallTreeQuery, product: TreeProduct) -> Product:
    """The product, from the cache or made now (TreeComputing while a task makes it; NotFound
    for a focus that is not in the tree)."""
    made = read_or_queue(
        lambda budget: source(dataclasses.replace(query, focus=""), product, budget)
    )
    if isinstance(made, Missing):
        raise NotFound(made.message)
    return made


def _flame(request: Request, source: ProductSource) -> Response:
    params = request.query_params
    query = parse_calltree_query(params)
    limit = parse_int(params, "limit", FLAME_LIMIT, MIN_FLAME_LIMIT, FLAME_LIMIT)
    try:
        columns = _made(source, query, TreeProduct(FLAME_GRAPH, query.focus, limit, query.search))
    except TreeUnavailable as exc:
        return unavailable(exc)
    except TreeComputing as exc:
        return computing(exc, request)
    return Response(columns)


def _sandwich_of(params: QueryDict, source: ProductSource) -> Product:
    """A function's callers and callees (`calltree_mining.sandwich`), over the tree as called
    with the query's rules (not inverted, not focused, no minimums: the flame graphs prune)."""
    query = parse_calltree_query(params)
    function = params.get("function", "")
    if not function:
        raise ValidationError({"function": "required: the name of a function of the tree"})
    if len(function) > MAX_NAME:
        raise ValidationError({"function": f"at most {MAX_NAME} characters"})
    limit = parse_int(params, "limit", FLAME_LIMIT, MIN_FLAME_LIMIT, FLAME_LIMIT)
    plain = dataclasses.replace(query, inverted=False, focus="", min_bytes=0, min_count=0)
    wanted = TreeProduct(SANDWICH, limit=limit, search=query.search, function=function)
    return _made(source, plain, wanted)


def _sandwich(
    request: Request, source: ProductSource, csv_name: str = ""
) -> Response | StreamingHttpResponse:
    """The sandwich as JSON, or with `csv_name` as a CSV file of that name
    (`calltree_products.sandwich_table`)."""
    try:
        made = _sandwich_of(request.query_params, source)
    except TreeUnavailable as exc:
        return unavailable(exc)
    except TreeComputing as exc:
        return computing(exc, request)
    if not csv_name:
        return Response(made)
    assert isinstance(made, dict)  # what a SANDWICH product is
    headers, rows = sandwich_table(made)
    function = request.query_params.get("function", "")
    return csv_response(f"{csv_name}-sandwich-{function}", headers, rows)


def _functions(source: ProductSource, params: QueryDict) -> list[FunctionFields]:
    """Top Functions under the tree's options. They are the same whether the tree is inverted
    or not: they are worked out on the tree as called (a focus on a node of an inverted tree does
    not apply)."""
    query = parse_calltree_query(params)
    order = params.get("order") or "self"
    if order not in TOP_ORDERS:
        raise ValidationError({"order": f"must be one of {', '.join(TOP_ORDERS)}"})
    # the minimums only fold the lines of a tree or a graph: the functions are all counted
    query = dataclasses.replace(query, min_bytes=0, min_count=0)
    if query.inverted:
        query = dataclasses.replace(query, inverted=False, focus="")
    rows = _made(source, query, TreeProduct(TOP_FUNCTIONS, query.focus, order=order))
    assert isinstance(rows, list)  # what a TOP_FUNCTIONS product is: FunctionRow's fields
    return rows


def _functions_response(request: Request, source: ProductSource) -> Response:
    offset, limit = page_window(request.query_params, FUNCTIONS_PAGE, FUNCTIONS_MAX_PAGE)
    try:
        rows = _functions(source, request.query_params)
    except TreeUnavailable as exc:
        return unavailable(exc)
    except TreeComputing as exc:
        return computing(exc, request)
    return Response(
        {
            "functions": [FunctionRow(*r).as_dict() for r in rows[offset : offset + limit]],
            "total": len(rows),
            "offset": offset,
            "limit": limit,
            "more": max(0, len(rows) - offset - limit),
        }
    )


def _functions_csv(
    name: str, source: ProductSource, params: QueryDict, headers: list[str] = FUNCTION_HEADERS
) -> StreamingHttpResponse | HttpResponse:
    try:
        rows = _functions(source, params)
    except (TreeUnavailable, ValidationError, NotFound) as exc:
        raise Http404(str(exc)) from None
    except TreeComputing as exc:  # a link followed before the tree was built: say so, as text
        state = exc.state
        text = state.as_json().get("error") or (
            f"The call tree is being built ({state.progress:.0%}); download again in a moment."
        )
        response = HttpResponse(text, status=state.http_status, content_type="text/plain")
        for header, value in state.headers().items():
            response[header] = value
        return response

    def cells() -> Iterator[list[Cell]]:
        for fields in rows:
            r = FunctionRow(*fields)
            yield [r.symbol, r.image, r.self_bytes, r.self_count, r.bytes, r.count]

    return csv_response(name, headers, cells())


def _build(request: HttpRequest, app_id: int, build_id: int) -> Build:
    app = app_or_404(request.user, app_id)
    return get_object_or_404(Build, pk=build_id, app=app)


# --- the API ----------------------------------------------------------------------------------


@extend_schema(
    summary="A snapshot's call tree as a flame graph",
    parameters=[*FLAME_PARAMETERS, *RANGE_PARAMETERS],
    responses={200: FLAME, **TREE_RESPONSES},
)
@api_view(["GET"])
def api_flame(request: Request, snapshot_id: int) -> Response:
    with found():
        snapshot = selectors.snapshot_for_user(request.user, snapshot_id)
    return _flame(request, snapshot_products(snapshot, parse_time_range(snapshot, request.GET)))


@extend_schema(
    summary="A build's call tree as a flame graph",
    parameters=[*FLAME_PARAMETERS, *BUILD_FILTER_PARAMETERS],
    responses={200: FLAME, **TREE_RESPONSES},
)
@api_view(["GET"])
def api_build_flame(request: Request, app_id: int, build_id: int) -> Response:
    return _flame(request, build_products(_build(request, app_id, build_id), request.query_params))


@extend_schema(
    summary="Top Functions of a snapshot's call tree",
    parameters=[*FUNCTION_PARAMETERS, *RANGE_PARAMETERS],
    responses={200: FUNCTIONS, **TREE_RESPONSES},
)
@api_view(["GET"])
def api_functions(request: Request, snapshot_id: int) -> Response:
    with found():
        snapshot = selectors.snapshot_for_user(request.user, snapshot_id)
    chosen = parse_time_range(snapshot, request.GET)
    return _functions_response(request, snapshot_products(snapshot, chosen))


@extend_schema(
    summary="Top Functions of a build's call tree",
    parameters=[*FUNCTION_PARAMETERS, *BUILD_FILTER_PARAMETERS],
    responses={200: FUNCTIONS, **TREE_RESPONSES},
)
@api_view(["GET"])
def api_build_functions(request: Request, app_id: int, build_id: int) -> Response:
    build = _build(request, app_id, build_id)
    return _functions_response(request, build_products(build, request.query_params))


@extend_schema(
    summary="A function's callers and callees in a snapshot's call tree (sandwich)",
    parameters=[*SANDWICH_PARAMETERS, *RANGE_PARAMETERS],
    responses={200: SANDWICH_SCHEMA, **TREE_RESPONSES},
)
@api_view(["GET"])
def api_sandwich(request: Request, snapshot_id: int) -> Response | StreamingHttpResponse:
    return _snapshot_sandwich(request, snapshot_id)


@extend_schema(
    summary="A function's callers and callees in a snapshot's call tree, as CSV",
    parameters=[*SANDWICH_PARAMETERS, *RANGE_PARAMETERS],
    responses={(200, "text/csv"): SANDWICH_CSV, **TREE_RESPONSES},
)
@api_view(["GET"])
def api_sandwich_csv(request: Request, snapshot_id: int) -> Response | StreamingHttpResponse:
    return _snapshot_sandwich(request, snapshot_id, f"snapshot-{snapshot_id}")


def _snapshot_sandwich(
    request: Request, snapshot_id: int, csv_name: str = ""
) -> Response | StreamingHttpResponse:
    with found():
        snapshot = selectors.snapshot_for_user(request.user, snapshot_id)
    chosen = parse_time_range(snapshot, request.GET)
    return _sandwich(request, snapshot_products(snapshot, chosen), csv_name)


@extend_schema(
    summary="A function's callers and callees in a build's call tree (sandwich)",
    parameters=[*SANDWICH_PARAMETERS, *BUILD_FILTER_PARAMETERS],
    responses={200: SANDWICH_SCHEMA, **TREE_RESPONSES},
)
@api_view(["GET"])
def api_build_sandwich(
    request: Request, app_id: int, build_id: int
) -> Response | StreamingHttpResponse:
    return _build_sandwich(request, app_id, build_id)


@extend_schema(
    summary="A function's callers and callees in a build's call tree, as CSV",
    parameters=[*SANDWICH_PARAMETERS, *BUILD_FILTER_PARAMETERS],
    responses={(200, "text/csv"): SANDWICH_CSV, **TREE_RESPONSES},
)
@api_view(["GET"])
def api_build_sandwich_csv(
    request: Request, app_id: int, build_id: int
) -> Response | StreamingHttpResponse:
    return _build_sandwich(request, app_id, build_id, csv=True)


def _build_sandwich(
    request: Request, app_id: int, build_id: int, csv: bool = False
) -> Response | StreamingHttpResponse:
    build = _build(request, app_id, build_id)
    source = build_products(build, request.query_params)
    if not csv:
        return _sandwich(request, source)
    per_snapshot = request.query_params.get("aggregate", MEDIAN) == MEDIAN
    name = f"build-{build.version}-{build.number}" + ("-per-snapshot" if per_snapshot else "-sum")
    return _sandwich(request, source, name)


# --- CSV of the Top Functions table -----------------------------------------------------------


@login_required
def functions_csv(request: HttpRequest, snapshot_id: int) -> StreamingHttpResponse | HttpResponse:
    with found():
        snapshot = selectors.snapshot_for_user(request.user, snapshot_id)
    name = f"snapshot-{snapshot.pk}-top-functions"
    chosen = page_time_range(snapshot, request.GET)
    return _functions_csv(name, snapshot_products(snapshot, chosen), request.GET)


@login_required
def build_functions_csv(
    request: HttpRequest, app_id: int, build_id: int
) -> StreamingHttpResponse | HttpResponse:
    build = _build(request, app_id, build_id)
    per_snapshot = request.GET.get("aggregate", MEDIAN) == MEDIAN  # else sum, or refused
    name = f"build-{build.version}-{build.number}-top-functions"
    name += "-per-snapshot" if per_snapshot else "-sum"
    # the figures' columns say what they are, as the build's statistics CSV does
    suffix = " (median per snapshot)" if per_snapshot else " (sum over the snapshots)"
    headers = FUNCTION_HEADERS[:2] + [h + suffix for h in FUNCTION_HEADERS[2:]]
    return _functions_csv(name, build_products(build, request.GET), request.GET, headers)
