"""The alerts page (what fired, what was delivered, what failed and why) and the admins' forms
for rules and destinations, which the app's settings page shows."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from memdash.alerts import reads
from memdash.alerts.logic.kinds import KINDS
from memdash.alerts.web.forms import DestinationForm, RuleForm
from memdash.alerts.writes import rules as writes
from memdash.core.auth import AuthenticatedHttpRequest
from memdash.core.links import page_url
from memdash.core.reads.apps import is_app_admin, require_app_admin
from memdash.core.web.forms import error_text
from memdash.core.web.http import app_or_404, found

RECENT = 50


@login_required
def app_alerts(request: AuthenticatedHttpRequest, app_id: int) -> HttpResponse:
    app = app_or_404(request.user, app_id)
    alerts = list(reads.alerts_of(app)[:RECENT])
    context = {
        "app": app,
        "open_alerts": [alert for alert in alerts if alert.is_open],
        "alerts": alerts,
        "deliveries": reads.deliveries_of(app)[:RECENT],
        "failing": reads.failing_deliveries(app)[:RECENT],
        "rules": reads.rules_of(app),
        "kinds": KINDS,
        "is_admin": is_app_admin(request.user, app),
    }
    return render(request, "alerts/app_alerts.html", context)


def _back_to_settings(app_id: int) -> HttpResponse:
    return redirect(page_url("app_settings", app_id) + "#alerts")


@login_required
@require_POST
def rule_create(request: AuthenticatedHttpRequest, app_id: int) -> HttpResponse:
    app = app_or_404(request.user, app_id)
    require_app_admin(request.user, app)
    form = RuleForm(request.POST)
    if form.is_valid():
        rule = writes.create_rule(app, form.cleaned_data, reads.destinations_of(app))
        messages.success(request, f"Alert rule “{rule}” added, sending to every destination.")
    else:
        messages.error(request, error_text(form))
    return _back_to_settings(app.pk)


@login_required
@require_POST
def rule_delete(request: AuthenticatedHttpRequest, app_id: int, rule_id: int) -> HttpResponse:
    app = app_or_404(request.user, app_id)
    require_app_admin(request.user, app)
    with found():
        rule = reads.rule_of_app(app, rule_id)
    writes.delete_rule(rule)
    messages.success(request, f"Alert rule “{rule}” deleted.")
    return _back_to_settings(app.pk)


@login_required
@require_POST
def rule_toggle(request: AuthenticatedHttpRequest, app_id: int, rule_id: int) -> HttpResponse:
    app = app_or_404(request.user, app_id)
    require_app_admin(request.user, app)
    with found():
        rule = reads.rule_of_app(app, rule_id)
    writes.update_rule(rule, {"enabled": not rule.enabled}, None)
    return _back_to_settings(app.pk)


@login_required
@require_POST
def destination_create(request: AuthenticatedHttpRequest, app_id: int) -> HttpResponse:
    app = app_or_404(request.user, app_id)
    require_app_admin(request.user, app)
    form = DestinationForm(request.POST)
    if form.is_valid():
        destination = writes.create_destination(app, form.cleaned_data)
        messages.success(request, f"Destination “{destination.name}” added to every rule.")
    else:
        messages.error(request, error_text(form))
    return _back_to_settings(app.pk)


@login_required
@require_POST
def destination_delete(
    request: AuthenticatedHttpRequest, app_id: int, destination_id: int
) -> HttpResponse:
    app = app_or_404(request.user, app_id)
    require_app_admin(request.user, app)
    with found():
        destination = reads.destination_of_app(app, destination_id)
    writes.delete_destination(destination)
    messages.success(request, f"Destination “{destination.name}” deleted.")
    return _back_to_settings(app.pk)
