"""Writes of LeakCanary's analyses: each analysis, each of its leaks an occurrence of the cluster of
its signature (one per app, whatever device or build found it), the clusters' counts recounted
from their occurrences, and their triage sightings (a cluster fixed in a build and found in a
later one is reopened as a regression)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import batched
from typing import Any

from django.db.models import Count, Max, Min, OuterRef, Subquery, Sum
from django.db.models.functions import Coalesce

from memdash.core.models import App, Build, Device
from memdash.leaks.logic.parsers.leakcanary import LIBRARY, Analysis, Leak, LeakCanaryText
from memdash.leaks.models import LeakTraceAnalysis, LeakTraceCluster, LeakTraceOccurrence
from memdash.triage.models import Status

MAX_TITLE = 500
MAX_SHORT = 255
EARLIEST_MS = 1_199_145_600_000  # 2008-01-01: an earlier heap dump time is no time at all
CHUNK = 500  # clusters read, created or updated at a time (SQLite's bound on query parameters)
BATCH = 2_000  # occurrences inserted at a time


@dataclass(frozen=True)
class TracesStored:
    analyses: list[LeakTraceAnalysis]
    leaks: int
    clusters: int
    new_clusters: int
    reopened: int
    library: int

    def counts(self) -> dict[str, int]:
        return {
            "analyses": len(self.analyses),
            "leaks": self.leaks,
            "clusters": self.clusters,
            "new_clusters": self.new_clusters,
            "library_leaks": self.library,
            "reopened": self.reopened,
        }


def trace_rows(leak: Leak) -> list[dict[str, Any]]:
    """The trace as stored: each object with its verdict, reason, what it retains, labels and
    the reference to the next, `suspect` where LeakCanary underlined it."""
    rows = []
    for obj in leak.objects:
        row: dict[str, Any] = {"class": obj.cls, "type": obj.type, "verdict": obj.verdict}
        for key, value in (
            ("reason", obj.reason),
            ("retained", obj.retained),
            ("retained_bytes", obj.retained_bytes),
            ("retained_objects", obj.retained_objects),
            ("labels", obj.labels),
            ("reference", obj.reference),
        ):
            if value not in ("", None, []):
                row[key] = value
        if obj.suspect:
            row["suspect"] = True
        rows.append(row)
    return rows


def heap_dump_time(analysis: Analysis) -> datetime | None:
    """`Heap dump timestamp:` (milliseconds since 1970), when it names a time."""
    text = analysis.metadata.get("Heap dump timestamp", "")
    if not text.isdigit() or int(text) < EARLIEST_MS:
        return None
    try:
        return datetime.fromtimestamp(int(text) / 1000, UTC)
    except (OverflowError, ValueError, OSError):
        return None


def analysis_row(
    app: App, build: Build, device: Device | None, analysis: Analysis, position: int,
    received_at: datetime, upload_id: int | None,
) -> LeakTraceAnalysis:  # fmt: skip
    metadata = analysis.metadata
    return LeakTraceAnalysis(
        app=app, build=build, device=device, upload_id=upload_id, position=position,
        captured_at=heap_dump_time(analysis) or received_at, received_at=received_at,
        leakcanary_version=metadata.get("LeakCanary version", "")[:32],
        process=metadata.get("App process name", "")[:MAX_SHORT],
        application_leaks=analysis.stated.get("application", 0),
        library_leaks=analysis.stated.get(LIBRARY, 0),
        unreachable_objects=analysis.stated.get("unreachable"),
        unreachable=analysis.unreachable, metadata=metadata,
    )  # fmt: skip


def clusters_for(
    app: App, build: Build, leaks: dict[str, Leak]
) -> tuple[dict[str, LeakTraceCluster], set[str]]:
    """The app's clusters of these signatures and the signatures of those created here, as first
    and last seen in `build`, with the trace given (a concurrent upload creating the same one is
    ignored and its row read back); CHUNK signatures at a time."""
    found: dict[str, LeakTraceCluster] = {}
    new: set[str] = set()
    for chunk in batched(leaks, CHUNK):
        existing = LeakTraceCluster.objects.filter(app=app, signature__in=chunk).select_related(
            "first_seen_build", "last_seen_build"
        )
        these = {cluster.signature: cluster for cluster in existing}
        missing = [signature for signature in chunk if signature not in these]
        if missing:
            LeakTraceCluster.objects.bulk_create(
                [new_cluster(app, build, signature, leaks[signature]) for signature in missing],
                ignore_conflicts=True,
            )
            these = {cluster.signature: cluster for cluster in existing.all()}
            new.update(missing)
        found.update(these)
    return found, new


def new_cluster(app: App, build: Build, signature: str, leak: Leak) -> LeakTraceCluster:
    leaking = leak.leaking
    return LeakTraceCluster(
        app=app, first_seen_build=build, last_seen_build=build, signature=signature,
        library=leak.category == LIBRARY,
        title=leak.title[:MAX_TITLE], leaking_class=(leaking.cls if leaking else "")[:MAX_TITLE],
        pattern=leak.pattern, description=leak.description, gc_root=leak.gc_root[:MAX_SHORT],
        trace=trace_rows(leak),
    )  # fmt: skip


def store_leakcanary(
    app: App,
    build: Build,
    device: Device | None,
    parsed: LeakCanaryText,
    *,
    received_at: datetime,
    upload_id: int | None = None,
) -> TracesStored:
    """Store parsed (already validated) analyses: each analysis, each leak an occurrence."""
    analyses = LeakTraceAnalysis.objects.bulk_create(
        [
            analysis_row(app, build, device, analysis, position, received_at, upload_id)
            for position, analysis in enumerate(parsed.analyses)
        ]
    )
    latest: dict[str, tuple[Leak, datetime]] = {}  # per signature, its latest analysis's trace
    order = sorted(zip(analyses, parsed.analyses, strict=True), key=lambda a: a[0].captured_at)
    for row, analysis in order:
        for leak in analysis.leaks:
            latest[leak.signature] = (leak, row.captured_at)
    clusters, new = clusters_for(app, build, {sig: leak for sig, (leak, _at) in latest.items()})

    def occurrences() -> Iterator[LeakTraceOccurrence]:
        for row, analysis in zip(analyses, parsed.analyses, strict=True):
            for position, leak in enumerate(analysis.leaks):
                leaking = leak.leaking
                yield LeakTraceOccurrence(
                    analysis=row, app_id=row.app_id, cluster=clusters[leak.signature],
                    build=build, device=device,
                    captured_at=row.captured_at, position=position,
                    retained_bytes=leak.retained_bytes
                    if leak.retained_bytes is not None
                    else (leaking.retained_bytes if leaking else None),
                    retained_objects=leaking.retained_objects if leaking else None,
                    traces=leak.traces, gc_root=leak.gc_root[:MAX_SHORT], trace=trace_rows(leak),
                )  # fmt: skip

    stored = 0
    for batch in batched(occurrences(), BATCH):  # built a batch at a time, not all at once
        LeakTraceOccurrence.objects.bulk_create(batch)
        stored += len(batch)
    for signature, cluster in clusters.items():  # the trace shown is the latest one
        leak, at = latest[signature]
        if signature not in new and (cluster.last_seen_at is None or at >= cluster.last_seen_at):
            LeakTraceCluster.objects.filter(pk=cluster.pk).update(
                trace=trace_rows(leak), gc_root=leak.gc_root[:MAX_SHORT]
            )
    refresh_cluster_counts([cluster.pk for cluster in clusters.values()])
    # Sightings: only the clusters whose triage could change are asked (the service locks each).
    reopened = sum(
        cluster.seen_in(build)
        for cluster in clusters.values()
        if sighting_may_change(cluster, build)
    )
    return TracesStored(
        analyses=analyses, leaks=stored, clusters=len(clusters), new_clusters=len(new),
        reopened=reopened, library=sum(1 for c in clusters.values() if c.library),
    )  # fmt: skip


def sighting_may_change(cluster: LeakTraceCluster, build: Build) -> bool:
    """Whether seeing `cluster` in `build` could change its triage: it was marked fixed, or the
    build lies outside the builds it was seen in."""
    if cluster.status == Status.FIXED:
        return True
    first, last = cluster.first_seen_build, cluster.last_seen_build
    if first is None or last is None:
        return True
    return build.release_key < first.release_key or build.release_key > last.release_key


def refresh_cluster_counts(cluster_ids: list[int]) -> None:
    """Occurrences, traces, retained bytes, devices, builds, first and last seen, recounted from
    the occurrences (so two uploads at once cannot lose each other's counts): one UPDATE of
    CHUNK clusters at a time, each figure a subquery over the cluster's occurrences."""
    of_cluster = (
        # The app too: on Citus a subquery runs beside its row only when it names the app.
        LeakTraceOccurrence.objects.filter(cluster_id=OuterRef("pk"), app_id=OuterRef("app_id"))
        .order_by()
        .values("cluster_id")
    )

    def figure(aggregate: Any, default: Any = None) -> Any:
        value = Subquery(of_cluster.annotate(figure=aggregate).values("figure")[:1])
        return value if default is None else Coalesce(value, default)

    for chunk in batched(cluster_ids, CHUNK):
        LeakTraceCluster.objects.filter(pk__in=chunk).update(
            occurrences=figure(Count("id"), 0),
            traces=figure(Sum("traces"), 0),
            retained_bytes=figure(Sum("retained_bytes"), 0),
            devices=figure(Count("device_id", distinct=True), 0),
            builds=figure(Count("build_id", distinct=True), 0),
            first_seen_at=figure(Min("captured_at")),
            last_seen_at=figure(Max("captured_at")),
        )
