"""Reads of leaks: per-build totals, groups (of every fingerprint version: groups of older rules
are listed until they are regrouped), reports, records."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from django.db import DEFAULT_DB_ALIAS
from django.db.models import Count, Prefetch, QuerySet, Sum

from memdash.core.models import App, Build
from memdash.core.reads.apps import builds_in_release_order
from memdash.leaks.logic.fingerprint import FINGERPRINT_VERSION, is_older_version
from memdash.leaks.logic.reports import LEAK_KINDS, REACHABLE, SUPPRESSED
from memdash.leaks.models import (
    LeakGroup,
    LeakRecord,
    LeakReport,
    LeakTraceAnalysis,
    LeakTraceCluster,
    LeakTraceOccurrence,
    kind_figure,
)
from memdash.triage.models import Status

SORTS = {
    "last_seen": ("-last_seen_at", "-id"),
    "bytes": ("-bytes", "-id"),
    "occurrences": ("-occurrences", "-id"),
    "devices": ("-devices", "-id"),
    "first_seen": ("first_seen_at", "id"),
}
OPEN_STATUSES = [Status.NEW, Status.OPEN]
KIND_ORDER = (*LEAK_KINDS, SUPPRESSED)


@dataclass(frozen=True)
class BuildLeaks:
    """A build's leak reports, added up."""

    build: Build
    reports: int
    devices: int
    unreachable_bytes: int
    unreachable_allocations: int
    unlisted_bytes: int  # counted by the tools, not listed
    # Per kind (direct, indirect, possible, reachable, suppressed): bytes and allocations, as
    # each report states them where it does, else as it lists them. Still reachable is here
    # only, never in the unreachable figures.
    kinds: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def reachable_bytes(self) -> int | None:
        reachable = self.kinds.get(REACHABLE)
        return reachable["bytes"] if reachable else None

    @property
    def bytes_per_report(self) -> float:
        return self.unreachable_bytes / self.reports if self.reports else 0.0

    @property
    def allocations_per_report(self) -> float:
        return self.unreachable_allocations / self.reports if self.reports else 0.0


def build_totals(app: App) -> list[BuildLeaks]:
    """Builds with leak reports, in release order."""
    rows = {
        row["build_id"]: row
        for row in LeakReport.objects.filter(app=app)
        .values("build_id")
        .annotate(
            reports=Count("id"),
            devices=Count("device_id", distinct=True),
            total_bytes=Sum("unreachable_bytes"),
            total_allocations=Sum("unreachable_allocations"),
            stated=Sum("stated_bytes"),
            listed=Sum("listed_bytes"),
        )
        .order_by()
    }
    unlisted = unlisted_bytes_per_build(app)
    kinds = kinds_per_build(app)
    return [
        BuildLeaks(
            build=build,
            reports=rows[build.pk]["reports"],
            devices=rows[build.pk]["devices"],
            unreachable_bytes=rows[build.pk]["total_bytes"] or 0,
            unreachable_allocations=rows[build.pk]["total_allocations"] or 0,
            unlisted_bytes=unlisted.get(build.pk, 0),
            kinds=kinds.get(build.pk, {}),
        )
        for build in builds_in_release_order(app)
        if build.pk in rows
    ]


def unlisted_bytes_per_build(app: App) -> dict[int, int]:
    """Σ max(stated - listed, 0) per build, over the reports that state a total."""
    totals: dict[int, int] = {}
    reports = LeakReport.objects.filter(app=app, stated_bytes__isnull=False).values_list(
        "build_id", "stated_bytes", "listed_bytes"
    )
    for build_id, stated, listed in reports:
        # stated_bytes__isnull=False above: never None here.
        totals[build_id] = totals.get(build_id, 0) + max(cast(int, stated) - listed, 0)
    return totals


def kinds_per_build(app: App) -> dict[int, dict[str, dict[str, int]]]:
    """Σ per kind of each report's figure (stated where stated, else listed), per build."""
    totals: dict[int, dict[str, dict[str, int]]] = {}
    for build_id, kinds in LeakReport.objects.filter(app=app).values_list("build_id", "kinds"):
        build = totals.setdefault(build_id, {})
        for kind in kinds:
            row = build.setdefault(kind, {"bytes": 0, "allocations": 0})
            row["bytes"] += kind_figure(kinds, kind, "bytes") or 0
            row["allocations"] += kind_figure(kinds, kind, "allocations") or 0
    return {
        build_id: {kind: kinds[kind] for kind in KIND_ORDER if kind in kinds}
        for build_id, kinds in totals.items()
    }


def current_groups(app: App) -> QuerySet[LeakGroup]:
    """Groups made by today's fingerprint rules."""
    return LeakGroup.objects.filter(app=app, fingerprint_version=FINGERPRINT_VERSION)


def listed_groups(app: App) -> QuerySet[LeakGroup]:
    """The groups the lists show: every group of the app, whatever rules made it. Groups of
    older rules stay listed as they are (marked by `LeakGroup.rules_outdated`) until they are
    regrouped (memdash.leaks.writes.regroup): never hidden."""
    return LeakGroup.objects.filter(app=app)


def older_rules_group_ids(app: App) -> list[int]:
    """The app's groups made by older fingerprint rules than today's, by id."""
    versions = LeakGroup.objects.filter(app=app).values_list("fingerprint_version", flat=True)
    older = [v for v in set(versions.order_by()) if is_older_version(v)]
    return list(
        LeakGroup.objects.filter(app=app, fingerprint_version__in=older)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def apps_with_older_groups(using: str = DEFAULT_DB_ALIAS) -> list[int]:
    """The ids of the apps that have groups made by older fingerprint rules."""
    rows = LeakGroup.objects.using(using).values_list("app_id", "fingerprint_version")
    return sorted({app_id for app_id, version in rows.distinct() if is_older_version(version)})


def group_rows(
    app: App, statuses: Sequence[str] | None = None, sort: str = "last_seen"
) -> QuerySet[LeakGroup]:
    groups = listed_groups(app)
    if statuses:
        groups = groups.filter(status__in=statuses)
    return groups.select_related("assignee", "first_seen_build", "last_seen_build").order_by(
        *SORTS.get(sort, SORTS["last_seen"])
    )


def counts_by_status(app: App) -> dict[str, int]:
    counts = dict(
        listed_groups(app).values("status").annotate(n=Count("id")).values_list("status", "n")
    )
    return {status: counts.get(status, 0) for status in Status.values}


def group_for_app(app: App, group_id: int) -> LeakGroup | None:
    return (
        LeakGroup.objects.filter(app=app, pk=group_id)
        .select_related("app", "assignee", "first_seen_build", "last_seen_build", "fixed_in_build")
        .first()
    )


def occurrences_per_build(group: LeakGroup) -> list[tuple[Build, int, int]]:
    """(build, records, bytes) in release order."""
    rows = {
        row["build_id"]: row
        for row in LeakRecord.objects.filter(group=group)
        .values("build_id")
        .annotate(n=Count("id"), total=Sum("bytes"))
        .order_by()
    }
    return [
        (build, rows[build.pk]["n"], rows[build.pk]["total"] or 0)
        for build in builds_in_release_order(group.app)
        if build.pk in rows
    ]


def group_kinds(group: LeakGroup) -> dict[str, dict[str, int]]:
    """A group's records per kind (direct, indirect, possible): occurrences, bytes, allocations.
    One allocation site can leak directly in one run and indirectly in another."""
    rows = {
        row["kind"]: {
            "occurrences": row["n"],
            "bytes": row["total"] or 0,
            "allocations": row["blocks"] or 0,
        }
        for row in LeakRecord.objects.filter(group=group)
        .values("kind")
        .annotate(n=Count("id"), total=Sum("bytes"), blocks=Sum("allocations"))
        .order_by()
    }
    return {kind: rows[kind] for kind in KIND_ORDER if kind in rows}


def group_records(group: LeakGroup, limit: int = 50) -> QuerySet[LeakRecord]:
    """The newest records of a group, with where they came from (the app named on both sides
    of the join: on Citus the query goes to the one worker that has the app)."""
    return (
        LeakRecord.objects.filter(app_id=group.app_id, report__app_id=group.app_id, group=group)
        .select_related("report", "build", "device")
        .order_by("-report__captured_at", "-id")[:limit]
    )


def recent_reports(app: App, limit: int = 20) -> QuerySet[LeakReport]:
    return (
        LeakReport.objects.filter(app=app)
        .select_related("build", "device")
        .order_by("-captured_at", "-id")[:limit]
    )


def report_for_app(app: App, report_id: int) -> LeakReport | None:
    return (
        LeakReport.objects.filter(app=app, pk=report_id).select_related("build", "device").first()
    )


def report_records(report: LeakReport) -> QuerySet[LeakRecord]:
    """A report's records with their groups (none for memory still reachable). The groups are
    read by a second query of the app's, not an outer join: Citus answers an outer join of two
    distributed tables only on the distribution column, and a record names its group by id."""
    groups = LeakGroup.objects.filter(app_id=report.app_id)
    return (
        report.records.filter(app_id=report.app_id)
        .prefetch_related(Prefetch("group", queryset=groups))
        .order_by("position")
    )


# --- LeakCanary: clusters by signature, their occurrences, the analyses -----------------------

TRACE_SORTS = {
    "last_seen": ("-last_seen_at", "-id"),
    "retained": ("-retained_bytes", "-id"),
    "occurrences": ("-occurrences", "-id"),
    "devices": ("-devices", "-id"),
    "first_seen": ("first_seen_at", "id"),
}


def trace_clusters(
    app: App,
    statuses: Sequence[str] | None = None,
    include_library: bool = False,
    sort: str = "last_seen",
) -> QuerySet[LeakTraceCluster]:
    """The app's LeakCanary clusters; library leaks (3rd-party bugs) only when asked, as the
    retain-cycle lists leave system cycles out."""
    clusters = LeakTraceCluster.objects.filter(app=app)
    if not include_library:
        clusters = clusters.filter(library=False)
    if statuses:
        clusters = clusters.filter(status__in=statuses)
    return clusters.select_related("assignee", "first_seen_build", "last_seen_build").order_by(
        *TRACE_SORTS.get(sort, TRACE_SORTS["last_seen"])
    )


def trace_counts_by_status(app: App, include_library: bool = False) -> dict[str, int]:
    counts = dict(
        trace_clusters(app, include_library=include_library)
        .values("status")
        .annotate(n=Count("id"))
        .values_list("status", "n")
        .order_by()
    )
    return {status: counts.get(status, 0) for status in Status.values}


def library_trace_clusters(app: App) -> int:
    return LeakTraceCluster.objects.filter(app=app, library=True).count()


def trace_cluster_for_app(app: App, cluster_id: int) -> LeakTraceCluster | None:
    return (
        LeakTraceCluster.objects.filter(app=app, pk=cluster_id)
        .select_related("app", "assignee", "first_seen_build", "last_seen_build", "fixed_in_build")
        .first()
    )


def trace_occurrences(cluster: LeakTraceCluster) -> QuerySet[LeakTraceOccurrence]:
    """A cluster's occurrences, newest first, with their analysis, build and device."""
    return (
        LeakTraceOccurrence.objects.filter(
            app_id=cluster.app_id, analysis__app_id=cluster.app_id, cluster=cluster
        )
        .select_related("analysis", "build", "device")
        .order_by("-captured_at", "-id")
    )


def trace_occurrences_per_build(cluster: LeakTraceCluster) -> list[tuple[Build, int]]:
    """Every build of the app in release order with the cluster's occurrences (0 included, so a
    fix shows as a drop to zero)."""
    counts = dict(
        LeakTraceOccurrence.objects.filter(cluster=cluster)
        .values("build_id")
        .annotate(n=Count("id"))
        .values_list("build_id", "n")
        .order_by()
    )
    return [(build, counts.get(build.pk, 0)) for build in builds_in_release_order(cluster.app)]


def recent_analyses(app: App, limit: int = 20) -> QuerySet[LeakTraceAnalysis]:
    return (
        LeakTraceAnalysis.objects.filter(app=app)
        .select_related("build", "device")
        .order_by("-captured_at", "-id")[:limit]
    )


def analysis_for_app(app: App, analysis_id: int) -> LeakTraceAnalysis | None:
    return (
        LeakTraceAnalysis.objects.filter(app=app, pk=analysis_id)
        .select_related("build", "device")
        .first()
    )


def analysis_occurrences(analysis: LeakTraceAnalysis) -> QuerySet[LeakTraceOccurrence]:
    return (
        analysis.occurrences.filter(app_id=analysis.app_id, cluster__app_id=analysis.app_id)
        .select_related("cluster")
        .order_by("position")
    )
