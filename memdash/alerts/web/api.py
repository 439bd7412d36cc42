"""The alerts API: an app's rules and destinations (admins change them, members read them), and
what fired. The request bodies are read by the page's own forms, so both doors accept the same."""

from __future__ import annotations

from typing import Any

from django.forms import ModelForm
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from memdash.alerts import reads
from memdash.alerts.logic.kinds import KINDS
from memdash.alerts.web.forms import DestinationForm, RuleForm
from memdash.alerts.writes import rules as writes
from memdash.core.models import App
from memdash.core.reads.apps import require_app_admin
from memdash.core.web.http import app_or_404, found
from memdash.core.web.schema import (
    BOOL,
    DATETIME,
    INT,
    OBJECT,
    STR,
    array,
    errors,
    nullable,
    obj,
)

KIND = {"type": "string", "enum": list(KINDS)}
DESTINATION_KIND = {"type": "string", "enum": ["email", "webhook", "slack"]}
RULE_FIELDS = {
    "kind": KIND,
    "threshold_percent": nullable({"type": "number", "minimum": 0, "maximum": 100}),
    "significant": BOOL,
    "min_runs": {"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
    "max_growth": {"type": "string", "maxLength": 32},
    "alpha": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    "enabled": BOOL,
    "destinations": array({"type": "integer", "minimum": 1}),
}
RULE = obj({"id": INT, "label": STR, **RULE_FIELDS})
RULE_REQUEST = {**obj({"kind": KIND}, {k: v for k, v in RULE_FIELDS.items() if k != "kind"})}
DESTINATION = obj(
    {"id": INT, "name": STR, "kind": DESTINATION_KIND, "target": STR, "digest_minutes": INT}
)
DESTINATION_REQUEST = obj(
    {
        "name": {"type": "string", "minLength": 1, "maxLength": 100},
        "kind": DESTINATION_KIND,
        "target": {"type": "string", "minLength": 1, "maxLength": 2000},
    },
    {"digest_minutes": {"type": "integer", "minimum": 0, "maximum": 2**31 - 1}},
)
ALERT = obj(
    {
        "id": INT, "kind": KIND, "rule": INT, "key": STR, "title": STR, "text": STR, "url": STR,
        "figures": OBJECT, "fired_at": DATETIME, "cleared_at": nullable(DATETIME),
    }
)  # fmt: skip


def _refused(form: ModelForm[Any]) -> Response:
    return Response(
        {"error": "invalid request", "fields": form.errors.get_json_data()},
        status=status.HTTP_400_BAD_REQUEST,
    )


def _destinations(app: App, ids: Any) -> list[Any] | None:
    """The app's destinations named by `ids` (None: not given; ValueError: not the app's)."""
    if ids is None:
        return None
    if not isinstance(ids, list) or not all(type(i) is int for i in ids):
        raise ValueError("destinations is a list of destination ids")
    found_ = list(reads.destinations_of(app).filter(pk__in=ids))
    if len(found_) != len(set(ids)):
        raise ValueError("every destination must be one of this app's")
    return found_


def _admin_app(request: Request, app_id: int) -> App:
    app = app_or_404(request.user, app_id)
    if request.method != "GET":
        require_app_admin(request.user, app)  # type: ignore[arg-type]  # signed in by then
    return app


@extend_schema(
    summary="An app's alert rules; POST adds one (admins)",
    request={"application/json": RULE_REQUEST},
    responses={200: array(RULE), 201: RULE, **errors(400, 403, 404)},
)
@api_view(["GET", "POST"])
def api_alert_rules(request: Request, app_id: int) -> Response:
    app = _admin_app(request, app_id)
    if request.method == "GET":
        return Response([reads.rule_json(rule) for rule in reads.rules_of(app)])
    data = request.data if isinstance(request.data, dict) else {}
    form = RuleForm({**_rule_defaults(), **data})
    try:
        destinations = _destinations(app, data.get("destinations"))
    except ValueError as error:
        return Response({"error": str(error), "path": "destinations"}, status=400)
    if not form.is_valid():
        return _refused(form)
    every = destinations if destinations is not None else reads.destinations_of(app)
    rule = writes.create_rule(app, form.cleaned_data, every)
    return Response(reads.rule_json(rule), status=status.HTTP_201_CREATED)


def _rule_defaults() -> dict[str, Any]:
    return {"significant": True, "min_runs": 100, "max_growth": "5%", "alpha": 0.05}


@extend_schema(
    summary="An alert rule; PATCH changes it, DELETE removes it (admins)",
    request={"application/json": obj({}, RULE_FIELDS)},
    responses={200: RULE, 204: None, **errors(400, 403, 404)},
)
@api_view(["GET", "PATCH", "DELETE"])
def api_alert_rule(request: Request, app_id: int, rule_id: int) -> Response:
    app = _admin_app(request, app_id)
    with found():
        rule = reads.rule_of_app(app, rule_id)
    if request.method == "DELETE":
        writes.delete_rule(rule)
        return Response(status=status.HTTP_204_NO_CONTENT)
    if request.method == "PATCH":
        data = request.data if isinstance(request.data, dict) else {}
        current = reads.rule_json(rule)
        form = RuleForm({**current, **data}, instance=rule)
        try:
            destinations = _destinations(app, data.get("destinations"))
        except ValueError as error:
            return Response({"error": str(error), "path": "destinations"}, status=400)
        if not form.is_valid():
            return _refused(form)
        enabled = data.get("enabled", rule.enabled)
        if not isinstance(enabled, bool):
            return Response({"error": "enabled is true or false", "path": "enabled"}, status=400)
        rule = writes.update_rule(rule, {**form.cleaned_data, "enabled": enabled}, destinations)
    return Response(reads.rule_json(rule))


@extend_schema(
    summary="An app's alert destinations; POST adds one, sent every rule's alerts (admins)",
    request={"application/json": DESTINATION_REQUEST},
    responses={200: array(DESTINATION), 201: DESTINATION, **errors(400, 403, 404)},
)
@api_view(["GET", "POST"])
def api_alert_destinations(request: Request, app_id: int) -> Response:
    app = _admin_app(request, app_id)
    if request.method == "GET":
        return Response([reads.destination_json(d) for d in reads.destinations_of(app)])
    data = request.data if isinstance(request.data, dict) else {}
    form = DestinationForm({"digest_minutes": 0, **data})
    if not form.is_valid():
        return _refused(form)
    destination = writes.create_destination(app, form.cleaned_data)
    body = {**reads.destination_json(destination), "secret": destination.secret}
    return Response(body, status=status.HTTP_201_CREATED)


@extend_schema(
    summary="Remove an alert destination (admins)",
    responses={204: None, **errors(403, 404)},
)
@api_view(["DELETE"])
def api_alert_destination(request: Request, app_id: int, destination_id: int) -> Response:
    app = _admin_app(request, app_id)
    with found():
        destination = reads.destination_of_app(app, destination_id)
    writes.delete_destination(destination)
    return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(
    summary="What fired: an app's latest alerts, open or cleared",
    responses={200: array(ALERT), **errors(404)},
)
@api_view(["GET"])
def api_alerts(request: Request, app_id: int) -> Response:
    app = app_or_404(request.user, app_id)
    return Response([reads.alert_json(alert) for alert in reads.alerts_of(app)[:100]])
