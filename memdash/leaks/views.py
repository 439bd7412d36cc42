"""Pages of leaks: an app's leak totals per build and its leak groups, one group (with triage),
one report (its totals as the tool stated them, and its records)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from memdash.core.auth import AuthenticatedHttpRequest
from memdash.core.export import csv_response, csv_table
from memdash.core.selectors import app_for_user
from memdash.leaks import charts, selectors
from memdash.leaks.exports import GROUP_HEADERS, group_rows
from memdash.leaks.fingerprint import FINGERPRINT_VERSION
from memdash.triage.forms import triage_form_or_redirect, triage_panel_context
from memdash.triage.models import Status

PAGE_SIZE = 100
# "unresolved" (new or open, the default) and "all", then each status alone.
STATUS_FILTERS = {
    "unresolved": selectors.OPEN_STATUSES,
    "all": None,
    **{status: [status] for status in Status.values},
}


@login_required
def group_list(request: HttpRequest, app_id: int) -> HttpResponseBase:
    app = app_for_user(request.user, app_id)
    status = request.GET.get("status", "unresolved")
    if status not in STATUS_FILTERS:
        status = "unresolved"
    sort = request.GET.get("sort", "last_seen")
    if sort not in selectors.SORTS:
        sort = "last_seen"
    groups = selectors.group_rows(app, STATUS_FILTERS[status], sort)
    if csv_table(request) is not None:
        return csv_response(f"{app.bundle_id}-leak-groups", GROUP_HEADERS, group_rows(groups))
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
def group_detail(request: AuthenticatedHttpRequest, app_id: int, group_id: int) -> HttpResponse:
    app = app_for_user(request.user, app_id)
    group = selectors.group_for_app(app, group_id)
    if group is None:
        raise Http404("No such leak group")
    triage_form, after_save = triage_form_or_redirect(request, group)
    if after_save is not None:
        return after_save
    per_build = selectors.occurrences_per_build(group)
    context = {
        "app": app,
        "group": group,
        "chart": charts.group_builds_figure(per_build),
        "records": selectors.group_records(group),
        **triage_panel_context(group, triage_form),
    }
    return render(request, "leaks/group_detail.html", context, status=400 if triage_form else 200)


@login_required
def report_detail(request: HttpRequest, app_id: int, report_id: int) -> HttpResponse:
    app = app_for_user(request.user, app_id)
    report = selectors.report_for_app(app, report_id)
    if report is None:
        raise Http404("No such leak report")
    context = {"app": app, "report": report, "records": selectors.report_records(report)}
    return render(request, "leaks/report_detail.html", context)
