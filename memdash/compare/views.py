"""Pages and JSON of the compare domain: diffs, build compare, trends, the CI gate's API."""

from __future__ import annotations

import plotly.graph_objects as go
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import api_view
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from memdash.allocations.selectors import BASELINE, snapshot_for_user
from memdash.compare import selectors
from memdash.compare.selectors import DEFAULT_DIFF_LIFESPAN, DIFF_LIFESPANS, RefError
from memdash.compare.stats import DEFAULT_MAX_GROWTH, GrowthLimit, parse_growth_limit
from memdash.core.api import page_fields, page_window
from memdash.core.charts import bytes_axis, figure_payload
from memdash.core.numbers import whole_number
from memdash.core.selectors import app_for_user, builds_in_release_order
from memdash.core.units import format_bytes

LIFESPAN_LABELS = {
    "persistent": "Created & Persistent",
    "transient": "Created & Destroyed",
    "all": "All Allocations",
}
TREE_PAGE = 100
TREE_MAX_PAGE = 1000
COMPARE_PAGE = 500  # categories per answer unless `limit` says otherwise
COMPARE_MAX_PAGE = 10_000
CHART_CATEGORIES = 15


# ---- parsing ------------------------------------------------------------------------------------


def parse_diff_lifespan(value: str | None) -> str:
    value = value or DEFAULT_DIFF_LIFESPAN
    if value not in DIFF_LIFESPANS:
        raise ValidationError({"lifespan": f"must be one of {', '.join(DIFF_LIFESPANS)}"})
    return value


def parse_limit(value: str | None) -> GrowthLimit | None:
    if value in (None, ""):
        return None
    try:
        return parse_growth_limit(value)
    except ValueError as error:
        raise ValidationError({"max_growth": str(error)}) from None


def parse_min_delta(value: str | None) -> int:
    if value in (None, ""):
        return 0
    try:
        limit = parse_growth_limit(value)
    except ValueError:
        limit = None
    if limit is None or limit.bytes is None or limit.bytes > 2**63 - 1:
        raise ValidationError({"min_delta": "must be bytes below 2^63, like 4096 or 64KiB"})
    return limit.bytes


def _filters(params) -> selectors.SnapshotFilter:
    return selectors.SnapshotFilter(
        trigger=params.get("trigger", ""), model=params.get("model", ""), os=params.get("os", "")
    )


def _ref_error(name: str, error: RefError) -> ValidationError:
    return ValidationError({name: str(error)})


def _sides(request) -> tuple[selectors.Side, selectors.Side]:
    params = request.query_params
    base, target = params.get("base"), params.get("target")
    missing = {k: "required" for k, v in (("base", base), ("target", target)) if not v}
    if missing:
        raise ValidationError(missing)
    try:
        return selectors.resolve_pair(
            request.user, base, target, params.get("app"), _filters(params)
        )
    except RefError as error:
        raise _ref_error("ref", error) from None


# ---- JSON ---------------------------------------------------------------------------------------

REF_HELP = (
    "snapshot:<id>, generation:<snapshot id>:<index> (index `baseline` or empty: before the "
    "first mark) or build:<version>:<number> (needs app)"
)

FILTER_PARAMETERS = [
    OpenApiParameter(name, str, description=f"build refs: only snapshots with this {what}")
    for name, what in (("trigger", "trigger"), ("model", "device model"), ("os", "OS"))
]


@extend_schema(
    summary="Diff of two category tables (snapshots, generations or builds)",
    parameters=[
        OpenApiParameter("base", str, required=True, description=REF_HELP),
        OpenApiParameter("target", str, required=True, description=REF_HELP),
        OpenApiParameter("lifespan", str, enum=list(DIFF_LIFESPANS)),
        OpenApiParameter("app", int, description="the app (required for build refs)"),
        *FILTER_PARAMETERS,
    ],
)
@api_view(["GET"])
def api_diff(request):
    lifespan = parse_diff_lifespan(request.query_params.get("lifespan"))
    base, target = _sides(request)
    return Response(selectors.diff_json(base, target, lifespan))


@extend_schema(
    summary="Children of a node of the diff call tree, largest change first",
    parameters=[
        OpenApiParameter("base", str, required=True, description=REF_HELP),
        OpenApiParameter("target", str, required=True, description=REF_HELP),
        OpenApiParameter(
            "node", str, description="a node id from a previous answer; roots if absent"
        ),
        OpenApiParameter("lifespan", str, enum=list(DIFF_LIFESPANS)),
        OpenApiParameter("app", int),
        *FILTER_PARAMETERS,
        OpenApiParameter("offset", int),
        OpenApiParameter("limit", int),
    ],
)
@api_view(["GET"])
def api_diff_calltree(request):
    params = request.query_params
    lifespan = parse_diff_lifespan(params.get("lifespan"))
    base, target = _sides(request)
    try:
        node = selectors.parse_node(params.get("node"))
    except RefError as error:
        raise _ref_error("node", error) from None
    offset, limit = page_window(params, TREE_PAGE, TREE_MAX_PAGE)
    return Response(selectors.diff_tree_json(base, target, node, lifespan, offset, limit))


@extend_schema(
    summary="Compare two builds over their snapshots; with max_growth, the CI gate",
    parameters=[
        OpenApiParameter("base", str, required=True, description="<version>:<number>"),
        OpenApiParameter("target", str, required=True, description="<version>:<number>"),
        OpenApiParameter("category", str, many=True),
        OpenApiParameter("max_growth", str, description="`5%` (default) or bytes (`1MiB`)"),
        OpenApiParameter("min_delta", str, description="ignore growth below these bytes"),
        OpenApiParameter("trigger", str),
        OpenApiParameter("model", str),
        OpenApiParameter("os", str),
        OpenApiParameter("offset", int, description="categories to skip (default 0)"),
        OpenApiParameter(
            "limit",
            int,
            description=f"categories (default {COMPARE_PAGE}, at most {COMPARE_MAX_PAGE})",
        ),
    ],
)
@api_view(["GET"])
def api_compare(request, app_id: int):
    app = app_for_user(request.user, app_id)
    params = request.query_params
    builds = {}
    for name in ("base", "target"):
        if not params.get(name):
            raise ValidationError({name: "required: <version>:<number>"})
        try:
            builds[name] = selectors.find_build_spec(app, params[name])
        except RefError as error:
            raise _ref_error(name, error) from None
    limit = parse_limit(params.get("max_growth") or DEFAULT_MAX_GROWTH)
    min_delta = parse_min_delta(params.get("min_delta"))
    filters = _filters(params)
    offset, page = page_window(params, COMPARE_PAGE, COMPARE_MAX_PAGE)
    answer = selectors.comparison_answer(
        builds["base"],
        builds["target"],
        filters,
        params.getlist("category"),
        limit,
        min_delta,
        window=slice(offset, offset + page),
    )
    answer.update(page_fields(request, offset, page, answer["count"]))
    return Response(answer)


# ---- pages --------------------------------------------------------------------------------------


def _page_lifespan(request) -> str:
    try:
        return parse_diff_lifespan(request.GET.get("lifespan"))
    except ValidationError:
        raise Http404("Unknown lifespan") from None


def _diff_page(request, app, base: selectors.Side, target: selectors.Side, extra: dict):
    lifespan = _page_lifespan(request)
    rows = selectors.diff_rows(base, target, lifespan)
    query = request.GET.get("q", "")
    shown = [r for r in rows if query.lower() in r.category.lower()] if query else rows
    context = {
        "app": app,
        "base": base,
        "target": target,
        "rows": shown[:2000],
        "row_count": len(shown),
        "summary": selectors.summarize_diff(rows),
        "lifespan": lifespan,
        "lifespans": LIFESPAN_LABELS,
        "q": query,
        "tree": {
            "url": reverse("compare:api_diff_calltree"),
            "base": base.ref,
            "target": target.ref,
            "app": app.pk,
            "lifespan": lifespan,
        },
        **extra,
    }
    return render(request, "compare/diff.html", context)


@login_required
def generation_diff(request, app_id: int, snapshot_id: int):
    app = app_for_user(request.user, app_id)
    snapshot = snapshot_for_user(request.user, snapshot_id)
    if snapshot.app_id != app.pk:
        raise Http404("No such snapshot in this app")
    try:
        base_index, target_index = selectors.consecutive_generations(
            snapshot, request.GET.get("base"), request.GET.get("target")
        )
        base = selectors.resolve_ref(request.user, f"generation:{snapshot.pk}:{base_index}", app)
        target = selectors.resolve_ref(
            request.user, f"generation:{snapshot.pk}:{target_index}", app
        )
    except RefError:
        raise Http404("No such generation") from None
    generations = selectors.generations_of(snapshot)
    choices = [(BASELINE, "Before first mark")] + [
        (g.index, g.name or f"Generation {g.index}") for g in generations
    ]
    return _diff_page(
        request,
        app,
        base,
        target,
        {
            "mode": "generation",
            "snapshot": snapshot,
            "choices": choices,
            "base_choice": base_index,
            "target_choice": target_index,
            "generations": generations,
        },
    )


def _snapshot_side(request, app, snapshot_id: str) -> selectors.Side | None:
    if whole_number(snapshot_id) is None:
        return None
    try:
        return selectors.resolve_ref(request.user, f"snapshot:{snapshot_id}", app)
    except RefError:
        raise Http404("No such snapshot in this app") from None


@login_required
def snapshot_diff(request, app_id: int):
    """Two snapshots chosen: their diff. One of them (a snapshot page's "Compare with another
    snapshot" gives the target): its diff with `selectors.partner_snapshot`, said so on the page
    and changeable in the pickers. Neither, or the same one twice: the pickers only."""
    app = app_for_user(request.user, app_id)
    base = _snapshot_side(request, app, request.GET.get("base", ""))
    target = _snapshot_side(request, app, request.GET.get("target", ""))
    extra = {"mode": "snapshot"}
    if (base is None) != (target is None):
        chosen = base or target
        partner = selectors.partner_snapshot(chosen.snapshot, before=target is not None)
        if partner is None:
            extra["pick_message"] = (
                "This app has only this snapshot: there is nothing to diff it with yet."
            )
        else:
            other = selectors.resolve_ref(request.user, f"snapshot:{partner.snapshot.pk}", app)
            base, target = (other, target) if target is not None else (base, other)
            extra["auto_pick"] = {
                "side": "base" if other is base else "target",
                "snapshot": partner.snapshot,
                "reason": partner.reason,
            }
    elif base is not None and base.snapshot.pk == target.snapshot.pk:
        extra["pick_message"] = "Base and target are the same snapshot: pick two different ones."
    chosen = [side.snapshot for side in (base, target) if side is not None]
    extra.update(
        snapshots=selectors.recent_snapshots(app, include=chosen),
        base_choice=base.snapshot.pk if base else None,
        target_choice=target.snapshot.pk if target else None,
    )
    if base is None or target is None or "pick_message" in extra:
        return render(request, "compare/diff.html", {"app": app, "pick": True, **extra})
    return _diff_page(request, app, base, target, extra)


def compare_chart(comparison: selectors.BuildComparison) -> dict:
    """Median persistent bytes per snapshot of the categories that moved most, in both builds;
    clicking a bar opens that build."""

    def change(row) -> float:
        return abs(row.bytes.delta_median or 0) or abs(row.delta_mean_bytes)

    moved = [r for r in comparison.rows if change(r)] or comparison.rows
    movers = sorted(moved, key=lambda r: -change(r))[:CHART_CATEGORIES]
    names = [r.category for r in movers]
    fig = go.Figure()
    plotted: list[float] = []
    for build, side in ((comparison.base, "base"), (comparison.target, "target")):
        medians = [getattr(r.bytes, side).median or 0 for r in movers]
        plotted += medians
        fig.add_trace(
            go.Bar(
                name=f"{build} (median)",
                x=names,
                y=medians,
                hovertext=[format_bytes(v) for v in medians],
                customdata=[build.get_absolute_url()] * len(names),
                hovertemplate="%{x}: %{hovertext}<extra>%{fullData.name}</extra>",
            )
        )
    return figure_payload(
        fig,
        barmode="group",
        yaxis=bytes_axis(plotted, title="persistent bytes per snapshot"),
        height=360,
    )


@login_required
def build_compare(request, app_id: int):
    app = app_for_user(request.user, app_id)
    builds = builds_in_release_order(app)
    default_base, default_target = selectors.default_build_pair(app)
    base = selectors.build_in_app(app, request.GET.get("base")) or default_base
    target = selectors.build_in_app(app, request.GET.get("target")) or default_target
    filters = _filters(request.GET)
    context = {
        "app": app,
        "builds": builds,
        "filters": filters,
        **selectors.filter_options(app),
        "base": base,
        "target": target,
        "max_growth": request.GET.get("max_growth", ""),
    }
    if base is None or target is None:
        return render(request, "compare/build_compare.html", context)
    if base == target:
        # nothing to compare: say so rather than show every category as "same"
        context.update(same_build=True, single_build=default_base == default_target)
        return render(request, "compare/build_compare.html", context)
    categories = request.GET.getlist("category")
    comparison = selectors.compare_builds(base, target, filters, categories)
    try:
        limit = parse_limit(request.GET.get("max_growth"))
    except ValidationError:
        limit, context["limit_error"] = None, "max growth is a percentage (5%) or bytes (1MiB)"
    failures = selectors.gate_failures(comparison, limit) if limit else None
    context.update(
        comparison=comparison,
        rows=comparison.rows[:2000],
        chart=compare_chart(comparison) if comparison.rows else None,
        limit=limit,
        failures=failures,
        failed=({f.category for f in failures} if failures else set()),
        categories=categories,
        tree={
            "url": reverse("compare:api_diff_calltree"),
            "base": selectors.build_side(base).ref,
            "target": selectors.build_side(target).ref,
            "app": app.pk,
            "lifespan": "persistent",
            "filters": filters.as_json(),
        },
    )
    return render(request, "compare/build_compare.html", context)


def trends_chart(points: list[selectors.TrendPoint], categories: list[str]) -> dict:
    """Median persistent bytes per snapshot of each build, with the interquartile range as error
    bars; clicking a point opens the build."""
    x = [str(p.build) for p in points]
    urls = [p.build.get_absolute_url() for p in points]
    fig = go.Figure()
    plotted: list[float] = []  # the medians and the ends of their error bars
    series = [("All Heap & Anonymous VM", [p.total for p in points])]
    series += [(name, [p.categories[name] for p in points]) for name in categories]
    for name, spreads in series:
        medians = [s.median or 0 for s in spreads]
        plotted += medians + [s.q1 or 0 for s in spreads] + [s.q3 or 0 for s in spreads]
        fig.add_trace(
            go.Scatter(
                name=name,
                x=x,
                y=medians,
                mode="lines+markers",
                customdata=urls,
                text=[
                    f"median {format_bytes(s.median or 0)}, IQR {format_bytes(s.q1 or 0)}"
                    f" – {format_bytes(s.q3 or 0)}, {s.n} snapshots"
                    for s in spreads
                ],
                hovertemplate="%{x}: %{text}<extra>%{fullData.name}</extra>",
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=[(s.q3 or 0) - (s.median or 0) for s in spreads],
                    arrayminus=[(s.median or 0) - (s.q1 or 0) for s in spreads],
                ),
            )
        )
    return figure_payload(
        fig, yaxis=bytes_axis(plotted, title="persistent bytes per snapshot"), height=420
    )


def trends_table(app, points: list[selectors.TrendPoint], categories: list[str]) -> list[dict]:
    """Rows of the trends table: per build its series, and a link comparing it with the build
    before it."""
    rows = []
    for i, point in enumerate(points):
        series = [(selectors.TOTAL_ROW, point.total)]
        series += [(name, point.categories[name]) for name in categories]
        previous = points[i - 1].build if i else None
        rows.append(
            {
                "point": point,
                "series": series,
                "compare_url": selectors.compare_url(app, previous, point.build)
                if previous
                else "",
            }
        )
    return rows


@login_required
def trends(request, app_id: int):
    app = app_for_user(request.user, app_id)
    categories = selectors.known_categories(app, request.GET.getlist("category"))
    filters = _filters(request.GET)
    points = selectors.trends(app, categories, filters)
    return render(
        request,
        "compare/trends.html",
        {
            "app": app,
            "points": points,
            "table": trends_table(app, points, categories),
            "categories": categories,
            "all_categories": selectors.top_categories(app),
            "filters": filters,
            **selectors.filter_options(app),
            "chart": trends_chart(points, categories) if points else None,
        },
    )
