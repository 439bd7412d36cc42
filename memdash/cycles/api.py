"""JSON of retain cycles: an app's clusters, one cluster with its member cycles, triage PATCH."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from memdash.core.api import build_ref, page_fields, page_window
from memdash.core.flags import read_flag
from memdash.core.http import app_or_404
from memdash.cycles import selectors
from memdash.cycles.clustering import ALGORITHM_VERSION
from memdash.cycles.models import Cluster
from memdash.triage.serializers import (
    TriagePatchSerializer,
    parse_statuses,
    triage_fields,
    triaged_item_for_request,
)

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


def cluster_json(cluster: Cluster) -> dict[str, Any]:
    return {
        "id": cluster.pk,
        "key": list(cluster.key),
        "system": cluster.system,
        "status": cluster.status,
        "occurrences": cluster.occurrences,
        "devices": cluster.devices,
        "cycles": cluster.cycles,
        "builds": cluster.builds,
        "first_seen_build": build_ref(cluster.first_seen_build),
        "last_seen_build": build_ref(cluster.last_seen_build),
        "regression": cluster.regression,
        "assignee": cluster.assignee.get_username() if cluster.assignee is not None else None,
        "algorithm_version": cluster.algorithm_version,
    }


@extend_schema(
    summary="Retain-cycle clusters of an app",
    parameters=[
        OpenApiParameter("status", str, description="new, open, fixed, ignored (comma-separated)"),
        OpenApiParameter("include_system", bool, description="include system-only clusters"),
        OpenApiParameter("limit", int, description=f"clusters per page (default {DEFAULT_LIMIT})"),
        OpenApiParameter("offset", int, description="clusters to skip (default 0)"),
    ],
    responses={200: OpenApiTypes.OBJECT},
)
@api_view(["GET"])
def api_clusters(request: Request, app_id: int) -> Response:
    app = app_or_404(request.user, app_id)
    filters = selectors.ClusterFilters(
        statuses=parse_statuses(request.query_params.get("status")),
        # Lenient, as it has always answered: any word but a yes leaves system clusters out.
        include_system=read_flag(request.query_params.get("include_system"), False) is True,
    )
    offset, limit = page_window(request.query_params, DEFAULT_LIMIT, MAX_LIMIT)
    rows = selectors.cluster_rows(app, filters)
    return Response(
        {
            "app": app.pk,
            "algorithm_version": ALGORITHM_VERSION,
            # `count`: all clusters matching the filters; `clusters` is one page of them
            **page_fields(request, offset, limit, rows.count()),
            "clusters": [cluster_json(row.cluster) for row in rows[offset : offset + limit]],
        }
    )


def cluster_detail_json(cluster: Cluster) -> dict[str, Any]:
    members = selectors.member_cycles(cluster)
    return {
        **cluster_json(cluster),
        **triage_fields(cluster),
        "app": cluster.app_id,
        "is_current": cluster.is_current,
        "merged_into": cluster.merged_into_id,
        "member_cycles": [
            {
                "cycle": [{"class": cls, "via": list(via)} for cls, via in member.links],
                "key": list(member.loop.key),
                "occurrences": member.occurrences,
                "devices": member.devices,
                "builds": member.builds,
            }
            for member in members
        ],
        "occurrences_per_build": [
            {**build_ref(build), "occurrences": n}
            for build, n in selectors.occurrences_per_build(cluster)
        ],
    }


@extend_schema(
    summary="A retain-cycle cluster with its member cycles; PATCH changes its triage",
    request=TriagePatchSerializer,
    responses={200: OpenApiTypes.OBJECT},
)
@api_view(["GET", "PATCH"])
def api_cluster(request: Request, cluster_id: int) -> Response:
    cluster = triaged_item_for_request(request, Cluster, cluster_id, "No such cluster")
    return Response(cluster_detail_json(cluster))
