"""JSON of retain cycles: an app's clusters, one cluster with its member cycles, triage PATCH."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import api_view
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from memdash.core.reads.apps import is_app_contributor
from memdash.core.web.api import MissingReference, build_ref, page_fields, page_window, parse_flag
from memdash.core.web.http import app_or_404
from memdash.core.web.schema import (
    BOOL,
    BUILD_REF,
    INT,
    PAGE_FIELDS,
    STR,
    Schema,
    array,
    flag_parameter,
    nullable,
    obj,
    page_parameters,
)
from memdash.cycles.logic.clustering import ALGORITHM_VERSION, WeakLink
from memdash.cycles.models import Cluster
from memdash.cycles.reads import clusters as selectors
from memdash.triage.web.serializers import (
    CONTRADICTED_FIX,
    STATUS_FILTER,
    TRIAGE_FIELDS,
    TRIAGE_PATCH,
    parse_statuses,
    triage_fields,
    triaged_item_for_request,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import User

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


CLUSTER_FIELDS = {
    "id": INT,
    "key": array(STR),
    "system": BOOL,
    "status": TRIAGE_FIELDS["status"],
    "occurrences": INT,
    "devices": INT,
    "cycles": INT,
    "builds": INT,
    "first_seen_build": nullable(BUILD_REF),
    "last_seen_build": nullable(BUILD_REF),
    "regression": BOOL,
    "assignee": nullable(STR),
    "algorithm_version": STR,
}
CLUSTERS = obj(
    {"app": INT, "algorithm_version": STR, **PAGE_FIELDS, "clusters": array(obj(CLUSTER_FIELDS))}
)
WEAK_LINK = obj({"position": INT, "holder": STR, "via": array(STR), "held": STR, "reason": STR})
CLUSTER_DETAIL = obj(
    {
        **CLUSTER_FIELDS,
        **TRIAGE_FIELDS,
        "app": INT,
        "is_current": BOOL,
        "merged_into": nullable(INT),
        "member_cycles": array(
            obj(
                {
                    "cycle": array(obj({"class": STR, "via": array(STR), "ownership": STR})),
                    "retains": BOOL,
                    "key": array(STR),
                    "occurrences": INT,
                    "devices": INT,
                    "builds": INT,
                }
            )
        ),
        "occurrences_per_build": array(obj({**BUILD_REF["properties"], "occurrences": INT})),
        "reported_by": array(obj({"tool": STR, "occurrences": INT})),
        "link_to_weaken": nullable(WEAK_LINK),
        "link_to_weaken_chosen": BOOL,
        "links_to_offer": array(WEAK_LINK),
    }
)
# A member's choice of the link to weaken: a position in the minimal loop, null for the computed.
LINK_CHOICE: Schema = {
    "type": "object",
    "properties": {"position": nullable({"type": "integer", "minimum": 0})},
    "required": ["position"],
}


@extend_schema(
    summary="Retain-cycle clusters of an app",
    parameters=[
        OpenApiParameter(
            "status", STATUS_FILTER, description="new, open, fixed, ignored (comma-separated)"
        ),
        flag_parameter("include_system", "include system-only clusters"),
        *page_parameters(DEFAULT_LIMIT, MAX_LIMIT, "clusters"),
    ],
    responses={200: CLUSTERS},
)
@api_view(["GET"])
def api_clusters(request: Request, app_id: int) -> Response:
    app = app_or_404(request.user, app_id)
    filters = selectors.ClusterFilters(
        statuses=parse_statuses(request.query_params.get("status")),
        include_system=parse_flag(request.query_params, "include_system"),
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


def weak_link_json(link: WeakLink) -> dict[str, Any]:
    holder, via, held = link.reference
    return {
        "position": link.position,
        "holder": holder,
        "via": list(via),
        "held": held,
        "reason": link.reason,
    }


def cluster_detail_json(cluster: Cluster) -> dict[str, Any]:
    members = selectors.member_cycles(cluster)
    to_weaken = selectors.link_to_weaken_of(
        cluster, members, selectors.system_prefixes(cluster.app)
    )
    return {
        **cluster_json(cluster),
        **triage_fields(cluster),
        "app": cluster.app_id,
        "is_current": cluster.is_current,
        "merged_into": cluster.merged_into_id,
        "member_cycles": [
            {
                "cycle": [
                    {"class": cls, "via": list(via), "ownership": own}
                    for (cls, via), own in zip(member.links, member.ownership, strict=True)
                ],
                "retains": member.retains,
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
        "reported_by": [
            {"tool": tool, "occurrences": n} for tool, n in selectors.reported_by(cluster)
        ],
        # the reference shown as the one to weaken (a member's choice, else the computed one),
        # and every strong reference of the minimal loop a member may choose, computed first
        "link_to_weaken": weak_link_json(to_weaken.shown) if to_weaken.shown else None,
        "link_to_weaken_chosen": to_weaken.chosen,
        "links_to_offer": [weak_link_json(link) for link in to_weaken.offered],
    }


@extend_schema(
    summary="A retain-cycle cluster with its member cycles; PATCH changes its triage",
    request={"application/json": TRIAGE_PATCH},
    responses={200: CLUSTER_DETAIL, 409: CONTRADICTED_FIX},
)
@api_view(["GET", "PATCH"])
def api_cluster(request: Request, cluster_id: int) -> Response:
    cluster = triaged_item_for_request(request, Cluster, cluster_id, "No such cluster")
    return Response(cluster_detail_json(cluster))


@extend_schema(
    summary="Choose the link to weaken of a retain-cycle cluster (null: the computed one)",
    request={"application/json": LINK_CHOICE},
    responses={200: CLUSTER_DETAIL},
)
@api_view(["PUT"])
def api_cluster_link_to_weaken(request: Request, cluster_id: int) -> Response:
    cluster = triaged_item_for_request(request, Cluster, cluster_id, "No such cluster")
    if not is_app_contributor(request.user, cluster.app):
        raise PermissionDenied("Viewers only read: an admin of the app can make you a member.")
    body = request.data if isinstance(request.data, dict) else {}
    if "position" not in body:
        raise ValidationError({"position": "required: a position of the loop, or null"})
    position = body["position"]
    to_weaken = selectors.link_to_weaken_of(
        cluster, selectors.member_cycles(cluster), selectors.system_prefixes(cluster.app)
    )
    offered = {link.position: link for link in to_weaken.offered}
    choices = ", ".join(str(p) for p in offered) or "none: this loop has no link to weaken"
    if position is not None and (isinstance(position, bool) or not isinstance(position, int)):
        raise ValidationError({"position": f"must be one of the offered positions ({choices})"})
    if position is not None and position not in offered:  # a position the loop does not offer
        raise MissingReference("position", f"no offered link at {position} ({choices})")
    computed = to_weaken.computed
    chosen = None if position is None or offered[position] is computed else offered[position]
    cluster.choose_link_to_weaken(cast("User", request.user), chosen.reference if chosen else None)
    return Response(cluster_detail_json(cluster))
