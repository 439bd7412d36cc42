"""Reads of a build's statistics table per snapshot (selectors: reads only).

The table of a build is read from the one made ahead for its filter (`build_views`) when that
was made from the snapshots the filter keeps now (or, for a large build, while it is made again);
else it is made from its snapshots' pre-aggregated totals (CategoryTotal), of the
snapshots a filter keeps: each category's median and mean per snapshot (`per_snapshot`), its
sums, the snapshots that have it and its responsible caller; the summary rows the same over
each snapshot's sums of the categories listed (those matching the search, if any).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet

from memdash.allocations.logic.analysis import SUMMARY_ALL, SUMMARY_HEAP, SUMMARY_VM
from memdash.allocations.logic.per_snapshot import (
    CallerSample,
    Counters,
    per_snapshot_row,
    responsible,
    sort_rows,
    summary_per_snapshot,
)
from memdash.allocations.models import Category, CategoryTotal, Snapshot
from memdash.allocations.reads.build_views import StoredTable, signature, stored_table, view_key
from memdash.allocations.reads.snapshots import StatRow, caller_frames, summary_label
from memdash.core.models import Build

_CHUNK = 5000  # totals read at a time


def _kept(lifespan: str) -> Q:
    """Totals with something in them under the lifespan filter."""
    persistent = Q(persistent__gt=0) | Q(persistent_bytes__gt=0)
    transient = Q(transient__gt=0) | Q(transient_bytes__gt=0)
    return {"persistent": persistent, "transient": transient}.get(lifespan, persistent | transient)


def _under(lifespan: str, p: int, pb: int, t: int, tb: int) -> Counters:
    if lifespan == "persistent":
        return p, pb, 0, 0
    if lifespan == "transient":
        return 0, 0, t, tb
    return p, pb, t, tb


def _added(a: Counters, b: Counters) -> Counters:
    return a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]


class BuildStatisticsTable:
    """The statistics table of a build per snapshot, over the snapshots given (the build's,
    as its page filters them), under a lifespan filter, a category search and a sort. Made in
    Python from the totals (a median is no SQL aggregate SQLite has); sliceable and sized, so
    Django's Paginator pages it as it pages a snapshot's table."""

    def __init__(
        self,
        build: Build,
        snapshots: QuerySet[Snapshot],
        lifespan: str = "all",
        search: str = "",
        sort: str = "total_bytes",
        descending: bool = True,
        filters: dict[str, str] | None = None,
    ) -> None:
        self.build = build
        self._snapshots = snapshots
        self.lifespan = lifespan
        self.search = search
        self.sort = sort
        self.descending = descending
        # the build page's filters that chose `snapshots`; None: chosen otherwise (never made
        # ahead)
        self.filters = filters

    @cached_property
    def snapshot_ids(self) -> list[int]:
        return list(self._snapshots.order_by("pk").values_list("pk", flat=True))

    @property
    def snapshot_count(self) -> int:
        stored = self.stored
        return stored.snapshots if stored is not None else len(self.snapshot_ids)

    @cached_property
    def stored(self) -> StoredTable | None:
        """The table made ahead that this one reads: current, or, for a build past
        MEMDASH_BUILD_TABLE_INLINE_SNAPSHOTS, the last one made (`stale`); None when the table
        is made here from the totals (a search, two filters at once, or a small build)."""
        key = view_key(**self.filters) if self.filters is not None else None
        if self.search or key is None:
            return None
        count, current = signature(self.build, **self.filters or {})
        stored = stored_table(self.build, key, self.lifespan, current)
        if stored is None or stored.current:
            self.out_of_date = stored is None and count > 0
            return stored
        self.out_of_date = True
        return stored if count > settings.MEMDASH_BUILD_TABLE_INLINE_SNAPSHOTS else None

    out_of_date = False  # no table made ahead from these snapshots (a task should make it)

    @property
    def stale(self) -> StoredTable | None:
        """The table made ahead that is shown although snapshots were stored or deleted since."""
        stored = self.stored
        return stored if stored is not None and not stored.current else None

    def _totals(self) -> Iterator[tuple[Any, ...]]:
        app = self.build.app_id  # on both sides of the join: on Citus, the app's worker only
        totals = CategoryTotal.objects.filter(
            _kept(self.lifespan), app_id=app, snapshot_id__in=self.snapshot_ids
        )
        if self.search:
            totals = totals.filter(category__app_id=app, category__name__icontains=self.search)
        yield from totals.values_list(
            "category_id", "snapshot_id", "persistent", "persistent_bytes", "transient",
            "transient_bytes", "responsible_caller", "responsible_frame_id",
        ).order_by().iterator(chunk_size=_CHUNK)  # fmt: skip

    @cached_property
    def _made(self) -> tuple[list[StatRow], list[StatRow]]:
        """(summary rows, category rows in the table's order)."""
        stored = self.stored
        if stored is not None:
            rows = stored.rows
            if (self.sort, self.descending) != ("total_bytes", True):
                rows = sort_rows(rows, self.sort, self.descending)
            return stored.summary, rows
        kinds = dict(Category.objects.filter(app_id=self.build.app_id).values_list("pk", "kind"))
        values: dict[int, list[Counters]] = {}
        callers: dict[int, list[CallerSample]] = {}
        sums: dict[int, dict[str, Counters]] = {}  # snapshot: kind: its categories' sums
        for cid, sid, p, pb, t, tb, caller, frame in self._totals():
            counters = _under(self.lifespan, p, pb, t, tb)
            values.setdefault(cid, []).append(counters)
            callers.setdefault(cid, []).append((caller, frame, counters[1] + counters[3]))
            by_kind = sums.setdefault(sid, {})
            kind = kinds.get(cid, "heap")
            by_kind[kind] = _added(by_kind.get(kind, (0, 0, 0, 0)), counters)
        names = dict(Category.objects.filter(pk__in=list(values)).values_list("pk", "name"))
        n = self.snapshot_count
        rows = [
            per_snapshot_row(names[cid], kinds[cid], found, n, responsible(callers[cid]))
            for cid, found in values.items()
        ]
        per_kind = summary_per_snapshot(sums, self.snapshot_ids)
        summary = [
            per_snapshot_row(summary_label(label, self.search), "summary", per_kind[kind], n)
            for label, kind in ((SUMMARY_ALL, "all"), (SUMMARY_HEAP, "heap"), (SUMMARY_VM, "vm"))
        ]
        return summary, sort_rows(rows, self.sort, self.descending)

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
        page = self._made[1][index]
        frames = caller_frames({r["responsible_frame_id"] for r in page} - {None})
        return [
            {**row, "responsible_frame": frames.get(row["responsible_frame_id"] or 0)}
            for row in page
        ]

    def all(self) -> list[StatRow]:
        return self[:]


def build_statistics(
    build: Build,
    snapshots: QuerySet[Snapshot] | None = None,
    lifespan: str = "all",
    search: str = "",
    sort: str = "total_bytes",
    descending: bool = True,
    filters: dict[str, str] | None = None,
) -> BuildStatisticsTable:
    """The build's statistics table per snapshot, over `snapshots` (all of the build's when
    None; a page's `filters` choose some: then the table made ahead for them is read, when
    there is one)."""
    if snapshots is None:
        chosen, filters = Snapshot.objects.filter(build=build), filters or {}
    else:
        chosen = snapshots
    return BuildStatisticsTable(build, chosen, lifespan, search, sort, descending, filters)
