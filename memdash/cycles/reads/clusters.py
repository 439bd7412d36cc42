"""Reads of retain cycles: the clusters of an app (filtered, sorted), one cluster's details."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import (
    Case,
    Count,
    F,
    FilteredRelation,
    IntegerField,
    Max,
    OrderBy,
    Prefetch,
    Q,
    QuerySet,
    Sum,
    Value,
    When,
)

from memdash.core.models import App, Build
from memdash.core.reads.apps import builds_in_release_order
from memdash.cycles.logic.clustering import (
    WeakLink,
    chosen_link,
    cycle_from_json,
    is_system_class,
    link_to_weaken,
    links_to_offer,
    reference_from_json,
    retains,
)
from memdash.cycles.models import (
    DEFAULT_SYSTEM_PREFIXES,
    CanonicalCycle,
    Cluster,
    CycleReport,
    CycleSettings,
    RetainCycle,
)
from memdash.triage.models import Status

SORTS = {
    "occurrences": "occurrences",
    "devices": "devices",
    "builds": "builds affected",
    "newest": "newest",
}
DEFAULT_SORT = "occurrences"


def own_system_prefixes(app: App) -> list[str]:
    """The prefixes the app's admins set; empty when they use the defaults."""
    stored = CycleSettings.objects.filter(app=app).values_list("system_prefixes", flat=True)
    return list(stored.first() or [])


def system_prefixes(app: App) -> list[str]:
    """The prefixes in force: the app's own, else the defaults."""
    return own_system_prefixes(app) or list(DEFAULT_SYSTEM_PREFIXES)


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


def release_rank_of_builds(app: App) -> dict[int, int]:
    """build id → its position in release order (0 = oldest); versions sort naturally, which
    SQL cannot do, but an app has few builds."""
    return {build.pk: rank for rank, build in enumerate(builds_in_release_order(app))}


def _first_seen_rank(ranks: dict[int, int]) -> Case | Value:
    """The first-seen build's release rank as SQL (-1 for none, below every build)."""
    if not ranks:
        return Value(-1)
    whens = [When(first_seen_build_id=pk, then=Value(rank)) for pk, rank in ranks.items()]
    return Case(*whens, default=Value(-1), output_field=IntegerField())


def _sql_order(sort: str) -> list[OrderBy | str]:
    """Descending by the sort's count (then occurrences), ties by id ascending; `newest`: the
    latest first-seen build, then the latest occurrence (none last)."""
    if sort == "newest":
        return [F("first_seen_rank").desc(), F("newest_at").desc(nulls_last=True), "id"]
    column = {"devices": "devices", "builds": "builds"}.get(sort, "occurrences")
    if column == "occurrences":
        return ["-occurrences", "id"]
    return [f"-{column}", "-occurrences", "id"]


def _ranged_sort_key(sort: str, ranks: dict[int, int]) -> Callable[[RangeStats], tuple[float, ...]]:
    """The same order as `_sql_order`, over (cluster id, first-seen build id, range stats)."""

    def key(item: RangeStats) -> tuple[float, ...]:
        pk, first_seen_id, s = item
        if sort == "newest":
            newest = s["newest"]
            rank = ranks.get(first_seen_id, -1)  # type: ignore[arg-type]  # None: -1 as well
            return (-rank, newest is None, -newest.timestamp() if newest else 0, pk)
        column = {"devices": "n_devices", "builds": "n_builds"}.get(sort, "n")
        return (-s[column], -s["n"], pk)

    return key


# (cluster id, first-seen build id, its counts over a build range: n, n_devices, n_builds, newest)
RangeStats = tuple[int, int | None, Mapping[str, Any]]


class ClusterRows:
    """The sorted rows of an app's clusters, read a page at a time: `count()` is one query and
    a slice fetches only its own clusters, so 10,000 clusters never become 10,000 objects.
    Django's Paginator and the API both slice it."""

    def __init__(self, app: App, filters: ClusterFilters) -> None:
        self.app = app
        self.filters = filters
        self.clusters = _clusters(app, filters)
        self.ranked = filters.build_from is not None or filters.build_to is not None
        self._ranged: list[RangeStats] | None = None
        self._count: int | None = None

    def _range_stats(self) -> list[RangeStats]:
        """(cluster id, first-seen build id, counts over the build range), in list order; only
        the clusters seen in the range. One grouped query, then a sort of small tuples."""
        if self._ranged is None:
            app, filters = self.app, self.filters
            build_ids = [b.pk for b in builds_in_range(app, filters.build_from, filters.build_to)]
            stats = {
                row["canonical__cluster_id"]: row
                for row in RetainCycle.objects.filter(
                    app=app,
                    canonical__app=app,  # on Citus the join stays on the app's worker
                    build_id__in=build_ids,
                    canonical__cluster__in=self.clusters.order_by().values("pk"),
                )
                .values("canonical__cluster_id")
                .annotate(
                    n=Count("id"),
                    n_devices=Count("device", distinct=True),
                    n_builds=Count("build", distinct=True),
                    newest=Max("captured_at"),
                )
            }
            first_seen = dict(
                self.clusters.filter(pk__in=list(stats)).values_list("pk", "first_seen_build_id")
            )
            items: list[RangeStats] = [
                (pk, first_seen.get(pk), s) for pk, s in stats.items() if pk in first_seen
            ]
            items.sort(key=_ranged_sort_key(filters.sort, release_rank_of_builds(app)))
            self._ranged = items
        return self._ranged

    def count(self) -> int:
        if self._count is None:
            self._count = len(self._range_stats()) if self.ranked else self.clusters.count()
        return self._count

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, window: slice) -> list[ClusterRow]:
        if not isinstance(window, slice):
            raise TypeError("ClusterRows is read by slices (pages)")
        if self.ranked:
            items = self._range_stats()[window]
            by_pk = self.clusters.in_bulk([pk for pk, _first, _s in items])
            return [
                ClusterRow(by_pk[pk], s["n"], s["n_devices"], s["n_builds"], s["newest"])
                for pk, _first, s in items
            ]
        ordered = self.clusters
        if self.filters.sort == "newest":
            ordered = ordered.annotate(
                first_seen_rank=_first_seen_rank(release_rank_of_builds(self.app))
            )
        # The page's ids first, without the joins, so the database can walk the index and stop;
        # then those rows with their builds and assignee.
        ids = list(
            ordered.order_by(*_sql_order(self.filters.sort)).values_list("pk", flat=True)[window]
        )
        by_pk = self.clusters.in_bulk(ids)
        page = [by_pk[pk] for pk in ids]
        return [ClusterRow(c, c.occurrences, c.devices, c.builds, c.newest_at) for c in page]


def cluster_rows(app: App, filters: ClusterFilters) -> ClusterRows:
    """Current clusters, with counts over the build range when one is given; sorted descending
    (most first; newest = latest first-seen build, then latest occurrence), ties by id. Lazy:
    slice it for a page."""
    return ClusterRows(app, filters)


def dropped_total(app: App) -> int:
    return CycleReport.objects.filter(app=app).aggregate(n=Sum("dropped"))["n"] or 0


def system_cluster_count(app: App) -> int:
    return Cluster.objects.filter(app=app, is_current=True, system=True).count()


def cluster_for_app(app: App, cluster_id: int | str) -> Cluster | None:
    try:
        # The cluster merged into by a query of the app's, not an outer join of the table with
        # itself: Citus refuses that off the distribution column.
        merged_into = Prefetch("merged_into", queryset=Cluster.objects.filter(app=app))
        return (
            Cluster.objects.select_related(
                "assignee", "fixed_in_build", "first_seen_build", "last_seen_build"
            )
            .prefetch_related(merged_into)
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

    @property
    def ownership(self) -> list[str]:
        """The ownership of the reference into each link, "" where no tool said it."""
        known = list(self.loop.ownership)
        return (known + [""] * len(self.loop.canonical))[: len(self.loop.canonical)]

    @property
    def retains(self) -> bool:
        """False when a reference of the loop retains nothing (`__weak` …): no retain cycle by
        itself, never asked to weaken."""
        return retains(self.ownership)


# What each upload format of retain cycles is called on the pages.
TOOL_NAMES = {
    "memdash.retain-cycles": "memdash retain cycles",
    "fbretaincycledetector.text": "FBRetainCycleDetector",
    "xcode.leaks": "Xcode leaks",
}


def reported_by(cluster: Cluster) -> list[tuple[str, int]]:
    """Which tools reported the cluster's loops, with their occurrences, most first."""
    rows = (
        cluster.occurrence_rows()
        .filter(report__app_id=cluster.app_id)
        .values("report__source_format")
        .annotate(n=Count("id"))
        .order_by("-n", "report__source_format")
        .values_list("report__source_format", "n")
    )
    return [(TOOL_NAMES.get(fmt, fmt), n) for fmt, n in rows]


def member_cycles(cluster: Cluster) -> list[MemberCycle]:
    """The distinct loops of a cluster, most occurrences first."""
    # The occurrences joined by the loop and the app both (the app in the join's ON): on Citus
    # an outer join of two distributed tables must name the distribution column on both sides.
    same_app = FilteredRelation("occurrences", condition=Q(occurrences__app_id=F("app_id")))
    loops = (
        CanonicalCycle.objects.filter(app_id=cluster.app_id, cluster=cluster)
        .annotate(app_occurrences=same_app)
        .annotate(
            n=Count("app_occurrences"),
            n_devices=Count("app_occurrences__device", distinct=True),
            n_builds=Count("app_occurrences__build", distinct=True),
        )
        .order_by("-n", "length", "digest")
    )
    return [MemberCycle(loop, loop.n, loop.n_devices, loop.n_builds) for loop in loops]


def minimal_cycle(members: list[MemberCycle], cluster: Cluster) -> MemberCycle | None:
    """The loop whose key is exactly the cluster's (the bad link alone), most seen first; a loop
    that retains before one through a weak reference (which keeps nothing alive by itself)."""

    def rank(member: MemberCycle) -> tuple[bool, bool]:
        exact = member.loop.key == cluster.key and member.loop.system == cluster.system
        return not exact, not member.retains

    return min(members, key=rank) if members else None


@dataclass
class LinkToWeaken:
    """The references of the cluster's minimal loop a member may weaken (the computed one
    first), and the one shown: the member's choice, else the computed one."""

    offered: list[WeakLink]
    shown: WeakLink | None

    @property
    def computed(self) -> WeakLink | None:
        return self.offered[0] if self.offered else None

    @property
    def chosen(self) -> bool:
        return self.shown is not None and self.shown is not self.computed


def link_to_weaken_of(
    cluster: Cluster, members: list[MemberCycle], prefixes: list[str]
) -> LinkToWeaken:
    minimal = minimal_cycle(members, cluster)
    if minimal is None:
        return LinkToWeaken([], None)
    loop = cycle_from_json(minimal.loop.canonical)
    # Only loops that retain are asked which link to weaken: one through a weak reference keeps
    # nothing alive by itself, and its weak reference is never the one to weaken.
    retaining = [cycle_from_json(m.loop.canonical) for m in members if m.retains]
    computed = link_to_weaken(loop, retaining, prefixes, minimal.ownership)
    offered = links_to_offer(loop, minimal.ownership, computed)
    return LinkToWeaken(offered, chosen_link(offered, reference_from_json(cluster.link_to_weaken)))


def occurrences_per_build(cluster: Cluster) -> list[tuple[Build, int]]:
    """Every build of the app in release order with this cluster's occurrences (0 included, so
    a fix shows as a drop to zero)."""
    counts = dict(
        cluster.occurrence_rows()
        .values("build_id")
        .annotate(n=Count("id"))
        .values_list("build_id", "n")
    )
    return [(build, counts.get(build.pk, 0)) for build in builds_in_release_order(cluster.app)]


def cluster_occurrences(cluster: Cluster) -> QuerySet[RetainCycle]:
    """Every occurrence of the cluster's loops, newest first, with its build and device."""
    return (
        cluster.occurrence_rows().select_related("build", "device").order_by("-captured_at", "-pk")
    )


def app_classes_of(cluster: Cluster, prefixes: list[str]) -> list[str]:
    return [cls for cls in cluster.key if not is_system_class(cls, prefixes)]


def cluster_counts_by_status(app: App, include_system: bool) -> dict[str, int]:
    clusters = Cluster.objects.filter(app=app, is_current=True)
    if not include_system:
        clusters = clusters.filter(system=False)
    counts = dict(clusters.values("status").annotate(n=Count("id")).values_list("status", "n"))
    return {status: counts.get(status, 0) for status in Status.values}


def clusters_of_loops(app: App, digests: list[str]) -> dict[str, int]:
    """The cluster of each stored loop of the app, by the loop's digest (`cycle_digest`)."""
    rows = CanonicalCycle.objects.filter(app=app, digest__in=digests, cluster__isnull=False)
    return {digest: cluster for digest, cluster in rows.values_list("digest", "cluster_id")}
