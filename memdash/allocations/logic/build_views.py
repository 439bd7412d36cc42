"""A build's statistics table per snapshot, made for every filter at once (pure: numpy, no Django).

A build of ten thousand devices has tens of millions of per-snapshot category totals; its page
cannot read them per request. So the table the build page shows (`per_snapshot`: each
category's median and mean per snapshot, its sums, the snapshots that have it, its responsible
caller, and the three summary rows) is made ahead, by a task, for the build as a whole and for
each value of each of its filters (trigger, device model, OS), under each lifespan filter, from
one read of the totals into columns. Medians are exact: per column the rows are sorted once by
(category, value) and every filter's selection keeps that order, so a median is two lookups.

What it makes is what `per_snapshot.per_snapshot_row` makes from the same values (a snapshot
without the category counting 0); the tests check both against hand-worked figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memdash.allocations.logic.analysis import SUMMARY_ALL, SUMMARY_HEAP, SUMMARY_VM
from memdash.allocations.logic.per_snapshot import (
    Counters,
    per_snapshot_row,
    sort_rows,
)

Ints = NDArray[np.int64]
Row = dict[str, Any]
FILTERS = ("trigger", "model", "os")  # the build page's snapshot filters
LIFESPAN_KINDS = {"all": (0, 1, 2, 3), "persistent": (0, 1), "transient": (2, 3)}
# The table's columns as sums of the four counters (p, pb, t, tb), all lifespans at once.
_COLUMNS = {
    "persistent": (0,),
    "persistent_bytes": (1,),
    "transient": (2,),
    "transient_bytes": (3,),
    "total": (0, 2),
    "total_bytes": (1, 3),
}


@dataclass
class BuildColumns:
    """A build's per-snapshot category totals as columns (one entry per stored total).

    `snapshot` indexes the build's snapshots (in id order), `category` its categories' `names`
    and `kinds` ("heap"/"vm"); `counts` is rows × (p, pb, t, tb); `caller` indexes `callers`
    ((label, frame id or None), in the order ties are broken: by label, then frame), -1 for a
    total without a responsible caller."""

    snapshots: int  # the build's snapshots (some may have no totals)
    snapshot: Ints
    category: Ints
    counts: Ints
    caller: Ints
    names: list[str]
    kinds: list[str]
    callers: list[tuple[str, int | None]]

    def __post_init__(self) -> None:
        # per column: the rows sorted by (category, value); a filter's rows keep this order
        self._orders: dict[str, Ints] = {}
        # per lifespan: what every filter's tables share (made once for all of them)
        self._under: dict[str, Ints] = {}
        self._held: dict[str, NDArray[np.bool_]] = {}
        self._sums: dict[str, Ints] = {}

    def under(self, lifespan: str) -> Ints:
        """The counters with those outside the lifespan filter zeroed."""
        if lifespan not in self._under:
            kept = np.zeros_like(self.counts)
            for i in LIFESPAN_KINDS[lifespan]:
                kept[:, i] = self.counts[:, i]
            self._under[lifespan] = kept
        return self._under[lifespan]

    def held(self, lifespan: str) -> NDArray[np.bool_]:
        """Totals with something in them under the lifespan filter."""
        if lifespan not in self._held:
            picked = self.counts[:, list(LIFESPAN_KINDS[lifespan])]
            self._held[lifespan] = np.asarray((picked > 0).any(axis=1))
        return self._held[lifespan]

    def snapshot_sums(self, lifespan: str) -> Ints:
        """(2 x snapshots) x 4: each snapshot's sums of its heap categories, then of its VM
        ones, under the lifespan filter."""
        if lifespan not in self._sums:
            counts = self.under(lifespan)
            vm = np.array([kind == "vm" for kind in self.kinds] or [False], dtype=np.int64)
            slot = vm[self.category] * self.snapshots + self.snapshot  # (kind, snapshot)
            sums = np.zeros((2 * self.snapshots, 4), dtype=np.int64)
            if len(slot):
                order = np.argsort(slot, kind="stable")
                ordered = slot[order]
                starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
                sums[ordered[starts]] = np.add.reduceat(counts[order], starts, axis=0)
            self._sums[lifespan] = sums
        return self._sums[lifespan]

    def column(self, name: str) -> Ints:
        picked = _COLUMNS[name]
        values = self.counts[:, picked[0]]
        for i in picked[1:]:
            values = values + self.counts[:, i]
        return values

    def order(self, name: str) -> Ints:
        if name not in self._orders:
            self._orders[name] = np.lexsort((self.column(name), self.category)).astype(np.int64)
        return self._orders[name]

    def sorted_values(self, name: str) -> Ints:
        """The column's values in its `order`."""
        key = f"values:{name}"
        if key not in self._orders:
            self._orders[key] = self.column(name)[self.order(name)]
        return self._orders[key]

    def caller_keys(self) -> tuple[Ints, Ints]:
        """(order, keys in that order) of the totals by (category, caller): the totals with a
        caller sorted once, so that each filter's are found by a mask."""
        if "callers" not in self._orders:
            width = max(len(self.callers), 1)
            keys = np.where(self.caller >= 0, self.category * width + self.caller, -1)
            order = np.argsort(keys, kind="stable").astype(np.int64)
            self._orders["callers"], self._orders["caller_keys"] = order, keys[order]
        return self._orders["callers"], self._orders["caller_keys"]


def filter_keys(attributes: Sequence[tuple[str, str, str]]) -> dict[tuple[str, str], Ints]:
    """(filter, value) -> the indexes of the snapshots it keeps, for the whole build ("", "")
    and each non-empty value of each filter, from each snapshot's (trigger, model, OS)."""
    keys: dict[tuple[str, str], list[int]] = {("", ""): list(range(len(attributes)))}
    for i, values in enumerate(attributes):
        for name, value in zip(FILTERS, values, strict=True):
            if value:
                keys.setdefault((name, value), []).append(i)
    return {key: np.array(ids, dtype=np.int64) for key, ids in keys.items()}


def _medians(
    cols: BuildColumns, name: str, rows: NDArray[np.bool_], present: Ints, starts: Ints, n: int
) -> NDArray[np.float64]:
    """Per category, the median of the column over `n` snapshots, of which `present[c]` have
    the category (the selected `rows`); the others count 0, so the sorted sample is the zeros
    and then the present values, in (category, value) order from `starts[c]`."""
    values = cols.sorted_values(name)[rows[cols.order(name)]]
    position = 0.5 * (n - 1)
    low = int(np.floor(position))
    high = min(low + 1, n - 1)
    zeros = n - present

    def at(i: int) -> NDArray[np.float64]:
        j = i - zeros
        inside = j >= 0
        picked = np.where(inside, values[np.clip(starts + j, 0, max(len(values) - 1, 0))], 0)
        return np.asarray(np.where(inside, picked, 0), dtype=np.float64)

    lo, hi = at(low), at(high)
    return np.asarray(lo + (hi - lo) * (position - low), dtype=np.float64)


def _responsible(
    cols: BuildColumns, rows: NDArray[np.bool_], weights: Ints, categories: int
) -> list[tuple[str, int | None]]:
    """Per category, the caller responsible in most of the selected rows (snapshots), then for
    most bytes, then first by label and frame (`per_snapshot.responsible`)."""
    out: list[tuple[str, int | None]] = [("", None)] * categories
    order, sorted_keys = cols.caller_keys()
    picked = rows[order] & (sorted_keys >= 0)
    if not picked.any():
        return out
    width = max(len(cols.callers), 1)
    keys = sorted_keys[picked]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    seen = np.diff(np.r_[starts, len(keys)])
    weight = np.add.reduceat(weights[order[picked]], starts)
    unique = keys[starts]
    category, caller = unique // width, unique % width
    best = np.lexsort((caller, -weight, -seen, category))
    first = best[np.r_[True, category[best][1:] != category[best][:-1]]]
    for c, k in zip(category[first].tolist(), caller[first].tolist(), strict=True):
        out[c] = cols.callers[k]
    return out


def _selected(cols: BuildColumns, snapshots: Ints, lifespan: str) -> NDArray[np.bool_]:
    """The totals of these snapshots (indexes) holding something under the lifespan filter."""
    chosen = np.zeros(cols.snapshots, dtype=bool)
    chosen[snapshots] = True
    return np.asarray(chosen[cols.snapshot] & cols.held(lifespan))


def category_rows(cols: BuildColumns, snapshots: Ints, lifespan: str) -> list[Row]:
    """The rows of the build's table over these snapshots (indexes) under the lifespan filter,
    unsorted: a category is there when one of the snapshots holds something of it."""
    n = len(snapshots)
    rows = _selected(cols, snapshots, lifespan)
    if not n or not rows.any():
        return []
    categories = len(cols.names)
    present = np.bincount(cols.category[rows], minlength=categories).astype(np.int64)
    starts = np.r_[0, np.cumsum(present)[:-1]].astype(np.int64)
    counts = cols.under(lifespan)
    # sums per category: the selected rows in category order, added up group by group
    by_category = cols.order("persistent")
    by_category = by_category[rows[by_category]]
    shown = np.flatnonzero(present)
    sums = np.zeros((categories, 4), dtype=np.int64)
    sums[shown] = np.add.reduceat(counts[by_category], starts[shown], axis=0)
    kinds = LIFESPAN_KINDS[lifespan]
    medians: dict[str, NDArray[np.float64]] = {}
    made: dict[str, NDArray[np.float64]] = {}
    for name, picked in _COLUMNS.items():
        # a column outside the lifespan is made of what the filter zeroed, or partly
        kept = [i for i in picked if i in kinds]
        base = _name_of(kept) if kept else ""
        if base and base not in made:
            made[base] = _medians(cols, base, rows, present, starts, n)
        medians[name] = made[base] if base else np.zeros(categories)
    callers = _responsible(cols, rows, counts[:, 1] + counts[:, 3], categories)
    median_lists = {name: m[shown].tolist() for name, m in medians.items()}
    shown_sums = sums[shown]
    mean_lists = {
        name: (shown_sums[:, list(picked)].sum(axis=1) / n).tolist()
        for name, picked in _COLUMNS.items()
    }
    out = []
    for j, (c, (p, pb, t, tb), k) in enumerate(
        zip(shown.tolist(), shown_sums.tolist(), present[shown].tolist(), strict=True)
    ):
        out.append(
            {
                "category": cols.names[c],
                "kind": cols.kinds[c],
                "persistent": p,
                "persistent_bytes": pb,
                "transient": t,
                "transient_bytes": tb,
                "total": p + t,
                "total_bytes": pb + tb,
                "responsible_caller": callers[c][0],
                "responsible_frame_id": callers[c][1],
                "median": {name: values[j] for name, values in median_lists.items()},
                "mean": {name: values[j] for name, values in mean_lists.items()},
                "snapshots": k,
            }
        )
    return out


def _name_of(kinds: list[int]) -> str:
    return next(name for name, picked in _COLUMNS.items() if list(picked) == kinds)


def summary_rows(cols: BuildColumns, snapshots: Ints, lifespan: str) -> list[Row]:
    """The summary rows (All, Heap, VM) over these snapshots: each snapshot's sums of its
    categories of that kind, per snapshot (as `per_snapshot.summary_per_snapshot`)."""
    sums = cols.snapshot_sums(lifespan)
    heap_sums, vm_sums = sums[snapshots], sums[cols.snapshots + snapshots]
    heap, vms, both = (_counters(v) for v in (heap_sums, vm_sums, heap_sums + vm_sums))
    n = len(snapshots)
    return [
        per_snapshot_row(label, "summary", values, n)
        for label, values in ((SUMMARY_ALL, both), (SUMMARY_HEAP, heap), (SUMMARY_VM, vms))
    ]


def _counters(rows: Ints) -> list[Counters]:
    return [(p, pb, t, tb) for p, pb, t, tb in rows.tolist()]


def build_table(cols: BuildColumns, snapshots: Ints, lifespan: str) -> dict[str, Any]:
    """What is stored for one filter and lifespan: the snapshots it counts, the summary rows and
    the category rows in the table's default order (largest total bytes per snapshot first)."""
    return {
        "snapshots": len(snapshots),
        "summary": summary_rows(cols, snapshots, lifespan),
        "rows": sort_rows(category_rows(cols, snapshots, lifespan), "total_bytes", True),
    }
