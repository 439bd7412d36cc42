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
from memdash.allocations.models import (
    AllocationRow,
    Category,
    Generation,
    Snapshot,
    TimedAllocationRow,
    Timeline,
)
from memdash.allocations.reads.snapshots import COUNTER_FIELDS, StatRow, stat_row, summary_rows


class NoSuchRange(ValueError):
    """A range this snapshot cannot be read by: it has no timeline, or the range is outside it
    (`parameter` names the value at fault)."""

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(message)
        self.parameter = parameter


@dataclass(frozen=True)
class TimeRange:
    """The part of a snapshot's timeline a range selects: the time buckets [first, last] it
    overlaps (an events snapshot: its rows by bucket, `TimedAllocationRow`), or the massif
    snapshots [first, last] taken in it (a massif run: its generations, rows of AllocationRow);
    and the times that covers (from the start of its first bucket to the end of its last, or
    from its first massif snapshot's time to its last's)."""

    snapshot_id: int
    first: int
    last: int
    from_ms: float
    to_ms: float
    column: str = "bucket"  # or "generation"

    def q(self, prefix: str = "") -> Q:
        """The rows made in the range (`prefix` for a related lookup)."""
        return Q(
            **{
                f"{prefix}snapshot_id": self.snapshot_id,
                f"{prefix}{self.column}__range": (self.first, self.last),
            }
        )

    @property
    def span(self) -> tuple[str, int, int]:
        """The range as a call-tree query keeps it (`CallTreeQuery.time_range`)."""
        return self.column, self.first, self.last

    def rows(self) -> QuerySet[TimedAllocationRow] | QuerySet[AllocationRow]:
        """The snapshot's rows made in the range (AllocationRow's columns, and for an events
        snapshot the bucket): what its statistics, call tree and allocations list read."""
        table = TimedAllocationRow if self.column == "bucket" else AllocationRow
        return table.objects.filter(self.q())

    @property
    def query_value(self) -> dict[str, str]:
        """The range as the page's and the API's query parameters give it."""
        return {"from_ms": ms_text(self.from_ms), "to_ms": ms_text(self.to_ms)}


def ms_text(ms: float) -> str:
    """A time as a URL carries it: a plain decimal (`1250`, `12.5`), never an exponent."""
    return format(ms, ".6f").rstrip("0").rstrip(".")


def buckets_of(timeline: Timeline) -> Buckets:
    return Buckets(timeline.start_ms, timeline.bucket_ms, timeline.buckets)


def timeline_of(snapshot: Snapshot) -> Timeline | None:
    return Timeline.objects.filter(snapshot_id=snapshot.pk).first()


Point = tuple[int, int, int]  # (generation index, at_ms, bytes)


def generation_points(snapshot: Snapshot) -> list[Point] | None:
    """A snapshot without a timeline of buckets whose generations are points in time: a massif
    run timed in ms (`--time-unit=ms`), each massif snapshot (a generation) with its time and
    its total bytes (ms_print's time(ms) and total(B)); or summed rows with generation marks at
    two times or more (the allocations shape), each mark with the persistent bytes made after
    it (its generation's growth, up to the next mark). None for any other snapshot. Read from
    the generations stored at ingest: nothing else is kept for it."""
    if snapshot.source_format == "massif" and "peak time" not in (snapshot.tool_figures or {}):
        return None  # ("peak time" in ms: massif.tool_figures; other units name their unit)
    points = list(
        Generation.objects.filter(snapshot=snapshot)
        .order_by("index")
        .values_list("index", "at_ms", "growth_bytes")
    )
    if snapshot.source_format != "massif" and len({at for _, at, _ in points}) < 2:
        return None  # no marks, or marks without times (FBAllocationTracker's)
    return points or None


def marks_of(snapshot: Snapshot) -> list[dict[str, Any]]:
    """The generation marks as the chart flags them."""
    return [
        {"index": index, "name": name, "at_ms": at_ms}
        for index, name, at_ms in Generation.objects.filter(snapshot=snapshot)
        .order_by("index")
        .values_list("index", "name", "at_ms")
    ]


def time_range(snapshot: Snapshot, from_ms: float | None, to_ms: float | None) -> TimeRange:
    """The range between two times of the snapshot's timeline (None: the run's start, or its
    end; two times in either order), as the buckets it overlaps (or the massif snapshots in
    it); raises NoSuchRange for a snapshot without a timeline or a range outside its run."""
    name = "from_ms" if from_ms is not None else "to_ms"
    timeline = timeline_of(snapshot)
    points = generation_points(snapshot) if timeline is None else None
    if timeline is None and not points:
        reason = no_timeline_reason(snapshot)
        raise NoSuchRange(name, f"snapshot {snapshot.pk} has no timeline: {reason}")
    if timeline is not None:
        buckets = buckets_of(timeline)
        start, end = buckets.start_ms, buckets.end_ms(buckets.count - 1)
    else:
        assert points
        start, end = points[0][1], points[-1][1]
    low = start if from_ms is None else from_ms
    high = end if to_ms is None else to_ms
    if from_ms is not None and to_ms is not None:  # a drag either way round
        low, high = min(low, high), max(low, high)
    outside = NoSuchRange(
        name, f"the range is outside the run of snapshot {snapshot.pk} ({start:g} to {end:g} ms)"
    )
    if points:
        inside = [(index, at) for index, at, _bytes in points if low <= at <= high]
        if not inside:
            raise outside
        (first, first_ms), (last, last_ms) = inside[0], inside[-1]
        return TimeRange(snapshot.pk, first, last, first_ms, last_ms, "generation")
    assert timeline is not None
    span = buckets.span(low, high)
    if span is None:
        raise outside
    first, last = span
    return TimeRange(
        snapshot.pk, first, last, start + first * buckets.width_ms, buckets.end_ms(last)
    )


def no_timeline_reason(snapshot: Snapshot) -> str:
    """Why a snapshot has no timeline, in a line."""
    if snapshot.source_format == "massif":
        return (
            "massif timed this run in instructions or bytes allocated (`--time-unit=i` or `B`), "
            "not in ms: run it with `--time-unit=ms` for a timeline"
        )
    if snapshot.event_count:
        return "its events were stored before memdash kept when each block was made"
    if snapshot.source_format == "memdash.snapshot":
        return "its upload gives allocations already summed on the device, not when each was made"
    return f"{snapshot.source_format} gives allocations already summed, not when each was made"


def timeline_chart_data(snapshot: Snapshot) -> dict[str, Any] | None:
    """What the page's chart draws, None for a snapshot without a timeline. An events run (or a
    heaptrack file): the live bytes and count at each bucket's end (the start of the run at
    zero), its generation marks, and its buckets (what a dragged range snaps to). A massif run
    timed in ms: the total bytes at each massif snapshot (massif counts bytes, not blocks: no
    count), which a range snaps to. Summed rows with generation marks in time: each
    generation's growth at its mark, the marks flagged (`kind` "marks"), a range snapping to
    them."""
    timeline = timeline_of(snapshot)
    if timeline is None:
        points = generation_points(snapshot)
        if not points:
            return None
        massif = snapshot.source_format == "massif"
        return {
            "kind": "points" if massif else "marks",
            "times": [at for _index, at, _bytes in points],
            "live_bytes": [size for _index, _at, size in points],
            "live_count": None,
            "marks": [] if massif else marks_of(snapshot),
        }
    buckets = buckets_of(timeline)
    return {
        "kind": "buckets",
        "times": [buckets.start_ms] + [buckets.end_ms(i) for i in range(buckets.count)],
        "live_bytes": [0, *timeline.live_bytes],
        "live_count": [0, *timeline.live_count],
        "marks": marks_of(snapshot),
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
