"""Pages of leaks: an app's leak totals per build and its leak groups, one group (with triage),
one report (its totals as the tool stated them, and its records)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from memdash.core.auth import AuthenticatedHttpRequest
from memdash.core.models import App
from memdash.core.web.export import csv_response, csv_table
from memdash.core.web.http import app_or_404
from memdash.leaks import reads as selectors
from memdash.leaks.logic.fingerprint import FINGERPRINT_VERSION
from memdash.leaks.models import LeakGroup, LeakRecord, LeakReport
from memdash.leaks.web import charts
from memdash.leaks.web.exports import (
    BUILD_TOTAL_HEADERS,
    GROUP_HEADERS,
    KIND_HEADERS,
    OCCURRENCE_HEADERS,
    RECORD_HEADERS,
    REPORT_HEADERS,
    SUPPRESSION_HEADERS,
    TOTAL_HEADERS,
    build_total_rows,
    group_rows,
    kind_rows,
    occurrence_rows,
    record_rows,
    report_rows,
    report_total_rows,
    suppression_rows,
)
from memdash.triage.models import Status
from memdash.triage.web.forms import triage_form_or_redirect, triage_panel_context

PAGE_SIZE = 100
# "unresolved" (new or open, the default) and "all", then each status alone.
STATUS_FILTERS = {
    "unresolved": selectors.OPEN_STATUSES,
    "all": None,
    **{status: [status] for status in Status.values},
}


def _list_csv(app: App, table: str, groups: QuerySet[LeakGroup]) -> HttpResponseBase:
    """The leak list's tables: the groups (under the page's filter and sort), the totals per
    build (`table=builds`), the latest reports (`table=reports`)."""
    name = f"{app.bundle_id}-leak"
    if table == "groups":
        return csv_response(f"{name}-groups", GROUP_HEADERS, group_rows(groups))
    if table == "builds":
        totals = selectors.build_totals(app)
        return csv_response(f"{name}s-per-build", BUILD_TOTAL_HEADERS, build_total_rows(totals))
    if table == "reports":
        reports = selectors.recent_reports(app)
        return csv_response(f"{name}-reports", REPORT_HEADERS, report_rows(reports))
    raise Http404("No such table")


@login_required
def group_list(request: HttpRequest, app_id: int) -> HttpResponseBase:
    app = app_or_404(request.user, app_id)
    status = request.GET.get("status", "unresolved")
    if status not in STATUS_FILTERS:
        status = "unresolved"
    sort = request.GET.get("sort", "last_seen")
    if sort not in selectors.SORTS:
        sort = "last_seen"
    groups = selectors.group_rows(app, STATUS_FILTERS[status], sort)
    table = csv_table(request, "groups")
    if table is not None:
        return _list_csv(app, table, groups)
    totals = selectors.build_totals(app)
    context = {
        "app": app,
        "totals": totals,
        "chart": charts.build_totals_figure(totals) if totals else None,
        "page": Paginator(groups, PAGE_SIZE).get_page(request.GET.get("page")),
        "status": status,
        "status_filters": list(STATUS_FILTERS),
        "sort": sort,
        "sorts": [(key, key.replace("_", " ")) for key in selectors.SORTS],
        "by_status": selectors.counts_by_status(app),
        "reports": selectors.recent_reports(app),
        "fingerprint_version": FINGERPRINT_VERSION,
    }
    return render(request, "leaks/group_list.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def group_detail(request: AuthenticatedHttpRequest, app_id: int, group_id: int) -> HttpResponseBase:
    app = app_or_404(request.user, app_id)
    group = selectors.group_for_app(app, group_id)
    if group is None:
        raise Http404("No such leak group")
    records = selectors.group_records(group)
    if request.method == "GET" and csv_table(request) is not None:
        name = f"{app.bundle_id}-leak-group-{group.pk}-occurrences"
        return csv_response(name, OCCURRENCE_HEADERS, occurrence_rows(records))
    triage_form, after_save = triage_form_or_redirect(request, group)
    if after_save is not None:
        return after_save
    per_build = selectors.occurrences_per_build(group)
    context = {
        "app": app,
        "group": group,
        "chart": charts.group_builds_figure(per_build),
        "records": records,
        "kinds": selectors.group_kinds(group),
        **triage_panel_context(group, triage_form),
    }
    return render(request, "leaks/group_detail.html", context, status=400 if triage_form else 200)


@login_required
def report_detail(request: HttpRequest, app_id: int, report_id: int) -> HttpResponseBase:
    app = app_or_404(request.user, app_id)
    report = selectors.report_for_app(app, report_id)
    if report is None:
        raise Http404("No such leak report")
    records = selectors.report_records(report)
    table = csv_table(request, "records")
    if table is not None:
        return _report_csv(app, report, table, records)
    context = {"app": app, "report": report, "records": records}
    return render(request, "leaks/report_detail.html", context)


def _report_csv(
    app: App, report: LeakReport, table: str, records: QuerySet[LeakRecord]
) -> HttpResponseBase:
    """A report's tables: its records (the default), its totals (`table=totals`), the
    suppressions it used (`table=suppressions`) and those printed outside it (`outside`)."""
    name = f"{app.bundle_id}-leak-report-{report.pk}"
    if table == "records":
        return csv_response(
            f"{name}-records", RECORD_HEADERS, record_rows(records.iterator(chunk_size=2_000))
        )
    if table == "totals":
        return csv_response(f"{name}-totals", TOTAL_HEADERS, report_total_rows(report))
    if table == "kinds":
        return csv_response(f"{name}-kinds", KIND_HEADERS, kind_rows(report))
    suppressions = {
        "suppressions": report.suppressions,
        "outside": report.suppressions_outside_reports,
    }
    if table in suppressions:
        rows = suppression_rows(suppressions[table])
        return csv_response(f"{name}-{table}", SUPPRESSION_HEADERS, rows)
    raise Http404("No such table")
