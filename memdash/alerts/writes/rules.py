"""An app's admins set its rules and destinations (the page's forms and the API)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from memdash.alerts.models import AlertRule, Destination
from memdash.core.models import App

RULE_FIELDS = (
    "kind",
    "threshold_percent",
    "significant",
    "min_runs",
    "max_growth",
    "alpha",
    "enabled",
)
DESTINATION_FIELDS = ("name", "kind", "target", "digest_minutes")


@transaction.atomic
def create_rule(app: App, values: dict[str, Any], destinations: Iterable[Destination]) -> AlertRule:
    rule = AlertRule.objects.create(
        app=app, **{k: v for k, v in values.items() if k in RULE_FIELDS}
    )
    rule.destinations.set(list(destinations))
    return rule


@transaction.atomic
def update_rule(
    rule: AlertRule, values: dict[str, Any], destinations: Iterable[Destination] | None
) -> AlertRule:
    for name, value in values.items():
        if name in RULE_FIELDS:
            setattr(rule, name, value)
    rule.save()
    if destinations is not None:
        rule.destinations.set(list(destinations))
    return rule


def delete_rule(rule: AlertRule) -> None:
    rule.delete()  # its alerts and their deliveries with it


@transaction.atomic
def create_destination(app: App, values: dict[str, Any], every_rule: bool = True) -> Destination:
    """A new destination; with `every_rule`, each of the app's rules sends to it too."""
    destination = Destination.objects.create(
        app=app, **{k: v for k, v in values.items() if k in DESTINATION_FIELDS}
    )
    if every_rule:
        for rule in AlertRule.objects.filter(app=app):
            rule.destinations.add(destination)
    return destination


def delete_destination(destination: Destination) -> None:
    destination.delete()
