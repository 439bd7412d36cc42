"""Reads of an app's alerts: its rules, destinations, alerts and deliveries, and the JSON every
delivery sends (docs/schemas/alert-v1.schema.json)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import QuerySet

from memdash.alerts.logic.kinds import KINDS
from memdash.alerts.models import Alert, AlertRule, Delivery, Destination
from memdash.core.models import App


def absolute(path: str) -> str:
    """A path of this site as a link a message can carry (MEMDASH_PUBLIC_URL)."""
    return settings.MEMDASH_PUBLIC_URL.rstrip("/") + path


def app_json(app: App) -> dict[str, Any]:
    return {
        "id": app.pk, "bundle_id": app.bundle_id, "platform": app.platform,
        "name": app.display_name,
    }  # fmt: skip


def alert_json(alert: Alert) -> dict[str, Any]:
    return {
        "id": alert.pk,
        "kind": alert.rule.kind,
        "rule": alert.rule_id,
        "key": alert.key,
        "title": alert.title,
        "text": alert.text,
        "url": absolute(alert.link),
        "figures": alert.figures,
        "fired_at": alert.fired_at.isoformat(),
        "cleared_at": alert.cleared_at.isoformat() if alert.cleared_at else None,
    }


def rule_json(rule: AlertRule) -> dict[str, Any]:
    return {
        "id": rule.pk, "kind": rule.kind, "label": KINDS[rule.kind].label,
        "threshold_percent": rule.threshold_percent, "significant": rule.significant,
        "min_runs": rule.min_runs, "max_growth": rule.max_growth, "alpha": rule.alpha,
        "enabled": rule.enabled,
        # .all(): the destinations rules_of prefetched, not a query per rule
        "destinations": sorted(destination.pk for destination in rule.destinations.all()),
    }  # fmt: skip


def destination_json(destination: Destination) -> dict[str, Any]:
    """Without the secret: it is shown on the page to the app's admins only."""
    return {
        "id": destination.pk, "name": destination.name, "kind": destination.kind,
        "target": destination.target, "digest_minutes": destination.digest_minutes,
    }  # fmt: skip


def rules_of(app: App) -> QuerySet[AlertRule]:
    return AlertRule.objects.filter(app=app).prefetch_related("destinations")


def destinations_of(app: App) -> QuerySet[Destination]:
    return Destination.objects.filter(app=app)


def alerts_of(app: App) -> QuerySet[Alert]:
    return Alert.objects.filter(app=app).select_related("rule")


def deliveries_of(app: App) -> QuerySet[Delivery]:
    return Delivery.objects.filter(alert__app=app).select_related("alert", "destination")


def failing_deliveries(app: App) -> QuerySet[Delivery]:
    """Deliveries whose last attempt failed: still retried, or given up."""
    return deliveries_of(app).exclude(last_error="").exclude(status=Delivery.SENT)


def rule_of_app(app: App, rule_id: int) -> AlertRule:
    return AlertRule.objects.get(app=app, pk=rule_id)


def destination_of_app(app: App, destination_id: int) -> Destination:
    return Destination.objects.get(app=app, pk=destination_id)
