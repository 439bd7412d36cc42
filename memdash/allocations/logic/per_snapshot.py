"""A build's statistics table per snapshot (pure: plain data in, plain data out, no Django).

Summed over a build's snapshots, a statistics table says how much all of them held together,
which nothing on a device ever did. Per snapshot it reads as Instruments' table does: each
category's median over the snapshots (the mean beside it), a snapshot without the category
counting 0, with the number of snapshots that have it. The rows keep the sums too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from memdash.core.logic.samples import mean, median

# (persistent, persistent bytes, transient, transient bytes) of a category in one snapshot
Counters = tuple[int, int, int, int]
# the table's columns, each from the four counters
COLUMNS: dict[str, Callable[[Counters], int]] = {
    "persistent": lambda c: c[0],
    "persistent_bytes": lambda c: c[1],
    "transient": lambda c: c[2],
    "transient_bytes": lambda c: c[3],
    "total": lambda c: c[0] + c[2],
    "total_bytes": lambda c: c[1] + c[3],
}
# (caller label, its frame id or None, the category's bytes in that snapshot)
CallerSample = tuple[str, int | None, int]


def figures(
    values: Sequence[Counters], snapshots: int
) -> tuple[dict[str, float], dict[str, float]]:
    """(median, mean) per snapshot of every column, over `snapshots` snapshots of which
    `values` are those that have something (the others count 0). No snapshots: zeros."""
    zeros = [0] * max(snapshots - len(values), 0)
    medians: dict[str, float] = {}
    means: dict[str, float] = {}
    for name, column in COLUMNS.items():
        sample = [column(v) for v in values] + zeros
        medians[name] = median(sample) or 0.0
        means[name] = mean(sample) or 0.0
    return medians, means


def responsible(callers: Iterable[CallerSample]) -> tuple[str, int | None]:
    """The build's responsible caller of a category: the one responsible in most of the
    snapshots, then for most of the bytes, then by name (the same on every run)."""
    seen: Counter[tuple[str, int | None]] = Counter()
    weight: Counter[tuple[str, int | None]] = Counter()
    for label, frame, size in callers:
        if label:
            seen[(label, frame)] += 1
            weight[(label, frame)] += size
    if not seen:
        return "", None
    return min(seen, key=lambda k: (-seen[k], -weight[k], k[0], k[1] or 0))


def per_snapshot_row(
    category: str,
    kind: str,
    values: Sequence[Counters],
    snapshots: int,
    caller: tuple[str, int | None] = ("", None),
) -> dict[str, Any]:
    """A row of the build's table: the sums (as a summed table has them), `median` and `mean`
    per snapshot of each column, `snapshots` that have the category, the responsible caller."""
    p, pb, t, tb = (sum(v[i] for v in values) for i in range(4))
    medians, means = figures(values, snapshots)
    return {
        "category": category,
        "kind": kind,
        "persistent": p,
        "persistent_bytes": pb,
        "transient": t,
        "transient_bytes": tb,
        "total": p + t,
        "total_bytes": pb + tb,
        "responsible_caller": caller[0],
        "responsible_frame_id": caller[1],
        "median": medians,
        "mean": means,
        "snapshots": len(values),
    }


def summary_per_snapshot(
    per_snapshot: Mapping[int, Mapping[str, Counters]], snapshots: Sequence[int]
) -> dict[str, list[Counters]]:
    """kind ("heap", "vm", "all"): each snapshot's sums, for the summary rows (a snapshot
    without any category of a kind sums 0)."""
    out: dict[str, list[Counters]] = {"all": [], "heap": [], "vm": []}
    for sid in snapshots:
        kinds = per_snapshot.get(sid, {})
        zero = (0, 0, 0, 0)
        heap, vm = kinds.get("heap", zero), kinds.get("vm", zero)
        out["heap"].append(heap)
        out["vm"].append(vm)
        out["all"].append((heap[0] + vm[0], heap[1] + vm[1], heap[2] + vm[2], heap[3] + vm[3]))
    return out


def sort_rows(rows: list[dict[str, Any]], sort: str, descending: bool) -> list[dict[str, Any]]:
    """By a column's median per snapshot, then its mean, then the name (A to Z either way);
    `category` sorts by name alone."""
    if sort == "category":
        return sorted(
            rows, key=lambda r: (r["category"].lower(), r["category"]), reverse=descending
        )
    column = sort if sort in COLUMNS else "total_bytes"
    sign = -1 if descending else 1
    return sorted(
        rows,
        key=lambda r: (sign * r["median"][column], sign * r["mean"][column], r["category"]),
    )
