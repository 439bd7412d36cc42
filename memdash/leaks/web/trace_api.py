"""JSON of LeakCanary's leaks: an app's clusters (by signature), one cluster with its trace and
occurrences, triage PATCH."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from memdash.core.web.api import build_ref, parse_flag
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
from memdash.leaks.models import LeakTraceCluster, LeakTraceOccurrence
from memdash.triage.web.serializers import (
    CONTRADICTED_FIX,
    STATUS_FILTER,
    TRIAGE_FIELDS,
    TRIAGE_PATCH,
    parse_statuses,
    triage_fields,
    triaged_item_for_request,
)

OCCURRENCES_SHOWN = 50


def cluster_json(cluster: LeakTraceCluster) -> dict[str, Any]:
    return {
        "id": cluster.pk,
        "signature": cluster.signature,
        "library": cluster.library,
        "title": cluster.title,
        "leaking_class": cluster.leaking_class,
        "pattern": cluster.pattern,
        "description": cluster.description,
        "occurrences": cluster.occurrences,
        "traces": cluster.traces,
        "retained_bytes": cluster.retained_bytes,
        "devices": cluster.devices,
        "builds": cluster.builds,
        "first_seen_at": cluster.first_seen_at.isoformat() if cluster.first_seen_at else None,
        "last_seen_at": cluster.last_seen_at.isoformat() if cluster.last_seen_at else None,
        **triage_fields(cluster),
    }


def occurrence_json(occurrence: LeakTraceOccurrence) -> dict[str, Any]:
    return {
        "analysis": occurrence.analysis_id,
        "build": build_ref(occurrence.build),
        "device": occurrence.device.device_key if occurrence.device else None,
        "captured_at": occurrence.captured_at.isoformat(),
        "traces": occurrence.traces,
        "retained_bytes": occurrence.retained_bytes,
        "retained_objects": occurrence.retained_objects,
    }


CLUSTER_FIELDS = {
    "id": INT, "signature": STR, "library": BOOL, "title": STR, "leaking_class": STR,
    "pattern": STR, "description": STR, "occurrences": INT, "traces": INT,
    "retained_bytes": INT, "devices": INT, "builds": INT, "first_seen_at": nullable(DATETIME),
    "last_seen_at": nullable(DATETIME), **TRIAGE_FIELDS,
}  # fmt: skip
APP_TRACES = obj(
    {
        "app": obj({"id": INT, "bundle_id": STR, "platform": STR}),
        "clusters": array(obj(CLUSTER_FIELDS)),
    }
)
CLUSTER_DETAIL = obj(
    {
        **CLUSTER_FIELDS,
        "app": INT,
        "gc_root": STR,
        "trace": array(OBJECT),
        "occurrences_per_build": array(obj({**BUILD_REF["properties"], "occurrences": INT})),
        "latest_occurrences": array(
            obj(
                {
                    "analysis": INT,
                    "build": BUILD_REF,
                    "device": nullable(STR),
                    "captured_at": DATETIME,
                    "traces": INT,
                    "retained_bytes": nullable(INT),
                    "retained_objects": nullable(INT),
                }
            )  # fmt: skip
        ),
    }
)


@extend_schema(
    summary="LeakCanary's leaks of an app, one cluster per signature",
    parameters=[
        OpenApiParameter(
            "status", STATUS_FILTER, description="new, open, fixed, ignored (comma-separated)"
        ),
        OpenApiParameter("include_library", bool, description="library leaks too"),
    ],
    responses={200: APP_TRACES},
)
@api_view(["GET"])
def api_app_leakcanary(request: Request, app_id: int) -> Response:
    app = app_or_404(request.user, app_id)
    statuses = parse_statuses(request.query_params.get("status"))
    library = parse_flag(request.query_params, "include_library")
    clusters = selectors.trace_clusters(app, statuses, library, "retained")
    return Response(
        {
            "app": {"id": app.pk, "bundle_id": app.bundle_id, "platform": app.platform},
            "clusters": [cluster_json(cluster) for cluster in clusters],
        }
    )


@extend_schema(
    summary="A LeakCanary leak (one signature) with its trace; PATCH changes its triage",
    request={"application/json": TRIAGE_PATCH},
    responses={200: CLUSTER_DETAIL, 409: CONTRADICTED_FIX},
)
@api_view(["GET", "PATCH"])
def api_leakcanary_cluster(request: Request, cluster_id: int) -> Response:
    cluster = triaged_item_for_request(
        request, LeakTraceCluster, cluster_id, "No such LeakCanary leak"
    )
    latest = selectors.trace_occurrences(cluster)[:OCCURRENCES_SHOWN]
    return Response(
        {
            **cluster_json(cluster),
            "app": cluster.app_id,
            "gc_root": cluster.gc_root,
            "trace": cluster.trace,
            "occurrences_per_build": [
                {**build_ref(build), "occurrences": n}
                for build, n in selectors.trace_occurrences_per_build(cluster)
            ],
            "latest_occurrences": [occurrence_json(o) for o in latest],
        }
    )
