"""The alerts API: an app's rules and destinations (admins change them, members read them), and
what fired. The bodies are read by strict serializers with the checks the page's forms make
(`logic.kinds`), and the schema says the same patterns."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from memdash.alerts import reads
from memdash.alerts.logic.kinds import (
    EMAILS_PATTERN,
    HOOK_URL_PATTERN,
    KINDS,
    MAX_RUNS,
    NAME_PATTERN,
)
from memdash.alerts.models import Destination
from memdash.alerts.web.serializers import DestinationSerializer, RuleSerializer
from memdash.alerts.writes import rules as writes
from memdash.core.logic.numbers import MAX_INT64
from memdash.core.models import App
from memdash.core.reads.apps import require_app_admin
from memdash.core.web.api import MissingReference
from memdash.core.web.http import app_or_404, found
from memdash.core.web.schema import (
    BOOL,
    DATETIME,
    GROWTH,
    INT,
    OBJECT,
    STR,
    Schema,
    array,
    errors,
    nullable,
    obj,
)

KIND = {"type": "string", "enum": list(KINDS)}
RULE_FIELDS = {
    "kind": KIND,
    "threshold_percent": nullable({"type": "number", "minimum": 0, "maximum": 100}),
    "significant": BOOL,
    "min_runs": {"type": "integer", "minimum": 0, "maximum": MAX_RUNS},
    "max_growth": {**GROWTH, "maxLength": 32},
    "alpha": {
        "type": "number", "minimum": 0, "maximum": 1,
        "exclusiveMinimum": True, "exclusiveMaximum": True,
    },
    "enabled": BOOL,
    "destinations": array({"type": "integer", "minimum": 1, "maximum": MAX_INT64}),
}  # fmt: skip
RULE = obj({"id": INT, "label": STR, **RULE_FIELDS})
RULE_REQUEST = obj({"kind": KIND}, {k: v for k, v in RULE_FIELDS.items() if k != "kind"})
DESTINATION = obj(
    {
        "id": INT, "name": STR, "kind": {"type": "string", "enum": ["email", "webhook", "slack"]},
        "target": STR, "digest_minutes": INT,
    }
)  # fmt: skip


def _destination_request(kinds: list[str], pattern: str, what: str) -> Schema:
    return obj(
        {
            "name": {"type": "string", "maxLength": 100, "pattern": NAME_PATTERN},
            "kind": {"type": "string", "enum": kinds},
            "target": {
                "type": "string",
                "maxLength": 2000,
                "pattern": pattern,
                "description": what,
            },
        },
        {"digest_minutes": {"type": "integer", "minimum": 0, "maximum": MAX_RUNS}},
    )


DESTINATION_REQUEST: Schema = {
    "oneOf": [
        _destination_request(["email"], EMAILS_PATTERN, "e-mail addresses, comma-separated"),
        _destination_request(["webhook", "slack"], HOOK_URL_PATTERN, "the webhook's URL"),
    ]
}
ALERT = obj(
    {
        "id": INT, "kind": KIND, "rule": INT, "key": STR, "title": STR, "text": STR, "url": STR,
        "figures": OBJECT, "fired_at": DATETIME, "cleared_at": nullable(DATETIME),
    }
)  # fmt: skip


def _destinations(app: App, ids: list[int] | None) -> list[Destination] | None:
    """The app's destinations named by `ids` (None: not given); 404 naming one it lacks."""
    if ids is None:
        return None
    found_ = list(reads.destinations_of(app).filter(pk__in=ids))
    missing = set(ids) - {destination.pk for destination in found_}
    if missing:
        raise MissingReference("destinations", f"no destination {min(missing)} in this app")
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
    body = RuleSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    values = dict(body.validated_data)
    destinations = _destinations(app, values.pop("destinations", None))
    every = destinations if destinations is not None else reads.destinations_of(app)
    rule = writes.create_rule(app, values, every)
    return Response(reads.rule_json(rule), status=status.HTTP_201_CREATED)


RULE_PATCH: Schema = {
    **obj({}, RULE_FIELDS),
    "anyOf": [{"required": [name]} for name in RULE_FIELDS],  # at least one of them
}


@extend_schema(
    summary="An alert rule; PATCH changes it, DELETE removes it (admins)",
    request={"application/json": RULE_PATCH},
    responses={200: RULE, 204: None, **errors(400, 403, 404)},
)
@extend_schema(methods=["GET"], operation_id="apps_alert_rule_retrieve")  # not the list's
@api_view(["GET", "PATCH", "DELETE"])
def api_alert_rule(request: Request, app_id: int, rule_id: int) -> Response:
    app = _admin_app(request, app_id)
    with found():
        rule = reads.rule_of_app(app, rule_id)
    if request.method == "DELETE":
        writes.delete_rule(rule)
        return Response(status=status.HTTP_204_NO_CONTENT)
    if request.method == "PATCH":
        body = RuleSerializer(rule, data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        values = dict(body.validated_data)
        destinations = _destinations(app, values.pop("destinations", None))
        rule = writes.update_rule(rule, values, destinations)
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
    payload = DestinationSerializer(data=request.data)
    payload.is_valid(raise_exception=True)
    destination = writes.create_destination(app, dict(payload.validated_data))
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
