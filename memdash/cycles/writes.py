"""Writes of retain cycles: storing an upload's cycles, and re-clustering an app.

Clustering is recomputed for the whole app from the set of its distinct loops (a few thousand
at most) in bulk, so the result never depends on upload order. Occurrences are not rewritten:
they point at their distinct loop, which points at its cluster.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Count, Max, Q

from memdash.core.models import App, Build, Device
from memdash.cycles.logic.clustering import (
    ALGORITHM_VERSION,
    Cycle,
    CycleKey,
    assign_clusters,
    canonical_cycle,
    canonical_with_ownership,
    cycle_digest,
    cycle_from_json,
    cycle_to_json,
    key_digest,
    key_of_cycle,
    merged_ownership,
)
from memdash.cycles.logic.parse import ParsedCycles
from memdash.cycles.models import CanonicalCycle, Cluster, CycleReport, CycleSettings, RetainCycle
from memdash.cycles.reads import clusters as selectors

BATCH = 1000


@dataclass
class ReclusterResult:
    clusters: int = 0  # current clusters
    loops_moved: int = 0  # distinct loops whose key or cluster changed
    created: list[int] = field(default_factory=list)  # ids of new clusters


def _lock_app(app: App) -> None:
    """Serialises writers of one app's cycles (PostgreSQL row lock; SQLite writes one at a time)."""
    App.objects.select_for_update().filter(pk=app.pk).first()


def _distinct_loops(
    app: App, parsed: ParsedCycles, prefixes: list[str]
) -> dict[str, CanonicalCycle]:
    """digest → stored loop, creating the loops not seen before; what the upload says of the
    references' ownership is merged into each loop's."""
    canon_by_digest: dict[str, Cycle] = {}
    owned: dict[str, list[str]] = {}
    for index, cycle in enumerate(parsed.cycles):
        canon, ownership = canonical_with_ownership(cycle, parsed.ownership_of(index))
        digest = cycle_digest(canon)
        canon_by_digest.setdefault(digest, canon)
        if any(ownership):
            owned[digest] = merged_ownership(owned.get(digest, []), ownership)
    stored = {
        loop.digest: loop
        for loop in CanonicalCycle.objects.filter(app=app, digest__in=list(canon_by_digest))
    }
    changed = []
    for digest, known in owned.items():
        loop = stored.get(digest)
        if (
            loop is not None
            and (merged := merged_ownership(loop.ownership, known)) != loop.ownership
        ):
            loop.ownership = merged
            changed.append(loop)
    CanonicalCycle.objects.bulk_update(changed, ["ownership"], batch_size=BATCH)
    missing = []
    for digest, canon in canon_by_digest.items():
        if digest not in stored:
            key = key_of_cycle(canon, prefixes)
            missing.append(
                CanonicalCycle(
                    app=app,
                    canonical=cycle_to_json(canon),
                    ownership=owned.get(digest, []),
                    digest=digest,
                    key=list(key.classes),
                    system=key.system,
                    length=len(canon),
                )
            )
    if missing:
        CanonicalCycle.objects.bulk_create(missing, batch_size=BATCH)
        stored.update(
            {
                loop.digest: loop
                for loop in CanonicalCycle.objects.filter(
                    app=app, digest__in=[loop.digest for loop in missing]
                )
            }
        )
    return stored


def store_cycle_report(
    app: App,
    build: Build,
    device: Device | None,
    captured_at: datetime,
    parsed: ParsedCycles,
    *,
    source_format: str,
    upload_id: int | None = None,
) -> CycleReport:
    """Stores one upload's (already validated) cycles, re-clusters the app, and notes the build
    on every cluster the upload touched (which reopens clusters fixed in an earlier build)."""
    with transaction.atomic():
        _lock_app(app)
        prefixes = selectors.system_prefixes(app)
        report = CycleReport.objects.create(
            app=app,
            build=build,
            device=device,
            captured_at=captured_at,
            upload_id=upload_id,
            source_format=source_format,
            cycles=len(parsed.cycles),
            dropped=parsed.dropped,
        )
        loops = _distinct_loops(app, parsed, prefixes)
        RetainCycle.objects.bulk_create(
            [
                RetainCycle(
                    report=report,
                    canonical=loops[cycle_digest(canonical_cycle(cycle))],
                    app=app,
                    build=build,
                    device=device,
                    captured_at=captured_at,
                )
                for cycle in parsed.cycles
            ],
            batch_size=BATCH,
        )
        outdated = (
            Cluster.objects.filter(app=app, is_current=True)
            .exclude(algorithm_version=ALGORITHM_VERSION)
            .exists()
        )
        # A new algorithm version re-clusters everything once; otherwise only what changed.
        new_loops = None if outdated else [loop.pk for loop in loops.values()]
        recluster_app(app, locked=True, new_loops=new_loops)
        # the app named on both sides: on Citus the join stays on the app's worker
        touched = Cluster.objects.filter(
            app=app, members__app=app, members__in=[loop.pk for loop in loops.values()]
        ).distinct()
        for cluster in touched.order_by("pk"):
            cluster.seen_in(build)
    return report


def recluster_app(
    app: App, *, locked: bool = False, new_loops: list[int] | None = None
) -> ReclusterResult:
    """Recomputes the clusters from the set of the app's loops, then the counts.

    In full (the default, and after the prefix list changed), every loop's key is recomputed from
    its canonical form with the app's current prefixes and every cluster is recounted. After an
    upload (`new_loops`: the loops it brought, keyed as they were stored), the stored keys are
    used and only the clusters the upload or the re-clustering touched are recounted."""
    with transaction.atomic():
        if not locked:
            _lock_app(app)
        prefixes = selectors.system_prefixes(app)
        full = new_loops is None
        loops = list(
            CanonicalCycle.objects.filter(app=app)
            .values_list("id", "canonical" if full else "key", "key", "system", "cluster_id")
            .order_by("id")
        )
        key_by_loop = {
            loop_id: key_of_cycle(cycle_from_json(form), prefixes)
            if full
            else CycleKey(tuple(form), system)
            for loop_id, form, _key, system, _cluster in loops
        }
        assignment = assign_clusters(key_by_loop.values())
        clusters, created = _clusters_for(app, set(assignment.values()))
        moved_from_to = _assign_loops(loops, key_by_loop, assignment, clusters)
        dirty = None
        if new_loops is not None:  # not full
            cluster_of_loop = {
                loop_id: clusters[assignment[key]].pk for loop_id, key in key_by_loop.items()
            }
            dirty = set(created) | {cluster_of_loop[loop_id] for loop_id in new_loops}
            dirty |= {pk for pair in moved_from_to for pk in pair if pk is not None}
        _refresh_cluster_counts(app, assignment, clusters, dirty)
    current = set(assignment.values())
    return ReclusterResult(clusters=len(current), loops_moved=len(moved_from_to), created=created)


def _clusters_for(app: App, keys: set[CycleKey]) -> tuple[dict[CycleKey, Cluster], list[int]]:
    """The app's Cluster row of each key, creating the missing ones."""

    def by_identity() -> dict[tuple[bool, str], Cluster]:
        return {(c.system, c.key_digest): c for c in Cluster.objects.filter(app=app)}

    existing = by_identity()
    missing = [
        Cluster(
            app=app,
            key=list(key.classes),
            key_digest=key_digest(key.classes),
            system=key.system,
            algorithm_version=ALGORITHM_VERSION,
        )
        for key in sorted(keys)
        if (key.system, key_digest(key.classes)) not in existing
    ]
    created: list[int] = []
    if missing:
        Cluster.objects.bulk_create(missing, batch_size=BATCH)
        before = set(c.pk for c in existing.values())
        existing = by_identity()
        created = sorted(c.pk for c in existing.values() if c.pk not in before)
    return {key: existing[(key.system, key_digest(key.classes))] for key in keys}, created


def _assign_loops(
    loops: list[tuple[int, Any, list[str], bool, int | None]],
    key_by_loop: dict[int, CycleKey],
    assignment: dict[CycleKey, CycleKey],
    clusters: dict[CycleKey, Cluster],
) -> list[tuple[int | None, int]]:
    """Stores the loops' new keys and clusters; answers (old, new) cluster id of each moved."""
    changed = []
    moved = []
    for loop_id, _canonical, stored_key, stored_system, cluster_id in loops:
        key = key_by_loop[loop_id]
        cluster = clusters[assignment[key]]
        if (
            stored_key != list(key.classes)
            or stored_system != key.system
            or cluster_id != cluster.pk
        ):
            changed.append(
                CanonicalCycle(
                    id=loop_id, key=list(key.classes), system=key.system, cluster=cluster
                )
            )
            moved.append((cluster_id, cluster.pk))
    CanonicalCycle.objects.bulk_update(changed, ["key", "system", "cluster"], batch_size=BATCH)
    return moved


_COUNTED_FIELDS = [
    "is_current",
    "merged_into_id",
    "algorithm_version",
    "occurrences",
    "devices",
    "builds",
    "cycles",
    "newest_at",
    "first_seen_build_id",
    "last_seen_build_id",
]


def _refresh_cluster_counts(
    app: App,
    assignment: dict[CycleKey, CycleKey],
    clusters: dict[CycleKey, Cluster],
    dirty: set[int] | None,
) -> None:
    """Counts, first/last seen and current-ness of the clusters in `dirty` (all when None) and
    of the clusters no longer current (they hold no occurrence, so they cost no counting)."""
    # the app of the loops too: they are joined (canonical__…), on Citus on the app's worker
    occurrences = RetainCycle.objects.filter(app=app, canonical__app=app)
    rows_to_update = Cluster.objects.filter(app=app)
    if dirty is not None:
        occurrences = occurrences.filter(canonical__cluster_id__in=dirty)
        current_ids = [cluster.pk for cluster in clusters.values()]
        rows_to_update = rows_to_update.filter(Q(pk__in=dirty) | ~Q(pk__in=current_ids))
    stats = {
        row["canonical__cluster_id"]: row
        for row in occurrences.values("canonical__cluster_id").annotate(
            n=Count("id"),
            n_devices=Count("device", distinct=True),
            n_builds=Count("build", distinct=True),
            n_loops=Count("canonical", distinct=True),
            newest=Max("captured_at"),
        )
    }
    builds_of: dict[int, set[int]] = defaultdict(set)
    for cluster_id, build_id in occurrences.values_list(
        "canonical__cluster_id", "build_id"
    ).distinct():
        builds_of[cluster_id].add(build_id)
    builds = {build.pk: build for build in Build.objects.filter(app=app)}
    current = {cluster.pk: key for key, cluster in clusters.items()}
    cluster_of_key = {key: clusters[target] for key, target in assignment.items()}

    changed = []
    for cluster in rows_to_update:
        before = [getattr(cluster, field) for field in _COUNTED_FIELDS]
        row = stats.get(cluster.pk)
        cluster.is_current = cluster.pk in current
        cluster.merged_into = None
        if cluster.is_current:
            cluster.algorithm_version = ALGORITHM_VERSION
        else:
            # Its key may still be a loop's key, now inside a shorter one: point there.
            own_key = CycleKey(tuple(cluster.key), cluster.system)
            target = cluster_of_key.get(own_key)
            cluster.merged_into = target if target is not None and target.pk != cluster.pk else None
        cluster.occurrences = row["n"] if row else 0
        cluster.devices = row["n_devices"] if row else 0
        cluster.builds = row["n_builds"] if row else 0
        cluster.cycles = row["n_loops"] if row else 0
        cluster.newest_at = row["newest"] if row else cluster.newest_at
        seen = sorted(
            (builds[b] for b in builds_of.get(cluster.pk, ())), key=lambda b: b.release_key
        )
        if seen:
            cluster.first_seen_build, cluster.last_seen_build = seen[0], seen[-1]
        if [getattr(cluster, field) for field in _COUNTED_FIELDS] != before:
            changed.append(cluster)  # only these are written: bulk_update is costly per row
    Cluster.objects.bulk_update(changed, _COUNTED_FIELDS, batch_size=BATCH)


def set_system_prefixes(app: App, prefixes: list[str]) -> ReclusterResult:
    """Saves the app's own prefix list (empty: the defaults) and re-clusters with it."""
    with transaction.atomic():
        _lock_app(app)
        CycleSettings.objects.update_or_create(app=app, defaults={"system_prefixes": prefixes})
        return recluster_app(app, locked=True)
