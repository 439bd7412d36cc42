"""Diffs of category tables and call trees (pure: plain data in, plain data out, no Django).

A side of a diff is a table `category -> (count, bytes)`. A category whose count and bytes are both
zero on one side counts as absent there: under a lifespan filter a category can have rows that the
filter drops, and "new" must mean "nothing of it in the base", not "no row in the base".
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from functools import partial
from typing import Literal

from memdash.compare.stats import (
    DEFAULT_ALPHA,
    GrowthLimit,
    RankTest,
    SampleComparison,
    compare_samples,
    compare_spreads,
    runs_rank_test,
    runs_u_p,
)
from memdash.compare.summary import (
    BuildSummary,
    category_spreads,
)

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
    return _status(base[0], base[1], target[0], target[1])


def _status(
    base_count: float, base_bytes: float, target_count: float, target_bytes: float
) -> Status:
    """`diff_status` of (count, bytes) given one by one (build compare: thousands of times)."""
    base_empty = base_count == 0 and base_bytes == 0
    target_empty = target_count == 0 and target_bytes == 0
    if base_empty and not target_empty:
        return "new"
    if target_empty and not base_empty:
        return "gone"
    delta_bytes, delta_count = target_bytes - base_bytes, target_count - base_count
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


@dataclass(slots=True, eq=False)
class BuildCompareRow:
    """One category over the snapshots of two builds: per-snapshot persistent bytes and counts
    (a snapshot without the category counts as 0), their deltas and the rank test on bytes.
    Not frozen (nothing changes it): build compare makes one per category, thousands, and a
    frozen dataclass sets each field through object.__setattr__, several times slower."""

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


def build_status(
    base_present: int,
    target_present: int,
    delta_median_bytes: float | None,
    delta_mean_bytes: float | None,
    delta_mean_count: float | None,
) -> Status:
    """The status of a build compare row. new/gone: no snapshot of one build has the category.
    Else grown/shrunk by the median per-snapshot bytes, the figure the page shows first and the
    CI gate checks; only when the medians are equal (a category in few snapshots has a median
    of 0 in both builds) by the mean bytes, then by the mean count. The rows are sorted by the
    same figures (`_build_order`): the grown ones first, the shrunk ones last."""
    if base_present == 0 and target_present > 0:
        return "new"
    if target_present == 0 and base_present > 0:
        return "gone"
    for delta in (delta_median_bytes, delta_mean_bytes, delta_mean_count):
        if delta:
            return "grown" if delta > 0 else "shrunk"
    return "same"


def _build_order(
    delta_median_bytes: float | None,
    delta_mean_bytes: float | None,
    delta_mean_count: float | None,
    name: str,
) -> tuple:
    """Biggest growth of the median bytes first, then of the mean bytes and of the mean count
    (what `build_status` decides by); name breaks ties so the order is stable."""
    return (
        -(delta_median_bytes or 0.0),
        -(delta_mean_bytes or 0.0),
        -(delta_mean_count or 0.0),
        name,
    )


def compare_build_tables(
    base: Mapping[Hashable, Mapping[str, CountBytes]],
    target: Mapping[Hashable, Mapping[str, CountBytes]],
    categories: Iterable[str] | None = None,
) -> list[BuildCompareRow]:
    """Rows for every category seen in either build (or only `categories`), the biggest
    growers first (`_build_order`: by median, then mean, per-snapshot bytes). `base` and
    `target` map each snapshot of a build to its category table; every snapshot is a sample, so
    each must be present even when its table is empty."""
    names = set(categories) if categories is not None else set()
    if categories is None:
        for tables in (base, target):
            for table in tables.values():
                names.update(name for name, value in table.items() if not _is_empty(value))
    rows = [_build_row(name, _samples(base, name), _samples(target, name)) for name in names]
    return _sorted_build_rows(rows)


# A category's row of build compare as plain values, in the order of the fields of the compare
# API's rows (`dict(zip(ROW_FIELDS, values))` is the API row); then, not shown, the two builds'
# records (`summary.RECORD`) from which BuildCompareRow objects are made when a page needs them.
ROW_FIELDS = (
    "category", "status",
    "base_bytes_mean", "base_bytes_median", "base_bytes_q1", "base_bytes_q3",
    "base_bytes_min", "base_bytes_max",
    "target_bytes_mean", "target_bytes_median", "target_bytes_q1", "target_bytes_q3",
    "target_bytes_min", "target_bytes_max",
    "delta_mean_bytes", "delta_median_bytes",
    "base_count_mean", "base_count_median", "target_count_mean", "target_count_median",
    "delta_mean_count", "delta_median_count",
    "base_snapshots", "target_snapshots", "base_present", "target_present",
    "u", "p_value", "test", "significant",
)  # fmt: skip
_BASE_MEDIAN = ROW_FIELDS.index("base_bytes_median")
_TARGET_MEDIAN = ROW_FIELDS.index("target_bytes_median")
_DELTA_MEAN, _DELTA_MEDIAN, _DELTA_MEAN_COUNT = (
    ROW_FIELDS.index(f) for f in ("delta_mean_bytes", "delta_median_bytes", "delta_mean_count")
)
_U, _P_VALUE, _TEST = (ROW_FIELDS.index(f) for f in ("u", "p_value", "test"))
_RECORDS = len(ROW_FIELDS)


def compare_build_summaries(
    base: BuildSummary, target: BuildSummary, categories: Iterable[str] | None = None
) -> list[tuple]:
    """Rows (as values, ROW_FIELDS) for every category of either build (or only `categories`),
    the biggest growers first (`_build_order`): `compare_build_tables` from each
    build's summary (`summary.summarize_build`). What is left to do per category is what
    depends on both builds, the deltas and the rank test on bytes; plain tuples, because the
    API shows thousands of rows and objects for each would take longer than the figures."""
    names = set(categories) if categories is not None else set(base.names) | set(target.names)
    n1, n2 = target.snapshots, base.snapshots
    base_category, target_category = base.category, target.category
    rows = []
    for name in names:
        b, b_runs = base_category(name)
        t, t_runs = target_category(name)
        u, _, _, p, method = runs_u_p(t_runs, n1, b_runs, n2)
        # records: present, count spread (1-7), bytes spread (8-14); a spread is n, mean,
        # median, q1, q3, minimum, maximum; only the spreads of an empty build have Nones
        b_mean, t_mean, b_median, t_median = b[9], t[9], b[10], t[10]
        b_count, t_count, b_count_median, t_count_median = b[2], t[2], b[3], t[3]
        if n1 and n2:
            deltas = (t_mean - b_mean, t_median - b_median)
            count_deltas = (t_count - b_count, t_count_median - b_count_median)
        else:
            deltas = count_deltas = (None, None)
        status = build_status(b[0], t[0], deltas[1], deltas[0], count_deltas[0])
        rows.append(
            (
                name, status, *b[9:15], *t[9:15], *deltas,
                b_count, b_count_median, t_count, t_count_median, *count_deltas,
                b[8], t[8], b[0], t[0],
                u, p, method, p is not None and p < DEFAULT_ALPHA,
                b, t,
            )
        )  # fmt: skip
    rows.sort(key=_values_order)
    return rows


def _values_order(values: tuple) -> tuple:
    return _build_order(
        values[_DELTA_MEDIAN], values[_DELTA_MEAN], values[_DELTA_MEAN_COUNT], values[0]
    )


def build_compare_row(values: tuple, base: BuildSummary, target: BuildSummary) -> BuildCompareRow:
    """The row object of a row's values (`compare_build_summaries` of these summaries): the
    same figures, the rank test on bytes as found, the one on counts run when asked for."""
    name = values[0]
    b, t = values[_RECORDS], values[_RECORDS + 1]
    b_count, b_bytes = category_spreads(b)
    t_count, t_bytes = category_spreads(t)
    n1, n2 = target.snapshots, base.snapshots
    test = RankTest(values[_U], n1, n2, values[_P_VALUE], values[_TEST])
    sizes = compare_spreads(b_bytes, t_bytes, test)
    counts = compare_spreads(
        b_count, t_count, partial(_count_rank_test, target, base, name, n1, n2)
    )
    return _row(name, sizes, counts, b[0], t[0])


def _count_rank_test(
    target: BuildSummary, base: BuildSummary, name: str, n1: int, n2: int
) -> RankTest:
    return runs_rank_test(target.count_runs(name), n1, base.count_runs(name), n2)


def _build_row(
    name: str, base: tuple[list[int], list[int], int], target: tuple[list[int], list[int], int]
) -> BuildCompareRow:
    base_counts, base_sizes, base_present = base
    target_counts, target_sizes, target_present = target
    sizes = compare_samples(base_sizes, target_sizes)
    counts = compare_samples(base_counts, target_counts)
    return _row(name, sizes, counts, base_present, target_present)


def _row(
    name: str,
    sizes: SampleComparison,
    counts: SampleComparison,
    base_present: int,
    target_present: int,
) -> BuildCompareRow:
    return BuildCompareRow(
        category=name,
        bytes=sizes,
        count=counts,
        base_present=base_present,
        target_present=target_present,
        status=build_status(
            base_present, target_present, sizes.delta_median, sizes.delta_mean, counts.delta_mean
        ),
    )


def _sorted_build_rows(rows: list[BuildCompareRow]) -> list[BuildCompareRow]:
    rows.sort(
        key=lambda r: _build_order(
            r.bytes.delta_median, r.bytes.delta_mean, r.count.delta_mean, r.category
        )
    )
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
    return check_growth_of(
        ((r.category, r.bytes.base.median, r.bytes.target.median, r.bytes.p_value) for r in rows),
        limit,
        min_delta,
    )


def gate_items(values: Iterable[tuple]) -> Iterator[tuple]:
    """What `check_growth_of` reads of rows given as values (`compare_build_summaries`)."""
    for v in values:
        yield v[0], v[_BASE_MEDIAN], v[_TARGET_MEDIAN], v[_P_VALUE]


def check_growth_of(
    items: Iterable[tuple], limit: GrowthLimit, min_delta: float = 0
) -> list[GateFailure]:
    """`check_growth` of (category, base median, target median, p-value) items."""
    failures = []
    for category, base, target, p_value in items:
        base_median = base or 0.0
        target_median = target or 0.0
        delta = target_median - base_median
        if delta > min_delta and limit.exceeded(base_median, target_median):
            failures.append(
                GateFailure(
                    category=category,
                    base_bytes=base_median,
                    target_bytes=target_median,
                    delta_bytes=delta,
                    allowed_bytes=limit.allowed(base_median),
                    p_value=p_value,
                )
            )
    failures.sort(key=lambda f: -f.delta_bytes)
    return failures
