"""The compare API: diffs of two sides, their call trees, and build compare with the CI gate."""

from __future__ import annotations

from django.http import QueryDict
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.decorators import api_view
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from memdash.allocations.logic.calltree.flame import FLAME_LIMIT
from memdash.allocations.reads.calltree.jobs import TreeComputing
from memdash.allocations.reads.calltree.trees import TreeUnavailable
from memdash.allocations.tasks import read_or_queue
from memdash.allocations.web.params import MINIMUM_OPENAPI_PARAMETERS, RULE_OPENAPI_PARAMETERS
from memdash.compare import writes as services
from memdash.compare.logic.build_rows import DEFAULT_SORT, SORT_KEYS
from memdash.compare.logic.stats import DEFAULT_MAX_GROWTH
from memdash.compare.reads import builds as build_compare
from memdash.compare.reads import diffs, refs
from memdash.compare.reads.diff_flame import FlameQuery, diff_flame_graph
from memdash.compare.reads.diffs import DIFF_LIFESPANS
from memdash.compare.reads.refs import RefError, Side
from memdash.compare.web import answers
from memdash.compare.web.links import side_json
from memdash.compare.web.openapi import (
    APP_PARAMETER,
    BUILD_SPEC,
    COMPARISON,
    DIFF,
    DIFF_FLAME,
    DIFF_TREE,
    MIN_DELTA,
    OS_RATE_LIMIT,
    SEARCH,
    side_parameters,
)
from memdash.compare.web.params import (
    alpha_param,
    compare_sort,
    diff_tree_query,
    parse_diff_lifespan,
    parse_limit,
    parse_min_delta,
    ref_error,
    snapshot_filter,
)
from memdash.core.models import Build
from memdash.core.web import gates
from memdash.core.web.api import (
    PENDING_RESPONSES,
    MissingReference,
    page_fields,
    page_window,
    parse_int,
)
from memdash.core.web.http import app_or_404, found
from memdash.core.web.schema import (
    CATEGORY_HASH_PARAMETER,
    GROWTH,
    errors,
    int_parameter,
    page_parameters,
)
from memdash.core.web.schema import error as error_response

TREE_PAGE = 100
TREE_MAX_PAGE = 1000
COMPARE_PAGE = 500  # categories per answer unless `limit` says otherwise
COMPARE_MAX_PAGE = 10_000

FILTER_PARAMETERS = [
    OpenApiParameter(name, str, description=f"build refs: only snapshots with this {what}")
    for name, what in (("trigger", "trigger"), ("model", "device model"), ("os", "OS"))
]

# A significance level: strictly between 0 and 1 (0 and 1 are 400s, as the schema says).
ALPHA = {
    "type": "number",
    "minimum": 0,
    "maximum": 1,
    "exclusiveMinimum": True,
    "exclusiveMaximum": True,
}


# The diff tree and flame graph read each snapshot's call tree: 202 while tasks build those too
# large to build in the request, 409 when a side's rows were pruned.
TREE_RESPONSES = {
    200: OpenApiTypes.OBJECT,
    **PENDING_RESPONSES,
    409: error_response(409, "a side's allocation rows were pruned"),
}


def _computing(exc: TreeComputing, request: Request) -> Response:
    """202 with the trees' progress and the status URL (this request's) while tasks build them."""
    url, state = request.get_full_path(), exc.state
    return Response(state.as_json(url), status=state.http_status, headers=state.headers(url))


def _sides(request: Request) -> tuple[Side, Side]:
    params = request.query_params
    base, target = params.get("base"), params.get("target")
    if not base or not target:
        raise ValidationError(
            {k: "required" for k, v in (("base", base), ("target", target)) if not v}
        )
    app_id = params.get("app")
    app = app_or_404(request.user, app_id) if app_id not in (None, "") else None
    try:
        with found():
            return refs.resolve_pair(request.user, base, target, app, snapshot_filter(params))
    except RefError as error:
        raise ref_error("ref", error) from None


@extend_schema(
    summary="Diff of two category tables (snapshots, generations or builds)",
    parameters=[
        *side_parameters(),
        OpenApiParameter("lifespan", str, enum=list(DIFF_LIFESPANS)),
        APP_PARAMETER,
        *FILTER_PARAMETERS,
    ],
    responses={200: DIFF, **errors(404)},
)
@api_view(["GET"])
def api_diff(request: Request) -> Response:
    lifespan = parse_diff_lifespan(request.query_params.get("lifespan"))
    base, target = _sides(request)
    rows = diffs.diff_rows(base, target, lifespan)
    return Response(answers.diff_answer(rows, side_json(base), side_json(target), lifespan))


@extend_schema(
    summary="Children of a node of the diff call tree, largest change first",
    parameters=[
        *side_parameters(),
        OpenApiParameter(
            "node", str, description="a node id from a previous answer; roots if absent"
        ),
        OpenApiParameter("lifespan", str, enum=list(DIFF_LIFESPANS)),
        OpenApiParameter("category", str, description="a category name; all when absent"),
        CATEGORY_HASH_PARAMETER,
        OpenApiParameter("inverted", bool, description="Invert Call Tree"),
        OpenApiParameter("hide_system", bool, description="Hide System Libraries"),
        OpenApiParameter("flatten", bool, description="Flatten Recursion"),
        OpenApiParameter(
            "search",
            SEARCH,
            description="Involves Symbol: stacks through a match (marked `match`)",
        ),
        OpenApiParameter(
            "alpha",
            ALPHA,
            description="significance level of the rank test on each node's bytes per snapshot "
            "(default 0.05): only the changes it finds are grown or shrunk (`significant`)",
        ),
        *RULE_OPENAPI_PARAMETERS,
        *MINIMUM_OPENAPI_PARAMETERS,
        APP_PARAMETER,
        *FILTER_PARAMETERS,
        *page_parameters(TREE_PAGE, TREE_MAX_PAGE, "nodes"),
    ],
    responses={**TREE_RESPONSES, 200: DIFF_TREE, **errors(404)},
)
@api_view(["GET"])
def api_diff_calltree(request: Request) -> Response:
    params = request.query_params
    query = diff_tree_query(params)
    base, target = _sides(request)
    try:
        node = refs.parse_node(params.get("node"))
    except RefError as error:  # no node of any tree: not there, as a node id no side has
        raise MissingReference("node", str(error)) from None
    offset, limit = page_window(params, TREE_PAGE, TREE_MAX_PAGE)
    try:
        page = read_or_queue(
            lambda budget: diffs.diff_tree_page(base, target, node, query, offset, limit, budget)
        )
    except TreeUnavailable as error:
        return Response({"error": str(error)}, status=status.HTTP_409_CONFLICT)
    except TreeComputing as exc:
        return _computing(exc, request)
    return Response(
        answers.tree_answer(page, node, side_json(base), side_json(target), query, offset)
    )


@extend_schema(
    summary="The diff call tree as a flame graph, coloured by change",
    parameters=[
        *side_parameters(),
        OpenApiParameter("lifespan", str, enum=list(DIFF_LIFESPANS)),
        OpenApiParameter("category", str, description="a category name; all when absent"),
        CATEGORY_HASH_PARAMETER,
        OpenApiParameter("inverted", bool, description="Invert Call Tree"),
        OpenApiParameter("hide_system", bool, description="Hide System Libraries"),
        OpenApiParameter("flatten", bool, description="Flatten Recursion"),
        OpenApiParameter("search", SEARCH, description="Involves Symbol: stacks through a match"),
        OpenApiParameter("focus", str, description="a node id: its subtree as the graph"),
        *RULE_OPENAPI_PARAMETERS,
        int_parameter("limit", 50, FLAME_LIMIT, f"nodes drawn at most (default {FLAME_LIMIT})"),
        OpenApiParameter(
            "alpha",
            ALPHA,
            description="significance level of the rank test on each node's bytes per snapshot "
            "(default 0.05): only the changes it finds are grown or shrunk (`significant`)",
        ),
        APP_PARAMETER,
        *FILTER_PARAMETERS,
    ],
    responses={**TREE_RESPONSES, 200: DIFF_FLAME, **errors(404)},
)
@api_view(["GET"])
def api_diff_flame(request: Request) -> Response:
    params = request.query_params
    tree = diff_tree_query(params)
    query = FlameQuery(
        tree=tree,
        search=tree.search,
        focus=params.get("focus", ""),
        limit=parse_int(params, "limit", FLAME_LIMIT, 50, FLAME_LIMIT),
    )
    base, target = _sides(request)
    try:
        data = read_or_queue(lambda budget: diff_flame_graph(base, target, query, budget))
    except TreeUnavailable as error:
        return Response({"error": str(error)}, status=status.HTTP_409_CONFLICT)
    except TreeComputing as exc:
        return _computing(exc, request)
    if data is None:
        raise NotFound("no such node to focus on in either side")
    return Response(data)


@extend_schema(
    summary="Compare two builds over their snapshots; with max_growth, the CI gate",
    parameters=[
        *side_parameters("<version>:<number>", BUILD_SPEC),
        OpenApiParameter("category", str, many=True),
        OpenApiParameter("max_growth", GROWTH, description="`5%` (default) or bytes (`1MiB`)"),
        OpenApiParameter(
            "min_delta", MIN_DELTA, description="ignore growth below these bytes (`64KiB`)"
        ),
        OpenApiParameter(
            "alpha",
            ALPHA,
            description="significance level of the rank test (default 0.05): statuses and gate",
        ),
        OpenApiParameter(
            "max_os_foom_rate",
            OS_RATE_LIMIT,
            description="the gate also judges the OS-reported foreground memory-kill rate "
            "(MetricKit, ApplicationExitInfo), as `memdash_check --max-os-foom-rate`: `band` "
            "fails when the target's is above the base's beyond both 95% Wilson intervals, "
            "`0.5%` when it is above that ceiling. The answer adds `os_foom_rate` "
            "({base, target, judged, failure}); a failure makes `pass` false",
        ),
        OpenApiParameter("sort", str, enum=[DEFAULT_SORT, *SORT_KEYS]),
        OpenApiParameter("dir", str, enum=["desc", "asc"]),
        OpenApiParameter("trigger", str),
        OpenApiParameter("model", str),
        OpenApiParameter("os", str),
        *page_parameters(COMPARE_PAGE, COMPARE_MAX_PAGE, "categories"),
    ],
    responses={200: COMPARISON},
)
@api_view(["GET"])
def api_compare(request: Request, app_id: int) -> Response:
    app = app_or_404(request.user, app_id)
    params = request.query_params
    builds = {}
    for name in ("base", "target"):
        if not params.get(name):
            raise ValidationError({name: "required: <version>:<number>"})
        try:
            with found():  # a build the app does not have: 404, as any id not found
                builds[name] = refs.find_build_spec(app, params[name])
        except RefError as error:
            raise ref_error(name, error) from None
    base, target = builds["base"], builds["target"]
    limit = parse_limit(params.get("max_growth") or DEFAULT_MAX_GROWTH)
    min_delta = parse_min_delta(params.get("min_delta"))
    alpha = alpha_param(params.get("alpha"))
    sort, descending = compare_sort(params)
    filters = snapshot_filter(params)
    offset, page = page_window(params, COMPARE_PAGE, COMPARE_MAX_PAGE)
    categories = params.getlist("category")
    verdicts = _other_checks(params, base, target)
    summaries = services.build_summaries(base, target, filters)
    comparison = build_compare.compare_builds(base, target, filters, categories, summaries, alpha)
    answer = answers.comparison_json(
        comparison, filters, limit, min_delta, slice(offset, offset + page), sort, descending
    )
    for verdict in verdicts:
        answer.update(verdict.answer)
        answer["pass"] = answer.get("pass", True) and not verdict.failures
    answer.update(page_fields(request, offset, page, answer["count"]))
    return Response(answer)


def _other_checks(params: QueryDict, base: Build, target: Build) -> list[gates.GateVerdict]:
    """The gate's checks of other lenses whose parameter the request gives (`core.web.gates`); 400
    under the parameter's name for a value the check cannot read."""
    verdicts = []
    for parameter, check in sorted(gates.checks().items()):
        value = params.get(parameter, "").strip()
        if not value:
            continue
        try:
            verdicts.append(check(base, target, value))
        except ValueError as error:
            raise ValidationError({parameter: str(error)}) from None
    return verdicts
