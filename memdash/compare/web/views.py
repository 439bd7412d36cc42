"""Pages of the compare domain: diffs of snapshots and generations, build compare, trends.
The API is in `api.py`."""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import plotly.graph_objects as go
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import render
from rest_framework.exceptions import NotFound, ValidationError

from memdash.allocations.logic.analysis import BASELINE
from memdash.allocations.logic.calltree.mining import RULE_PARAMETERS
from memdash.allocations.models import category_hash
from memdash.allocations.reads.generations import GENERATION_HEADERS, snapshot_generations
from memdash.allocations.reads.snapshots import snapshot_for_user, summary_label
from memdash.compare import writes as services
from memdash.compare.logic.build_rows import (
    BASE_MEDIAN,
    DEFAULT_SORT,
    TARGET_MEDIAN,
    TOTAL_ROW,
    BuildComparison,
    movers,
    sorted_values,
)
from memdash.compare.logic.category_diff import DiffRow, summarize_diff
from memdash.compare.logic.gate import gate_failures, unproven_growth
from memdash.compare.logic.stats import DEFAULT_ALPHA
from memdash.compare.reads import builds as compare_selectors
from memdash.compare.reads import diffs, pickers, refs
from memdash.compare.reads import trends as trend_selectors
from memdash.compare.reads.refs import RefError, Side, SnapshotFilter
from memdash.compare.web.exports import (
    COMPARE_HEADERS,
    DIFF_HEADERS,
    compare_cells,
    diff_cells,
    trend_cells,
    trends_headers,
)
from memdash.compare.web.links import build_compare_url, diff_tree_api_url, side_url
from memdash.compare.web.params import (
    alpha_param,
    compare_sort,
    date_range,
    diff_tree_query,
    page_lifespan,
    parse_limit,
    snapshot_filter,
    trend_axis,
    trend_scale,
)
from memdash.core.logic.charts import bytes_axis, figure_payload, log_bytes_axis
from memdash.core.logic.numbers import whole_number
from memdash.core.logic.units import format_bytes
from memdash.core.models import App
from memdash.core.reads.apps import builds_in_release_order
from memdash.core.web.export import csv_response, csv_table
from memdash.core.web.http import app_or_404, found

LIFESPAN_LABELS = {
    "persistent": "Created & Persistent",
    "transient": "Created & Destroyed",
    "all": "All Allocations",
}
CHART_CATEGORIES = 15
PAGE_ROWS = 2000  # rows of a table on a page
SUMMARY_CARDS = ("Base", "Target", "Delta", "Categories")  # a diff page's cards, by label
# build compare's columns: (sort key, label), every one sortable (`build_rows.SORT_KEYS`)
COMPARE_COLUMNS = [
    ("category", "Category"),
    ("status", "Status"),
    ("base_median", "Base"),
    ("target_median", "Target"),
    ("delta_median", "Δ median"),
    ("delta_mean", "Δ mean"),
    ("delta_count", "Δ #"),
    ("p", "p"),
    ("present", "In snapshots"),
]


def _tree_config(base: Side, target: Side, app: App, query: diffs.DiffTreeQuery) -> dict[str, Any]:
    """What static/js/difftree.js asks the diff call tree API with."""
    return {
        "url": diff_tree_api_url(),
        "base": base.ref,
        "target": target.ref,
        "app": app.pk,
        "lifespan": query.lifespan,
        "filters": {
            **(base.filters.as_json() if base.kind == "build" else {}),
            # by its hash: a name may be of any length, the API's URL must stay short
            "category_hash": str(category_hash(query.category)) if query.category else "",
            "inverted": "1" if query.inverted else "",
            "hide_system": "1" if query.hide_system else "",
            "flatten": "1" if query.flatten else "",
            "search": query.search,
            # the build compare page's α: the tree colours what the rank test finds at it
            "alpha": str(query.alpha) if query.alpha != DEFAULT_ALPHA else "",
            # data mining (`calltree_mining`): the rules as lists, the minimums
            **{p: [r.name for r in query.rules if r.parameter == p] for p in RULE_PARAMETERS},
            "min_bytes": str(query.min_bytes or ""),
            "min_count": str(query.min_count or ""),
        },
    }


def _page_tree_query(request: HttpRequest, alpha: float = DEFAULT_ALPHA) -> diffs.DiffTreeQuery:
    """The diff call tree's options on a page: an unreadable one is a 404; its α is the page's
    (build compare reads it leniently: a bad one is said and 0.05 used)."""
    params = request.GET.copy()
    params.pop("alpha", None)
    try:
        return dataclasses.replace(diff_tree_query(params), alpha=alpha)
    except (ValidationError, NotFound):
        raise Http404("Unknown call-tree option") from None


def _diff_csv(
    table: str, base: Side, target: Side, shown: list[DiffRow], extra: dict[str, Any]
) -> HttpResponseBase:
    """A diff page's tables as CSV: the categories under its search (the default), or the
    generations listed above a generation diff (`table=generations`)."""
    generation = extra["mode"] == "generation"
    name = f"{extra['mode']}-diff-{base.ref}-{target.ref}"
    if table == "generations" and generation:
        rows = (row.csv_cells() for row in extra["generations"])
        return csv_response(f"{name}-generations", GENERATION_HEADERS, rows)
    if table:
        raise Http404("No such table")
    return csv_response(name, DIFF_HEADERS, diff_cells(shown))


def _diff_page(
    request: HttpRequest, app: App, base: Side, target: Side, extra: dict[str, Any]
) -> HttpResponseBase:
    lifespan = page_lifespan(request.GET.get("lifespan"))
    tree_query = _page_tree_query(request)
    rows = diffs.diff_rows(base, target, lifespan)
    query = request.GET.get("q", "")
    shown = [r for r in rows if query.lower() in r.category.lower()] if query else rows
    table = csv_table(request)
    if table is not None:
        return _diff_csv(table, base, target, shown, extra)
    context = {
        "app": app,
        "base": base,
        "target": target,
        "base_url": side_url(base),
        "target_url": side_url(target),
        "rows": shown[:PAGE_ROWS],
        "row_count": len(shown),
        # the cards sum what the table lists: under a search, the matching categories only
        "summary": summarize_diff(shown),
        "summary_labels": {name: summary_label(name, query) for name in SUMMARY_CARDS},
        "lifespan": lifespan,
        "lifespans": LIFESPAN_LABELS,
        "q": query,
        "tree_query": tree_query,
        "tree": _tree_config(base, target, app, tree_query),
        **extra,
    }
    return render(request, "compare/diff.html", context)


@login_required
def generation_diff(request: HttpRequest, app_id: int, snapshot_id: int) -> HttpResponseBase:
    app = app_or_404(request.user, app_id)
    with found():
        snapshot = snapshot_for_user(request.user, snapshot_id)
    if snapshot.app_id != app.pk:
        raise Http404("No such snapshot in this app")
    rows = snapshot_generations(snapshot)  # the baseline, then the marks in order
    marks = [r.index for r in rows if r.index is not None]
    try:
        with found():
            base_index, target_index = pickers.consecutive_generations(
                marks, request.GET.get("base"), request.GET.get("target")
            )
            base = refs.resolve_ref(request.user, f"generation:{snapshot.pk}:{base_index}", app)
            target = refs.resolve_ref(request.user, f"generation:{snapshot.pk}:{target_index}", app)
    except RefError:
        raise Http404("No such generation") from None
    choices = [(BASELINE if r.index is None else r.index, r.name) for r in rows]
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
            "generations": rows[1:],
        },
    )


def _snapshot_side(request: HttpRequest, app: App, snapshot_id: str) -> Side | None:
    if whole_number(snapshot_id) is None:
        return None
    try:
        with found():
            return refs.resolve_ref(request.user, f"snapshot:{snapshot_id}", app)
    except RefError:
        raise Http404("No such snapshot in this app") from None


@login_required
def snapshot_diff(request: HttpRequest, app_id: int) -> HttpResponseBase:
    """Two snapshots chosen: their diff. One of them (a snapshot page's "Compare with another
    snapshot" gives the target): its diff with `pickers.partner_snapshot`, said so on the page
    and changeable in the pickers. Neither, or the same one twice: the pickers only."""
    app = app_or_404(request.user, app_id)
    base = _snapshot_side(request, app, request.GET.get("base", ""))
    target = _snapshot_side(request, app, request.GET.get("target", ""))
    extra: dict[str, Any] = {"mode": "snapshot"}
    if (base is None) != (target is None):
        chosen = base or target
        assert chosen is not None and chosen.snapshot is not None
        partner = pickers.partner_snapshot(chosen.snapshot, before=target is not None)
        if partner is None:
            extra["pick_message"] = (
                "This app has only this snapshot: there is nothing to diff it with yet."
            )
        else:
            with found():
                other = refs.resolve_ref(request.user, f"snapshot:{partner.snapshot.pk}", app)
            base, target = (other, target) if target is not None else (base, other)
            extra["auto_pick"] = {
                "side": "base" if other is base else "target",
                "snapshot": partner.snapshot,
                "reason": partner.reason,
            }
    elif base is not None and target is not None and base.snapshot_ids == target.snapshot_ids:
        extra["pick_message"] = "Base and target are the same snapshot: pick two different ones."
    picked = [side.snapshot for side in (base, target) if side is not None and side.snapshot]
    extra.update(
        snapshot_groups=pickers.by_build(app, pickers.recent_snapshots(app, include=picked)),
        base_choice=base.snapshot_ids[0] if base else None,
        target_choice=target.snapshot_ids[0] if target else None,
    )
    extra["sides"] = [("base", extra["base_choice"]), ("target", extra["target_choice"])]
    if base is None or target is None or "pick_message" in extra:
        return render(request, "compare/diff.html", {"app": app, "pick": True, **extra})
    return _diff_page(request, app, base, target, extra)


def compare_chart(comparison: BuildComparison) -> dict[str, Any]:
    """Median persistent bytes per snapshot of the categories that moved most, in both builds;
    clicking a bar opens that build."""
    top = movers(comparison.values, CHART_CATEGORIES)
    names = [v[0] for v in top]
    fig = go.Figure()
    plotted: list[float] = []
    for build, median in ((comparison.base, BASE_MEDIAN), (comparison.target, TARGET_MEDIAN)):
        medians = [v[median] or 0 for v in top]
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


def _alpha(request: HttpRequest, context: dict[str, Any]) -> float:
    try:
        return alpha_param(request.GET.get("alpha"))
    except ValidationError:
        context["alpha_error"] = "α is a significance level between 0 and 1, like 0.05"
        return DEFAULT_ALPHA


@login_required
def build_compare(request: HttpRequest, app_id: int) -> HttpResponseBase:
    app = app_or_404(request.user, app_id)
    builds = builds_in_release_order(app)
    default_base, default_target = pickers.default_build_pair(app)
    base = refs.build_in_app(app, request.GET.get("base")) or default_base
    target = refs.build_in_app(app, request.GET.get("target")) or default_target
    filters = snapshot_filter(request.GET)
    context: dict[str, Any] = {
        "app": app,
        "builds": builds,
        "filters": filters,
        **compare_selectors.filter_options(app),
        "base": base,
        "target": target,
        "max_growth": request.GET.get("max_growth", ""),
        "alpha_text": request.GET.get("alpha", ""),
    }
    if base is None or target is None:
        return render(request, "compare/build_compare.html", context)
    if base == target:
        # nothing to compare: say so rather than show every category as "same"
        context.update(same_build=True, single_build=default_base == default_target)
        return render(request, "compare/build_compare.html", context)
    alpha = _alpha(request, context)
    try:
        sort, descending = compare_sort(request.GET)
    except ValidationError:
        sort, descending = DEFAULT_SORT, True
    categories = request.GET.getlist("category")
    tree_query = _page_tree_query(request, alpha)
    summaries = services.build_summaries(base, target, filters)
    comparison = compare_selectors.compare_builds(
        base, target, filters, categories, summaries, alpha
    )
    ordered = sorted_values(comparison.values, sort, descending)
    if csv_table(request) is not None:
        name = f"{app.bundle_id}-compare-{base}-{target}"
        return csv_response(name, COMPARE_HEADERS, compare_cells(ordered))
    try:
        limit = parse_limit(request.GET.get("max_growth"))
    except ValidationError:
        limit, context["limit_error"] = None, "max growth is a percentage (5%) or bytes (1MiB)"
    failures = gate_failures(comparison, limit) if limit else None
    context.update(
        comparison=comparison,
        alpha=alpha,
        rows=comparison.row_objects(ordered[:PAGE_ROWS]),
        row_count=len(ordered),
        sort=sort,
        dir="desc" if descending else "asc",
        columns=COMPARE_COLUMNS,
        chart=compare_chart(comparison) if comparison.values else None,
        limit=limit,
        failures=failures,
        unproven=unproven_growth(comparison, limit) if limit else None,
        failed=({f.category for f in failures} if failures else set()),
        categories=categories,
        tree_query=tree_query,
        lifespans=LIFESPAN_LABELS,
        tree=_tree_config(
            refs.build_side(base, filters), refs.build_side(target, filters), app, tree_query
        ),
    )
    return render(request, "compare/build_compare.html", context)


def trends_chart(
    points: list[trend_selectors.TrendPoint], categories: list[str], axis: str, scale: str
) -> dict[str, Any]:
    """Median persistent bytes per snapshot of each build (or capture day), with the
    interquartile range as error bars; clicking a build's point opens the build."""
    by_date = axis == "date"
    x = [p.label for p in points]
    urls = [] if by_date else [p.build.get_absolute_url() for p in points if p.build]
    fig = go.Figure()
    plotted: list[float] = []  # the medians and the ends of their error bars
    series = [(TOTAL_ROW, [p.total for p in points])]
    series += [(name, [p.categories[name] for p in points]) for name in categories]
    for name, spreads in series:
        medians = [s.median or 0 for s in spreads]
        plotted += medians + [s.q1 or 0 for s in spreads] + [s.q3 or 0 for s in spreads]
        fig.add_trace(
            go.Scatter(
                name=name,
                x=x,
                # a log axis cannot draw 0: a gap there, not a point at the bottom
                y=[m or None for m in medians] if scale == "log" else medians,
                mode="lines+markers",
                customdata=urls or None,
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
    y_axis = log_bytes_axis if scale == "log" else bytes_axis
    x_axis = (
        dict(title="capture date", type="date")
        if by_date
        else dict(title="build (release order)", type="category")
    )
    return figure_payload(
        fig,
        xaxis=x_axis,
        yaxis=y_axis(plotted, title="persistent bytes per snapshot"),
        height=420,
    )


def trends_table(
    app: App,
    points: list[trend_selectors.TrendPoint],
    categories: list[str],
    filters: SnapshotFilter,
) -> list[dict[str, Any]]:
    """Rows of the trends table: per build (or day) its series; a build's link to build compare
    of the build with the one before it (a category's to that category's row and diff call
    tree)."""
    rows = []
    for i, point in enumerate(points):
        previous = points[i - 1].build if i else None
        compare_url = (
            build_compare_url(app, previous, point.build, filters)
            if previous and point.build
            else ""
        )
        series = [(TOTAL_ROW, point.total, compare_url)]
        series += [
            (
                name,
                point.categories[name],
                build_compare_url(app, previous, point.build, filters, name)
                if previous and point.build
                else "",
            )
            for name in categories
        ]
        rows.append({"point": point, "series": series, "compare_url": compare_url})
    return rows


@login_required
def trends(request: HttpRequest, app_id: int) -> HttpResponseBase:
    app = app_or_404(request.user, app_id)
    categories = trend_selectors.known_categories(app, request.GET.getlist("category"))
    filters = snapshot_filter(request.GET)
    context: dict[str, Any] = {
        "app": app,
        "categories": categories,
        "all_categories": trend_selectors.top_categories(app),
        "filters": filters,
        **compare_selectors.filter_options(app),
        "axis": request.GET.get("x", ""),
        "scale": request.GET.get("scale", ""),
        "from": request.GET.get("from", ""),
        "to": request.GET.get("to", ""),
    }
    try:
        axis, scale = trend_axis(request.GET), trend_scale(request.GET)
        days = date_range(request.GET)
    except ValidationError as error:
        # the form again with what was wrong; no chart from half-read choices
        detail = cast(dict[str, str], error.detail)  # params raise one message per name
        context["errors"] = [f"{name}: {message}" for name, message in detail.items()]
        return render(request, "compare/trends.html", context, status=400)
    points = trend_selectors.trends(app, categories, filters, axis, days)
    if csv_table(request) is not None:
        return csv_response(
            f"{app.bundle_id}-trends",
            trends_headers(axis),
            trend_cells(points, categories),
        )
    context.update(
        axis=axis,
        scale=scale,
        points=points,
        table=trends_table(app, points, categories, filters),
        chart=trends_chart(points, categories, axis, scale) if points else None,
    )
    return render(request, "compare/trends.html", context)
