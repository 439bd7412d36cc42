"""Reads of a snapshot's timeline (`logic.timeline`): the live series the snapshot page draws,
and the time range (Instruments' inspection range) that filters its statistics, its call tree and
its allocations list to the allocations made in it.

A range is asked in ms on the upload's clock (`from_ms`, `to_ms`) and resolved to the time
buckets it overlaps (`TimeRange`): the snapshot's rows by bucket (`TimedAllocationRow`, the same
columns as AllocationRow and a bucket) are what any view of the range reads, filtered by
`TimeRange.q()`. The statistics of a range are summed from those rows by the database.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django.db.models import Q, QuerySet, Sum

from memdash.allocations.logic.analysis import BASELINE, lifespan_counts
from memdash.allocations.logic.timeline import Buckets
from memdash.allocations.models import Category, Generation, Snapshot, TimedAllocationRow, Timeline
from memdash.allocations.reads.snapshots import COUNTER_FIELDS, StatRow, stat_row, summary_rows


class NoSuchRange(ValueError):
    """A range this snapshot cannot be read by: it has no timeline, or the range is outside it
    (`parameter` names the value at fault)."""

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(message)
        self.parameter = parameter


@dataclass(frozen=True)
class TimeRange:
    """The buckets [first, last] of a snapshot's timeline that a range overlaps, and the times
    they cover (what the range really selects: from the start of its first bucket to the end of
    its last)."""

    snapshot_id: int
    first: int
    last: int
    from_ms: float
    to_ms: float

    def q(self, prefix: str = "") -> Q:
        """The TimedAllocationRow rows made in the range (`prefix` for a related lookup)."""
        return Q(**{f"{prefix}snapshot_id": self.snapshot_id, f"{prefix}bucket__range": self.span})

    @property
    def span(self) -> tuple[int, int]:
        return self.first, self.last

    def rows(self) -> QuerySet[TimedAllocationRow]:
        """The snapshot's rows made in the range (each as an AllocationRow's columns and its
        bucket): what the statistics, the call tree and the allocations list read for it."""
        return TimedAllocationRow.objects.filter(self.q())

    @property
    def query_value(self) -> dict[str, str]:
        """The range as the page's and the API's query parameters give it."""
        return {"from_ms": f"{self.from_ms:g}", "to_ms": f"{self.to_ms:g}"}


def buckets_of(timeline: Timeline) -> Buckets:
    return Buckets(timeline.start_ms, timeline.bucket_ms, timeline.buckets)


def timeline_of(snapshot: Snapshot) -> Timeline | None:
    return Timeline.objects.filter(snapshot_id=snapshot.pk).first()


def time_range(snapshot: Snapshot, from_ms: float | None, to_ms: float | None) -> TimeRange:
    """The range between two times of the snapshot's timeline (None: the run's start, or its
    end; two times in either order), as the buckets it overlaps; raises NoSuchRange for a
    snapshot without a timeline or a range outside its run."""
    timeline = timeline_of(snapshot)
    if timeline is None:
        raise NoSuchRange(
            "from_ms" if from_ms is not None else "to_ms",
            f"snapshot {snapshot.pk} has no timeline: {no_timeline_reason(snapshot)}",
        )
    buckets = buckets_of(timeline)
    start, end = buckets.start_ms, buckets.end_ms(buckets.count - 1)
    low = start if from_ms is None else from_ms
    high = end if to_ms is None else to_ms
    if from_ms is not None and to_ms is not None:  # a drag either way round
        low, high = min(low, high), max(low, high)
    span = buckets.span(low, high)
    if span is None:
        raise NoSuchRange(
            "from_ms" if from_ms is not None else "to_ms",
            f"the range is outside the run of snapshot {snapshot.pk} ({start:g} to {end:g} ms)",
        )
    first, last = span
    return TimeRange(
        snapshot.pk, first, last, start + first * buckets.width_ms, buckets.end_ms(last)
    )


def no_timeline_reason(snapshot: Snapshot) -> str:
    """Why a snapshot has no timeline, in a line."""
    if snapshot.event_count:
        return "its events were stored before memdash kept when each block was made"
    if snapshot.source_format == "memdash.snapshot":
        return "its upload gives allocations already summed on the device, not when each was made"
    return f"{snapshot.source_format} gives allocations already summed, not when each was made"


def timeline_chart_data(snapshot: Snapshot, timeline: Timeline) -> dict[str, Any]:
    """What the page's chart draws: the live series at each bucket's end (with the start of the
    run at zero), the generation marks, and the buckets (to snap a dragged range to them)."""
    buckets = buckets_of(timeline)
    times = [buckets.start_ms] + [buckets.end_ms(i) for i in range(buckets.count)]
    marks = [
        {"index": index, "name": name, "at_ms": at_ms}
        for index, name, at_ms in Generation.objects.filter(snapshot=snapshot)
        .order_by("index")
        .values_list("index", "name", "at_ms")
    ]
    return {
        "times": times,
        "live_bytes": [0, *timeline.live_bytes],
        "live_count": [0, *timeline.live_count],
        "marks": marks,
        "start_ms": buckets.start_ms,
        "bucket_ms": buckets.width_ms,
        "buckets": buckets.count,
    }


class RangeStatisticsTable:
    """The statistics table of the allocations made in a time range (of one generation of them,
    if given), summed per category by the database from the snapshot's rows by bucket; sorted,
    searched and paged in Python like a build's table (one row per category)."""

    def __init__(
        self,
        time: TimeRange,
        lifespan: str = "all",
        generation: int | str | None = None,
        search: str = "",
        sort: str = "total_bytes",
        descending: bool = True,
    ) -> None:
        self.time = time
        self.lifespan = lifespan
        self.generation = generation
        self.search = search
        self.sort = sort
        self.descending = descending

    @cached_property
    def _made(self) -> tuple[list[StatRow], list[StatRow]]:
        rows = self.time.rows()
        if self.generation == BASELINE:
            rows = rows.filter(generation__isnull=True)
        elif self.generation is not None:
            rows = rows.filter(generation=int(self.generation))
        sums = rows.values_list("category_id").annotate(*(Sum(f) for f in COUNTER_FIELDS))
        counted = {cid: counts for cid, *counts in sums.order_by()}
        categories = Category.objects.filter(pk__in=list(counted))
        if self.search:
            categories = categories.filter(name__icontains=self.search)
        heap, vm = [0, 0, 0, 0], [0, 0, 0, 0]
        table = []
        for cid, name, kind in categories.values_list("pk", "name", "kind"):
            p, pb, t, tb = lifespan_counts(counted[cid], self.lifespan)
            if not (p or pb or t or tb):
                continue
            acc = vm if kind == "vm" else heap
            for k, value in enumerate((p, pb, t, tb)):
                acc[k] += value
            table.append(stat_row(name, kind, p, pb, t, tb))
        return summary_rows(heap, vm, self.search), sort_stat_rows(
            table, self.sort, self.descending
        )

    @property
    def summary(self) -> list[StatRow]:
        return self._made[0]

    def count(self) -> int:
        return len(self._made[1])

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, index: slice) -> list[StatRow]:
        if not isinstance(index, slice):
            raise TypeError("a statistics table is read by slices (pages)")
        return self._made[1][index]

    def all(self) -> list[StatRow]:
        return self[:]


def sort_stat_rows(rows: list[StatRow], sort: str, descending: bool) -> list[StatRow]:
    """By a column (the category's name, A to Z, breaking ties), or by the name alone."""
    if sort == "category":
        return sorted(
            rows, key=lambda r: (r["category"].lower(), r["category"]), reverse=descending
        )
    column = sort if sort in STAT_COLUMNS else "total_bytes"
    sign = -1 if descending else 1
    return sorted(rows, key=lambda r: (sign * r[column], r["category"].lower(), r["category"]))


STAT_COLUMNS = ("persistent_bytes", "persistent", "transient", "transient_bytes", "total_bytes",
                "total")  # fmt: skip
