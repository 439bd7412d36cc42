"""Evaluating an app's rules where its data lands (the task queued after an upload is stored):
each condition that holds and has no open alert fires one, recorded with a delivery per
destination; each open alert whose condition no longer holds is cleared."""

from __future__ import annotations

import logging

from django.db import IntegrityError, transaction

from memdash.alerts.logic.kinds import Finding, RuleFigures, checker_of
from memdash.alerts.models import Alert, AlertRule, Delivery
from memdash.core.models import App

log = logging.getLogger(__name__)


def figures_of(rule: AlertRule) -> RuleFigures:
    return RuleFigures(
        kind=rule.kind, threshold_percent=rule.threshold_percent, significant=rule.significant,
        min_runs=rule.min_runs, max_growth=rule.max_growth, alpha=rule.alpha,
        created_at=rule.created_at,
    )  # fmt: skip


def evaluate_app(app: App) -> list[Alert]:
    """Check every enabled rule of the app; the alerts that fired now."""
    fired: list[Alert] = []
    for rule in AlertRule.objects.filter(app=app, enabled=True).order_by("pk"):
        checker = checker_of(rule.kind)
        if checker is None:
            continue
        fired += reconcile(rule, checker(app, figures_of(rule)))
    return fired


def reconcile(rule: AlertRule, findings: list[Finding]) -> list[Alert]:
    """Fire what holds and is not open yet; clear what is open and no longer holds."""
    holding = {finding.key: finding for finding in findings}
    fired = []
    with transaction.atomic():
        open_alerts = {alert.key: alert for alert in rule.alerts.filter(cleared_at__isnull=True)}
        for key, alert in open_alerts.items():
            if key not in holding:
                alert.clear()
        for key, finding in holding.items():
            if key not in open_alerts and (new := _fire(rule, finding)) is not None:
                fired.append(new)
    return fired


def _fire(rule: AlertRule, finding: Finding) -> Alert | None:
    """The alert and its deliveries; None when another evaluation fired it meanwhile (the
    database allows one open alert per condition)."""
    try:
        with transaction.atomic():
            alert = Alert.objects.create(
                rule=rule, app_id=rule.app_id, key=finding.key, title=finding.title[:500],
                text=finding.text, link=finding.link, figures=finding.figures,
            )  # fmt: skip
    except IntegrityError:
        log.info("alert %s of rule %s already open", finding.key, rule.pk)
        return None
    Delivery.objects.bulk_create(
        Delivery(alert=alert, destination=destination) for destination in rule.destinations.all()
    )
    return alert
