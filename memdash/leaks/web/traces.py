"""Pages of LeakCanary's leaks: an app's clusters (one per signature; library leaks hidden unless
asked, as system cycles are), one cluster with its trace drawn and triage, one analysis."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from memdash.core.auth import AuthenticatedHttpRequest
from memdash.core.logic.charts import occurrences_per_build_figure
from memdash.core.web.export import Cell, csv_response, csv_table
from memdash.core.web.http import app_or_404
from memdash.leaks import reads as selectors
from memdash.leaks.logic.chain import ChainDrawing, ChainObject, draw_chain
from memdash.leaks.models import LeakTraceCluster, LeakTraceOccurrence
from memdash.triage.models import Status
from memdash.triage.web.forms import triage_form_or_redirect, triage_panel_context

PAGE_SIZE = 100
OCCURRENCES_PAGE = 50
STATUS_FILTERS = {
    "unresolved": selectors.OPEN_STATUSES,
    "all": None,
    **{status: [status] for status in Status.values},
}
CLUSTER_HEADERS = [
    "Cluster", "Leak", "Signature", "Library leak", "Regression", "Status", "Assignee",
    "Occurrences", "Leak traces", "Retained bytes", "Devices", "First seen build", "First seen",
    "Last seen build", "Last seen",
]  # fmt: skip
OCCURRENCE_HEADERS = [
    "Captured", "Build", "Device", "OS", "Leak traces", "Retained bytes", "Retained objects",
    "Analysis",
]  # fmt: skip


def cluster_rows(clusters: Iterable[LeakTraceCluster]) -> Iterator[list[Cell]]:
    for c in clusters:
        yield [
            c.pk, c.title, c.signature, c.library, c.regression, c.get_status_display(),
            c.assignee.get_username() if c.assignee else None, c.occurrences, c.traces,
            c.retained_bytes, c.devices,
            str(c.first_seen_build) if c.first_seen_build else None, c.first_seen_at,
            str(c.last_seen_build) if c.last_seen_build else None, c.last_seen_at,
        ]  # fmt: skip


def occurrence_rows(occurrences: Iterable[LeakTraceOccurrence]) -> Iterator[list[Cell]]:
    for o in occurrences:
        yield [
            o.captured_at, str(o.build), o.device.model if o.device else None,
            o.device.os if o.device else None, o.traces, o.retained_bytes, o.retained_objects,
            o.analysis_id,
        ]  # fmt: skip


def chain_of(gc_root: str, trace: list[dict[str, Any]]) -> ChainDrawing | None:
    """The stored trace drawn (as the cycle pages draw a cycle); None for an empty trace."""
    objects = [
        ChainObject(
            cls=str(row.get("class", "")),
            type=str(row.get("type", "")),
            verdict=str(row.get("verdict", "")),
            reference=str(row.get("reference", "")),
            suspect=bool(row.get("suspect")),
        )  # fmt: skip
        for row in trace
    ]
    return draw_chain(gc_root, objects) if objects else None


@login_required
def trace_list(request: HttpRequest, app_id: int) -> HttpResponseBase:
    app = app_or_404(request.user, app_id)
    status = request.GET.get("status", "unresolved")
    if status not in STATUS_FILTERS:
        status = "unresolved"
    sort = request.GET.get("sort", "last_seen")
    if sort not in selectors.TRACE_SORTS:
        sort = "last_seen"
    include_library = request.GET.get("library") == "1"
    clusters = selectors.trace_clusters(app, STATUS_FILTERS[status], include_library, sort)
    table = csv_table(request, "clusters")
    if table == "clusters":
        return csv_response(f"{app.bundle_id}-leakcanary", CLUSTER_HEADERS, cluster_rows(clusters))
    if table is not None:
        raise Http404("No such table")
    context = {
        "app": app,
        "page": Paginator(clusters, PAGE_SIZE).get_page(request.GET.get("page")),
        "status": status,
        "status_filters": list(STATUS_FILTERS),
        "sort": sort,
        "sorts": [(key, key.replace("_", " ")) for key in selectors.TRACE_SORTS],
        "include_library": include_library,
        "library_clusters": selectors.library_trace_clusters(app),
        "by_status": selectors.trace_counts_by_status(app, include_library),
        "analyses": selectors.recent_analyses(app),
    }
    return render(request, "leaks/trace_list.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def trace_detail(
    request: AuthenticatedHttpRequest, app_id: int, cluster_id: int
) -> HttpResponseBase:
    app = app_or_404(request.user, app_id)
    cluster = selectors.trace_cluster_for_app(app, cluster_id)
    if cluster is None:
        raise Http404("No such LeakCanary leak")
    occurrences = selectors.trace_occurrences(cluster)
    if request.method == "GET" and csv_table(request) is not None:
        name = f"{app.bundle_id}-leakcanary-{cluster.pk}-occurrences"
        return csv_response(name, OCCURRENCE_HEADERS, occurrence_rows(occurrences.iterator()))
    triage_form, after_save = triage_form_or_redirect(request, cluster)
    if after_save is not None:
        return after_save
    context = {
        "app": app,
        "cluster": cluster,
        "drawing": chain_of(cluster.gc_root, cluster.trace),
        "chart": occurrences_per_build_figure(selectors.trace_occurrences_per_build(cluster)),
        "occurrences": Paginator(occurrences, OCCURRENCES_PAGE).get_page(request.GET.get("page")),
        **triage_panel_context(cluster, triage_form),
    }
    return render(request, "leaks/trace_detail.html", context, status=400 if triage_form else 200)


@login_required
def trace_analysis(request: HttpRequest, app_id: int, analysis_id: int) -> HttpResponseBase:
    app = app_or_404(request.user, app_id)
    analysis = selectors.analysis_for_app(app, analysis_id)
    if analysis is None:
        raise Http404("No such LeakCanary analysis")
    context = {
        "app": app,
        "analysis": analysis,
        "occurrences": selectors.analysis_occurrences(analysis),
    }
    return render(request, "leaks/trace_analysis.html", context)
