"""JSON of leaks: an app's per-build totals and groups; one group with triage PATCH."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from memdash.core.web.api import build_ref
from memdash.core.web.http import app_or_404
from memdash.core.web.schema import (
    BOOL,
    BUILD_REF,
    DATETIME,
    INT,
    OBJECT,
    STR,
    array,
    nullable,
    obj,
)
from memdash.leaks import reads as selectors
from memdash.leaks.logic.fingerprint import FINGERPRINT_VERSION
from memdash.leaks.models import LeakGroup, LeakReport
from memdash.triage.web.serializers import (
    CONTRADICTED_FIX,
    STATUS_FILTER,
    TRIAGE_FIELDS,
    TRIAGE_PATCH,
    parse_statuses,
    triage_fields,
    triaged_item_for_request,
)


def frame_json(frame: dict[str, Any]) -> dict[str, Any]:
    """A stored frame with what every frame of the API says: named or not, file, line, and
    whether it is a call inlined into the next frame."""
    return {
        **frame,
        "symbolicated": bool(frame.get("symbol")),
        "file": frame.get("file", ""),
        "line": frame.get("line"),
        "inlined": bool(frame.get("inlined")),
    }


def group_json(group: LeakGroup) -> dict[str, Any]:
    return {
        "id": group.pk,
        "fingerprint": group.fingerprint,
        "fingerprint_version": group.fingerprint_version,
        "title": group.title,
        "by_size": group.by_size,
        "frames": list(group.frame_keys),
        "stack": [frame_json(frame) for frame in group.stack],
        "occurrences": group.occurrences,
        "bytes": group.bytes,
        "allocations": group.allocations,
        "devices": group.devices,
        "builds": group.builds,
        "first_seen_at": group.first_seen_at.isoformat() if group.first_seen_at else None,
        "last_seen_at": group.last_seen_at.isoformat() if group.last_seen_at else None,
        **triage_fields(group),
    }


GROUP_FIELDS = {
    "id": INT,
    "fingerprint": STR,
    "fingerprint_version": STR,
    "title": STR,
    "by_size": BOOL,
    "frames": array(STR),
    "stack": array(
        obj({"symbolicated": BOOL, "file": STR, "line": nullable(INT), "inlined": BOOL})
    ),
    "occurrences": INT,
    "bytes": INT,
    "allocations": INT,
    "devices": INT,
    "builds": INT,
    "first_seen_at": nullable(DATETIME),
    "last_seen_at": nullable(DATETIME),
    **TRIAGE_FIELDS,
}
# Per kind (direct, indirect, possible, reachable, suppressed): its figures
KINDS = {"type": "object", "additionalProperties": OBJECT}
REPORT = obj(
    {
        "id": INT,
        "tool": STR,
        "tool_name": STR,
        "format": STR,
        "process": STR,
        "build": BUILD_REF,
        "captured_at": DATETIME,
        "stated_bytes": nullable(INT),
        "stated_allocations": nullable(INT),
        "stated_records": nullable(INT),
        "listed_bytes": INT,
        "listed_allocations": INT,
        "listed_records": INT,
        "unreachable_bytes": INT,
        "unreachable_allocations": INT,
        "reachable_bytes": nullable(INT),
        "kinds": KINDS,
        "info": OBJECT,
    }
)
APP_LEAKS = obj(
    {
        "app": obj({"id": INT, "bundle_id": STR, "platform": STR}),
        "fingerprint_version": STR,
        "builds": array(
            obj(
                {
                    "build": BUILD_REF,
                    "reports": INT,
                    "devices": INT,
                    "unreachable_bytes": INT,
                    "unreachable_allocations": INT,
                    "unlisted_bytes": INT,
                    "reachable_bytes": nullable(INT),
                    "kinds": KINDS,
                }
            )
        ),
        "groups": array(obj(GROUP_FIELDS)),
        "reports": array(REPORT),
    }
)
GROUP_DETAIL = obj(
    {
        **GROUP_FIELDS,
        "app": INT,
        "kinds": KINDS,
        "occurrences_per_build": array(
            obj({**BUILD_REF["properties"], "occurrences": INT, "bytes": INT})
        ),
    }
)


@extend_schema(
    summary="Leak totals per build (each kind apart), leak groups and latest reports of an app",
    parameters=[
        OpenApiParameter(
            "status", STATUS_FILTER, description="new, open, fixed, ignored (comma-separated)"
        )
    ],
    responses={200: APP_LEAKS},
)
@api_view(["GET"])
def api_app_leaks(request: Request, app_id: int) -> Response:
    app = app_or_404(request.user, app_id)
    groups = selectors.group_rows(app, parse_statuses(request.query_params.get("status")), "bytes")
    return Response(
        {
            "app": {"id": app.pk, "bundle_id": app.bundle_id, "platform": app.platform},
            "fingerprint_version": FINGERPRINT_VERSION,
            "builds": [
                {
                    "build": build_ref(row.build),
                    "reports": row.reports,
                    "devices": row.devices,
                    "unreachable_bytes": row.unreachable_bytes,
                    "unreachable_allocations": row.unreachable_allocations,
                    "unlisted_bytes": row.unlisted_bytes,
                    "reachable_bytes": row.reachable_bytes,
                    "kinds": row.kinds,
                }
                for row in selectors.build_totals(app)
            ],
            "groups": [group_json(group) for group in groups],
            "reports": [report_json(report) for report in selectors.recent_reports(app)],
        }
    )


def report_json(report: LeakReport) -> dict[str, Any]:
    """A report's figures: the leaks (lost memory) as stated and as listed, and each kind
    apart (still reachable is never in the leak figures)."""
    return {
        "id": report.pk,
        "tool": report.tool,
        "tool_name": report.tool_name,
        "format": report.source_format,
        "process": report.process,
        "build": build_ref(report.build),
        "captured_at": report.captured_at.isoformat(),
        "stated_bytes": report.stated_bytes,
        "stated_allocations": report.stated_allocations,
        "stated_records": report.stated_records,
        "listed_bytes": report.listed_bytes,
        "listed_allocations": report.listed_allocations,
        "listed_records": report.listed_records,
        "unreachable_bytes": report.unreachable_bytes,
        "unreachable_allocations": report.unreachable_allocations,
        "reachable_bytes": report.reachable_bytes,
        "kinds": report.kinds,
        "info": report.info,
    }


@extend_schema(
    summary="A leak group with its occurrences per build; PATCH changes its triage",
    request={"application/json": TRIAGE_PATCH},
    responses={200: GROUP_DETAIL, 409: CONTRADICTED_FIX},
)
@api_view(["GET", "PATCH"])
def api_leak_group(request: Request, group_id: int) -> Response:
    group = triaged_item_for_request(request, LeakGroup, group_id, "No such leak group")
    return Response(
        {
            **group_json(group),
            "app": group.app_id,
            "kinds": selectors.group_kinds(group),
            "occurrences_per_build": [
                {**build_ref(build), "occurrences": n, "bytes": leaked}
                for build, n, leaked in selectors.occurrences_per_build(group)
            ],
        }
    )
