"""Diffs of category tables (pure: plain data in, plain data out, no Django).

A side of a diff is a table `category -> (count, bytes)`. A category whose count and bytes are both
zero on one side counts as absent there: under a lifespan filter a category can have rows that the
filter drops, and "new" must mean "nothing of it in the base", not "no row in the base".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from memdash.allocations.logic.analysis import lifespan_counts

Status = Literal["new", "gone", "grown", "shrunk", "changed", "same"]
STATUSES: tuple[Status, ...] = ("new", "gone", "grown", "shrunk", "same")

# (count, bytes): the order the pre-aggregated tables give them in
CountBytes = tuple[int, int]
ZERO: CountBytes = (0, 0)


@dataclass(frozen=True, slots=True)
class DiffRow:
    category: str
    base_bytes: int
    target_bytes: int
    delta_bytes: int
    base_count: int
    target_count: int
    delta_count: int
    status: Status

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def delta_percent(self) -> float | None:
        """The change in percent of the base's bytes (of its count when neither side has a
        size): -100 for a category that went to nothing; None when the base has none."""
        if self.base_bytes or self.target_bytes:
            return percent_change(self.base_bytes, self.target_bytes)
        return percent_change(self.base_count, self.target_count)


def is_empty(value: CountBytes) -> bool:
    return value[0] == 0 and value[1] == 0


def count_bytes(counts: Sequence[int], lifespan: str) -> CountBytes:
    """(count, bytes) of the four counters (persistent, persistent bytes, transient, transient
    bytes) under a lifespan filter."""
    p, pb, t, tb = lifespan_counts(counts, lifespan)
    return p + t, pb + tb


def per_snapshot(value: CountBytes, divisor: int) -> CountBytes:
    """A build side's sums divided by its number of snapshots (its per-snapshot mean)."""
    if divisor == 1:
        return value
    return round(value[0] / divisor), round(value[1] / divisor)


def diff_status(base: CountBytes, target: CountBytes) -> Status:
    """new/gone when one side has nothing; else grown/shrunk by bytes, by count on a tie."""
    base_empty, target_empty = is_empty(base), is_empty(target)
    if base_empty and not target_empty:
        return "new"
    if target_empty and not base_empty:
        return "gone"
    delta_count, delta_bytes = target[0] - base[0], target[1] - base[1]
    if delta_bytes > 0 or (delta_bytes == 0 and delta_count > 0):
        return "grown"
    if delta_bytes < 0 or (delta_bytes == 0 and delta_count < 0):
        return "shrunk"
    return "same"


def _delta_order(delta_bytes: int, delta_count: int, name: str) -> tuple[int, int, str]:
    # biggest growth first, biggest shrink last; name breaks ties so the order is stable
    return (-delta_bytes, -delta_count, name)


def diff_categories(
    base: Mapping[str, CountBytes], target: Mapping[str, CountBytes]
) -> list[DiffRow]:
    """One row per category present (non-empty) on either side, the biggest growers first."""
    rows = []
    for name in set(base) | set(target):
        before, after = base.get(name, ZERO), target.get(name, ZERO)
        if is_empty(before) and is_empty(after):
            continue
        rows.append(
            DiffRow(
                category=name,
                base_bytes=before[1],
                target_bytes=after[1],
                delta_bytes=after[1] - before[1],
                base_count=before[0],
                target_count=after[0],
                delta_count=after[0] - before[0],
                status=diff_status(before, after),
            )
        )
    rows.sort(key=lambda r: _delta_order(r.delta_bytes, r.delta_count, r.category))
    return rows


def percent_change(base: float, target: float) -> float | None:
    """Growth in percent of the base; None when the base is zero (no finite percentage)."""
    if base == 0:
        return None
    return (target - base) * 100.0 / base


def summarize_diff(rows: Iterable[DiffRow]) -> dict[str, Any]:
    """Totals of both sides, their delta, how many categories have each status, top movers."""
    rows = list(rows)
    base_bytes = sum(r.base_bytes for r in rows)
    target_bytes = sum(r.target_bytes for r in rows)
    base_count = sum(r.base_count for r in rows)
    target_count = sum(r.target_count for r in rows)
    by_status = {status: 0 for status in STATUSES}
    for row in rows:
        by_status[row.status] += 1
    growers = [r for r in rows if r.delta_bytes > 0]
    shrinkers = [r for r in rows if r.delta_bytes < 0]
    return {
        "base_bytes": base_bytes,
        "target_bytes": target_bytes,
        "delta_bytes": target_bytes - base_bytes,
        "delta_percent": percent_change(base_bytes, target_bytes),
        "base_count": base_count,
        "target_count": target_count,
        "delta_count": target_count - base_count,
        "categories": len(rows),
        "statuses": by_status,
        "top_grower": growers[0].category if growers else None,
        "top_shrinker": min(shrinkers, key=lambda r: r.delta_bytes).category if shrinkers else None,
    }
