"""Writes of LeakCanary's analyses: each analysis, each of its leaks an occurrence of the cluster of
its signature (one per app, whatever device or build found it), the clusters' counts recounted
from their occurrences, and their triage sightings (a cluster fixed in a build and found in a
later one is reopened as a regression)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db.models import Count, Max, Min, Sum

from memdash.core.models import App, Build, Device
from memdash.leaks.logic.parsers.leakcanary import LIBRARY, Analysis, Leak, LeakCanaryText
from memdash.leaks.models import LeakTraceAnalysis, LeakTraceCluster, LeakTraceOccurrence
from memdash.triage.services import note_seen_in_build

MAX_TITLE = 500
MAX_SHORT = 255
EARLIEST_MS = 1_199_145_600_000  # 2008-01-01: an earlier heap dump time is no time at all


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


def clusters_for(app: App, leaks: dict[str, Leak]) -> tuple[dict[str, LeakTraceCluster], int]:
    """The app's clusters of these signatures, the missing ones created (a concurrent upload
    creating the same one is ignored and its row read back)."""
    existing = LeakTraceCluster.objects.filter(app=app, signature__in=list(leaks)).select_related(
        "first_seen_build", "last_seen_build"
    )
    found = {cluster.signature: cluster for cluster in existing}
    missing = [signature for signature in leaks if signature not in found]
    if missing:
        LeakTraceCluster.objects.bulk_create(
            [new_cluster(app, signature, leaks[signature]) for signature in missing],
            ignore_conflicts=True,
        )
        found = {cluster.signature: cluster for cluster in existing.all()}
    return found, len(missing)


def new_cluster(app: App, signature: str, leak: Leak) -> LeakTraceCluster:
    leaking = leak.leaking
    return LeakTraceCluster(
        app=app, signature=signature, library=leak.category == LIBRARY,
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
    latest: dict[str, Leak] = {}  # per signature, the trace of the latest analysis
    order = sorted(zip(analyses, parsed.analyses, strict=True), key=lambda a: a[0].captured_at)
    for _row, analysis in order:
        for leak in analysis.leaks:
            latest[leak.signature] = leak
    clusters, new = clusters_for(app, latest)
    occurrences = [
        LeakTraceOccurrence(
            analysis=row,
            cluster=clusters[leak.signature],
            build=build,
            device=device,
            captured_at=row.captured_at,
            position=position,
            retained_bytes=leak.retained_bytes
            if leak.retained_bytes is not None
            else (leak.leaking.retained_bytes if leak.leaking else None),
            retained_objects=leak.leaking.retained_objects if leak.leaking else None,
            traces=leak.traces,
            gc_root=leak.gc_root[:MAX_SHORT],
            trace=trace_rows(leak),
        )  # fmt: skip
        for row, analysis in zip(analyses, parsed.analyses, strict=True)
        for position, leak in enumerate(analysis.leaks)
    ]
    LeakTraceOccurrence.objects.bulk_create(occurrences, batch_size=2_000)
    for signature, cluster in clusters.items():  # the trace shown is the latest one
        cluster.trace, cluster.gc_root = trace_rows(latest[signature]), latest[signature].gc_root
    LeakTraceCluster.objects.bulk_update(clusters.values(), ["trace", "gc_root"])
    refresh_cluster_counts([cluster.pk for cluster in clusters.values()])
    reopened = sum(note_seen_in_build(cluster, build) for cluster in clusters.values())
    return TracesStored(
        analyses=analyses, leaks=len(occurrences), clusters=len(clusters), new_clusters=new,
        reopened=reopened, library=sum(1 for c in clusters.values() if c.library),
    )  # fmt: skip


def refresh_cluster_counts(cluster_ids: list[int]) -> None:
    """Occurrences, traces, retained bytes, devices, builds, first and last seen, recounted from
    the occurrences (so two uploads at once cannot lose each other's counts)."""
    stats = (
        LeakTraceOccurrence.objects.filter(cluster_id__in=cluster_ids)
        .values("cluster_id")
        .annotate(
            n=Count("id"),
            n_traces=Sum("traces"),
            retained=Sum("retained_bytes"),
            n_devices=Count("device_id", distinct=True),
            n_builds=Count("build_id", distinct=True),
            first=Min("captured_at"),
            last=Max("captured_at"),
        )  # fmt: skip
        .order_by()
    )
    clusters = LeakTraceCluster.objects.in_bulk(cluster_ids)
    for row in stats:
        cluster = clusters[row["cluster_id"]]
        cluster.occurrences, cluster.traces = row["n"], row["n_traces"] or 0
        cluster.retained_bytes = row["retained"] or 0
        cluster.devices, cluster.builds = row["n_devices"], row["n_builds"]
        cluster.first_seen_at, cluster.last_seen_at = row["first"], row["last"]
    LeakTraceCluster.objects.bulk_update(
        clusters.values(),
        ["occurrences", "traces", "retained_bytes", "devices", "builds", "first_seen_at",
         "last_seen_at"],
    )  # fmt: skip
