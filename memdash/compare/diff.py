"""Diffs of category tables and call trees (pure: plain data in, plain data out, no Django).

A side of a diff is a table `category -> (count, bytes)`. A category whose count and bytes are both
zero on one side counts as absent there: under a lifespan filter a category can have rows that the
filter drops, and "new" must mean "nothing of it in the base", not "no row in the base".
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Literal

from memdash.compare.stats import GrowthLimit, SampleComparison, Spread, compare_samples

Status = Literal["new", "gone", "grown", "shrunk", "same"]
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

    def as_dict(self) -> dict:
        return asdict(self)


def _is_empty(value: CountBytes) -> bool:
    return value[0] == 0 and value[1] == 0


def diff_status(base: CountBytes, target: CountBytes) -> Status:
    """new/gone when one side has nothing; else grown/shrunk by bytes, by count on a tie."""
    if _is_empty(base) and not _is_empty(target):
        return "new"
    if _is_empty(target) and not _is_empty(base):
        return "gone"
    delta_bytes, delta_count = target[1] - base[1], target[0] - base[0]
    if delta_bytes > 0 or (delta_bytes == 0 and delta_count > 0):
        return "grown"
    if delta_bytes < 0 or (delta_bytes == 0 and delta_count < 0):
        return "shrunk"
    return "same"


def _delta_order(delta_bytes: int, delta_count: int, name: str) -> tuple:
    # biggest growth first, biggest shrink last; name breaks ties so the order is stable
    return (-delta_bytes, -delta_count, name)


def diff_categories(
    base: Mapping[str, CountBytes], target: Mapping[str, CountBytes]
) -> list[DiffRow]:
    """One row per category present (non-empty) on either side, the biggest growers first."""
    rows = []
    for name in set(base) | set(target):
        before, after = base.get(name, ZERO), target.get(name, ZERO)
        if _is_empty(before) and _is_empty(after):
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


def summarize_diff(rows: Iterable[DiffRow]) -> dict:
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


# ---- call trees ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TreeTotals:
    """Inclusive totals of one call-tree node on one side."""

    bytes: int = 0
    count: int = 0
    has_children: bool = False


@dataclass(frozen=True, slots=True)
class DiffNode:
    key: Hashable
    base_bytes: int
    target_bytes: int
    delta_bytes: int
    base_count: int
    target_count: int
    delta_count: int
    status: Status
    has_children: bool


EMPTY_NODE = TreeTotals()


def diff_tree_nodes(
    base: Mapping[Hashable, TreeTotals], target: Mapping[Hashable, TreeTotals]
) -> list[DiffNode]:
    """Merge the nodes of two trees that share keys (a path, or a stack node id, which is a
    path's hash) into diff nodes, the largest change (either way) first."""
    nodes = []
    for key in set(base) | set(target):
        before, after = base.get(key, EMPTY_NODE), target.get(key, EMPTY_NODE)
        if before.bytes == before.count == after.bytes == after.count == 0:
            continue
        nodes.append(
            DiffNode(
                key=key,
                base_bytes=before.bytes,
                target_bytes=after.bytes,
                delta_bytes=after.bytes - before.bytes,
                base_count=before.count,
                target_count=after.count,
                delta_count=after.count - before.count,
                status=diff_status((before.count, before.bytes), (after.count, after.bytes)),
                has_children=before.has_children or after.has_children,
            )
        )
    nodes.sort(
        key=lambda n: (
            -abs(n.delta_bytes),
            -abs(n.delta_count),
            -n.delta_bytes,
            str(n.key),
        )
    )
    return nodes


def inclusive_totals(
    self_totals: Mapping[Hashable, CountBytes],
    parent_of: Mapping[Hashable, Hashable | None],
) -> dict[Hashable, CountBytes]:
    """Inclusive (count, bytes) of every node on the path of an allocation site to its root.

    `self_totals` are the allocations made at each site; `parent_of` gives each node's parent
    (None at a root) and must cover every ancestor of every site."""
    totals: dict[Hashable, list[int]] = {}
    for site, (count, size) in self_totals.items():
        node = site
        while node is not None:
            acc = totals.setdefault(node, [0, 0])
            acc[0] += count
            acc[1] += size
            node = parent_of[node]
    return {node: (acc[0], acc[1]) for node, acc in totals.items()}


def children_by_parent(
    parent_of: Mapping[Hashable, Hashable | None], nodes: Iterable[Hashable]
) -> dict[Hashable | None, list[Hashable]]:
    """The children of each node among `nodes` (roots under None)."""
    children: dict[Hashable | None, list[Hashable]] = {}
    for node in nodes:
        children.setdefault(parent_of[node], []).append(node)
    return children


def tree_level(
    totals: Mapping[Hashable, CountBytes],
    parent_of: Mapping[Hashable, Hashable | None],
    parent: Hashable | None,
) -> dict[Hashable, TreeTotals]:
    """The children of `parent` (the roots when None) with their totals and whether they have
    children themselves: one level of a tree given by inclusive totals."""
    level = {node: totals[node] for node in totals if parent_of[node] == parent}
    has_kids = {parent_of[node] for node in totals}
    return {
        node: TreeTotals(bytes=size, count=count, has_children=node in has_kids)
        for node, (count, size) in level.items()
    }


# ---- build against build ------------------------------------------------------------------------

TOTAL_ROW = "All Heap & Anonymous VM"


@dataclass(frozen=True, slots=True)
class BuildCompareRow:
    """One category over the snapshots of two builds: per-snapshot persistent bytes and counts
    (a snapshot without the category counts as 0), their deltas and the rank test on bytes."""

    category: str
    bytes: SampleComparison
    count: SampleComparison
    base_present: int  # snapshots of the base build in which the category has allocations
    target_present: int
    status: Status

    @property
    def delta_mean_bytes(self) -> float:
        return self.bytes.delta_mean or 0.0

    @property
    def delta_median_bytes(self) -> float:
        return self.bytes.delta_median or 0.0


def _samples(
    per_snapshot: Mapping[Hashable, Mapping[str, CountBytes]], category: str
) -> tuple[list[int], list[int], int]:
    counts, sizes, present = [], [], 0
    for table in per_snapshot.values():
        count, size = table.get(category, ZERO)
        counts.append(count)
        sizes.append(size)
        present += not _is_empty((count, size))
    return counts, sizes, present


def _mean_pair(counts: Spread, sizes: Spread) -> tuple[float, float]:
    """(mean count, mean bytes) per snapshot, 0 for a build without snapshots; the status of a
    build row compares these."""
    return (counts.mean or 0.0, sizes.mean or 0.0)


def compare_build_tables(
    base: Mapping[Hashable, Mapping[str, CountBytes]],
    target: Mapping[Hashable, Mapping[str, CountBytes]],
    categories: Iterable[str] | None = None,
) -> list[BuildCompareRow]:
    """Rows for every category seen in either build (or only `categories`), the biggest
    growers (by mean per-snapshot bytes) first. `base` and `target` map each snapshot of a
    build to its category table; every snapshot is a sample, so each must be present even when
    its table is empty."""
    names = set(categories) if categories is not None else set()
    if categories is None:
        for tables in (base, target):
            for table in tables.values():
                names.update(name for name, value in table.items() if not _is_empty(value))
    rows = [_build_row(name, _samples(base, name), _samples(target, name)) for name in names]
    return _sorted_build_rows(rows)


# (counts, sizes) of a category in the snapshots where it is not empty, in any order
PresentSamples = tuple[Sequence[int], Sequence[int]]


def compare_build_samples(
    base: Mapping[str, PresentSamples],
    base_snapshots: int,
    target: Mapping[str, PresentSamples],
    target_snapshots: int,
    categories: Iterable[str] | None = None,
) -> list[BuildCompareRow]:
    """`compare_build_tables` from each category's values in the snapshots that have it (the
    other snapshots of the build count as 0), as the database groups them: no pass over every
    snapshot's table for every category. Integer values: every figure depends only on each
    sample's values, not on their order."""
    names = set(categories) if categories is not None else set(base) | set(target)
    none: PresentSamples = ((), ())
    return _sorted_build_rows(
        [
            _build_row(
                name,
                _padded(base.get(name, none), base_snapshots),
                _padded(target.get(name, none), target_snapshots),
            )
            for name in names
        ]
    )


def _padded(present: PresentSamples, snapshots: int) -> tuple[list[int], list[int], int]:
    counts, sizes = present
    zeros = [0] * (snapshots - len(sizes))
    return [*counts, *zeros], [*sizes, *zeros], len(sizes)


def _build_row(
    name: str, base: tuple[list[int], list[int], int], target: tuple[list[int], list[int], int]
) -> BuildCompareRow:
    base_counts, base_sizes, base_present = base
    target_counts, target_sizes, target_present = target
    sizes = compare_samples(base_sizes, target_sizes)
    counts = compare_samples(base_counts, target_counts)
    return BuildCompareRow(
        category=name,
        bytes=sizes,
        count=counts,
        base_present=base_present,
        target_present=target_present,
        status=diff_status(
            _mean_pair(counts.base, sizes.base), _mean_pair(counts.target, sizes.target)
        ),
    )


def _sorted_build_rows(rows: list[BuildCompareRow]) -> list[BuildCompareRow]:
    rows.sort(key=lambda r: _delta_order(r.delta_mean_bytes, r.count.delta_mean or 0.0, r.category))
    return rows


@dataclass(frozen=True, slots=True)
class GateFailure:
    category: str
    base_bytes: float  # the base build's median per-snapshot persistent bytes
    target_bytes: float
    delta_bytes: float
    allowed_bytes: float
    p_value: float | None


def check_growth(
    rows: Iterable[BuildCompareRow], limit: GrowthLimit, min_delta: float = 0
) -> list[GateFailure]:
    """The rows whose median per-snapshot persistent bytes grew by more than the limit allows
    (and by more than `min_delta` bytes, a floor below which growth is noise: a percentage of a
    48-byte category is). The median, not the mean, so one outlier device neither fails nor
    passes a build on its own."""
    failures = []
    for row in rows:
        base_median = row.bytes.base.median or 0.0
        target_median = row.bytes.target.median or 0.0
        delta = target_median - base_median
        if delta > min_delta and limit.exceeded(base_median, target_median):
            failures.append(
                GateFailure(
                    category=row.category,
                    base_bytes=base_median,
                    target_bytes=target_median,
                    delta_bytes=delta,
                    allowed_bytes=limit.allowed(base_median),
                    p_value=row.bytes.p_value,
                )
            )
    failures.sort(key=lambda f: -f.delta_bytes)
    return failures
