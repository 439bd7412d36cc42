"""Reads of retain cycles: the clusters of an app (filtered, sorted), one cluster's details."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Max, QuerySet, Sum

from memdash.core.models import App, Build
from memdash.core.selectors import builds_in_release_order
from memdash.cycles.clustering import is_system_class
from memdash.cycles.models import CanonicalCycle, Cluster, CycleReport, RetainCycle
from memdash.triage.models import Status

SORTS = {
    "occurrences": "occurrences",
    "devices": "devices",
    "builds": "builds affected",
    "newest": "newest",
}
DEFAULT_SORT = "occurrences"


@dataclass
class ClusterFilters:
    statuses: list[str] | None = None  # None: all
    include_system: bool = False
    assignee_id: int | None = None
    unassigned: bool = False
    build_from: Build | None = None  # inclusive, release order
    build_to: Build | None = None
    sort: str = DEFAULT_SORT


@dataclass
class ClusterRow:
    cluster: Cluster
    occurrences: int
    devices: int
    builds: int
    newest_at: object


def builds_in_range(app: App, build_from: Build | None, build_to: Build | None) -> list[Build]:
    ordered = builds_in_release_order(app)
    low = build_from.release_key if build_from else None
    high = build_to.release_key if build_to else None
    return [
        b
        for b in ordered
        if (low is None or b.release_key >= low) and (high is None or b.release_key <= high)
    ]


def _clusters(app: App, filters: ClusterFilters) -> QuerySet[Cluster]:
    clusters = Cluster.objects.filter(app=app, is_current=True).select_related(
        "assignee", "first_seen_build", "last_seen_build", "fixed_in_build"
    )
    if not filters.include_system:
        clusters = clusters.filter(system=False)
    if filters.statuses:
        clusters = clusters.filter(status__in=filters.statuses)
    if filters.unassigned:
        clusters = clusters.filter(assignee__isnull=True)
    elif filters.assignee_id is not None:
        clusters = clusters.filter(assignee_id=filters.assignee_id)
    return clusters


def _sort_key(sort: str):
    def newest(row: ClusterRow):
        first = row.cluster.first_seen_build
        return (first.release_key if first else (), row.newest_at is not None, row.newest_at)

    if sort == "newest":
        return newest
    attribute = {"devices": "devices", "builds": "builds"}.get(sort, "occurrences")
    return lambda row: (getattr(row, attribute), row.occurrences)


def cluster_rows(app: App, filters: ClusterFilters) -> list[ClusterRow]:
    """Current clusters, with counts over the build range when one is given; sorted descending
    (most first; newest = latest first-seen build, then latest occurrence), ties by id."""
    clusters = list(_clusters(app, filters))
    ranged = filters.build_from is not None or filters.build_to is not None
    if not ranged:
        rows = [ClusterRow(c, c.occurrences, c.devices, c.builds, c.newest_at) for c in clusters]
    else:
        build_ids = [b.pk for b in builds_in_range(app, filters.build_from, filters.build_to)]
        stats = {
            row["canonical__cluster_id"]: row
            for row in RetainCycle.objects.filter(
                app=app, build_id__in=build_ids, canonical__cluster__in=[c.pk for c in clusters]
            )
            .values("canonical__cluster_id")
            .annotate(
                n=Count("id"),
                n_devices=Count("device", distinct=True),
                n_builds=Count("build", distinct=True),
                newest=Max("captured_at"),
            )
        }
        rows = [
            ClusterRow(c, s["n"], s["n_devices"], s["n_builds"], s["newest"])
            for c in clusters
            if (s := stats.get(c.pk))
        ]
    rows.sort(key=lambda row: row.cluster.pk)
    rows.sort(key=_sort_key(filters.sort), reverse=True)
    return rows


def dropped_total(app: App) -> int:
    return CycleReport.objects.filter(app=app).aggregate(n=Sum("dropped"))["n"] or 0


def system_cluster_count(app: App) -> int:
    return Cluster.objects.filter(app=app, is_current=True, system=True).count()


def cluster_for_app(app: App, cluster_id: int | str) -> Cluster | None:
    try:
        return (
            Cluster.objects.select_related(
                "assignee", "fixed_in_build", "first_seen_build", "last_seen_build", "merged_into"
            )
            .filter(app=app)
            .get(pk=int(cluster_id))
        )
    except (Cluster.DoesNotExist, ValueError, TypeError):
        return None


@dataclass
class MemberCycle:
    loop: CanonicalCycle
    occurrences: int
    devices: int
    builds: int

    @property
    def links(self) -> list[tuple[str, list[str]]]:
        return [(cls, via) for cls, via in self.loop.canonical]


def member_cycles(cluster: Cluster) -> list[MemberCycle]:
    """The distinct loops of a cluster, most occurrences first."""
    loops = (
        CanonicalCycle.objects.filter(cluster=cluster)
        .annotate(
            n=Count("occurrences"),
            n_devices=Count("occurrences__device", distinct=True),
            n_builds=Count("occurrences__build", distinct=True),
        )
        .order_by("-n", "length", "digest")
    )
    return [MemberCycle(loop, loop.n, loop.n_devices, loop.n_builds) for loop in loops]


def minimal_cycle(members: list[MemberCycle], cluster: Cluster) -> MemberCycle | None:
    """The loop whose key is exactly the cluster's (the bad link alone), most seen first."""
    exact = [m for m in members if m.loop.key == cluster.key and m.loop.system == cluster.system]
    return exact[0] if exact else (members[0] if members else None)


def occurrences_per_build(cluster: Cluster) -> list[tuple[Build, int]]:
    """Every build of the app in release order with this cluster's occurrences (0 included, so
    a fix shows as a drop to zero)."""
    counts = dict(
        RetainCycle.objects.filter(canonical__cluster=cluster)
        .values("build_id")
        .annotate(n=Count("id"))
        .values_list("build_id", "n")
    )
    return [(build, counts.get(build.pk, 0)) for build in builds_in_release_order(cluster.app)]


def app_classes_of(cluster: Cluster, prefixes: list[str]) -> list[str]:
    return [cls for cls in cluster.key if not is_system_class(cls, prefixes)]


def cluster_counts_by_status(app: App, include_system: bool) -> dict[str, int]:
    clusters = Cluster.objects.filter(app=app, is_current=True)
    if not include_system:
        clusters = clusters.filter(system=False)
    counts = dict(clusters.values("status").annotate(n=Count("id")).values_list("status", "n"))
    return {status: counts.get(status, 0) for status in Status.values}
