"""Build against build, per category (pure: plain data in, plain data out, no Django).

Each category of two builds is described over the snapshots of each (its per-snapshot persistent
bytes and counts, 0 in a snapshot without it), with the deltas and the rank test on bytes. One
statistic throughout: the median per snapshot (the mean beside it); a change is grown or shrunk
only when the rank test finds it at the chosen significance level (`alpha`), else it is
"changed, not significant". A
comparison's rows are plain tuples of values (ROW_FIELDS, the API's rows): thousands of them, and
objects for each would cost more than working out the figures (the garbage collector scans every
object made). BuildCompareRow objects are made from them only for the rows a page shows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from memdash.compare.logic.category_diff import ZERO, CountBytes, is_empty
from memdash.compare.logic.run_merge import Columns, merged_by_category
from memdash.compare.logic.stats import (
    DEFAULT_ALPHA,
    EXACT_MAX_SIZE,
    RankTest,
    SampleComparison,
    compare_samples,
    compare_spreads,
    merged_u_p,
    runs_rank_test,
    runs_u_p,
)
from memdash.compare.logic.summary import BuildSummary, category_spreads

if TYPE_CHECKING:
    from memdash.core.models import Build

TOTAL_ROW = "All Heap & Anonymous VM"
# new/gone: no snapshot of one build has the category; grown/shrunk: a significant change;
# changed: the figures moved but the rank test does not tell the builds apart; same: nothing moved
BuildStatus = Literal["new", "gone", "grown", "shrunk", "changed", "same"]
STATUS_LABELS: dict[str, str] = {"changed": "changed, not significant"}
# A category's row as values: ROW_FIELDS, then the two builds' records (`summary.RECORD`)
RowValues = tuple[Any, ...]


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
    status: BuildStatus
    significant: bool  # the rank test on bytes at the comparison's alpha

    @property
    def status_label(self) -> str:
        return STATUS_LABELS.get(self.status, self.status)

    @property
    def delta_mean_bytes(self) -> float:
        return self.bytes.delta_mean or 0.0

    @property
    def delta_median_bytes(self) -> float:
        return self.bytes.delta_median or 0.0


def _samples(
    per_snapshot: Mapping[int, Mapping[str, CountBytes]], category: str
) -> tuple[list[int], list[int], int]:
    counts, sizes, present = [], [], 0
    for table in per_snapshot.values():
        count, size = table.get(category, ZERO)
        counts.append(count)
        sizes.append(size)
        present += not is_empty((count, size))
    return counts, sizes, present


def build_status(
    base_present: int,
    target_present: int,
    delta_median_bytes: float | None,
    delta_mean_bytes: float | None,
    delta_mean_count: float | None,
    p_value: float | None = None,
    alpha: float = DEFAULT_ALPHA,
) -> BuildStatus:
    """The status of a build compare row. new/gone: no snapshot of one build has the category.
    Else, when something moved: grown/shrunk when the rank test on bytes is significant
    (p < alpha), in the direction of the median per-snapshot bytes (the figure the page shows
    first and the CI gate checks; where the medians are equal, a category in few snapshots, of
    the mean bytes, then of the mean count); "changed" (not significant) when it is not. "same"
    when nothing moved."""
    if base_present == 0 and target_present > 0:
        return "new"
    if target_present == 0 and base_present > 0:
        return "gone"
    for delta in (delta_median_bytes, delta_mean_bytes, delta_mean_count):
        if delta:
            if p_value is None or p_value >= alpha:
                return "changed"
            return "grown" if delta > 0 else "shrunk"
    return "same"


def build_order(
    significant: bool,
    delta_median_bytes: float | None,
    delta_mean_bytes: float | None,
    delta_mean_count: float | None,
    name: str,
) -> tuple[bool, float, float, float, str]:
    """The default order of build compare: the significant changes first, then the biggest
    change either way, by the median per-snapshot bytes, then the mean bytes, then the mean
    count; name breaks ties so the order is stable."""
    return (
        not significant,
        -abs(delta_median_bytes or 0.0),
        -abs(delta_mean_bytes or 0.0),
        -abs(delta_mean_count or 0.0),
        name,
    )


def compare_build_tables(
    base: Mapping[int, Mapping[str, CountBytes]],
    target: Mapping[int, Mapping[str, CountBytes]],
    categories: Iterable[str] | None = None,
    alpha: float = DEFAULT_ALPHA,
) -> list[BuildCompareRow]:
    """Rows for every category seen in either build (or only `categories`), in `build_order`
    (significant changes first, then by the size of the change). `base` and
    `target` map each snapshot of a build to its category table; every snapshot is a sample, so
    each must be present even when its table is empty."""
    names = set(categories) if categories is not None else set()
    if categories is None:
        for tables in (base, target):
            for table in tables.values():
                names.update(name for name, value in table.items() if not is_empty(value))
    rows = [_build_row(name, _samples(base, name), _samples(target, name), alpha) for name in names]
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
BASE_MEDIAN = ROW_FIELDS.index("base_bytes_median")
TARGET_MEDIAN = ROW_FIELDS.index("target_bytes_median")
_DELTA_MEAN, _DELTA_MEDIAN, _DELTA_MEAN_COUNT = (
    ROW_FIELDS.index(f) for f in ("delta_mean_bytes", "delta_median_bytes", "delta_mean_count")
)
_U, P_VALUE, _TEST, _SIGNIFICANT = (
    ROW_FIELDS.index(f) for f in ("u", "p_value", "test", "significant")
)
_RECORDS = len(ROW_FIELDS)


def compare_build_summaries(
    base: BuildSummary,
    target: BuildSummary,
    categories: Iterable[str] | None = None,
    alpha: float = DEFAULT_ALPHA,
) -> list[RowValues]:
    """Rows (as values, ROW_FIELDS) for every category of either build (or only `categories`),
    in `build_order`: `compare_build_tables` from each
    build's summary (`summary.summarize_build`). What is left to do per category is what
    depends on both builds, the deltas and the rank test on bytes; plain tuples, because the
    API shows thousands of rows and objects for each would take longer than the figures."""
    # in the target's order, so that its runs are taken as they are (`run_merge._picked`)
    chosen = set(categories) if categories is not None else set(base.names) | set(target.names)
    names = [n for n in target.names if n in chosen]
    names += sorted(chosen.difference(names))
    n1, n2 = target.snapshots, base.snapshots
    base_category, target_category = base.category, target.category
    rows: list[RowValues] = []
    for name, (u, p, method) in zip(names, _bytes_tests(names, target, base), strict=True):
        b, _ = base_category(name)
        t, _ = target_category(name)
        # records: present, count spread (1-7), bytes spread (8-14); a spread is n, mean,
        # median, q1, q3, minimum, maximum; only the spreads of an empty build have Nones
        b_mean, t_mean, b_median, t_median = b[9], t[9], b[10], t[10]
        b_count, t_count, b_count_median, t_count_median = b[2], t[2], b[3], t[3]
        if n1 and n2:
            deltas = (t_mean - b_mean, t_median - b_median)
            count_deltas = (t_count - b_count, t_count_median - b_count_median)
        else:
            deltas = count_deltas = (None, None)
        status = build_status(b[0], t[0], deltas[1], deltas[0], count_deltas[0], p, alpha)
        rows.append(
            (
                name, status, *b[9:15], *t[9:15], *deltas,
                b_count, b_count_median, t_count, t_count_median, *count_deltas,
                b[8], t[8], b[0], t[0],
                u, p, method, p is not None and p < alpha,
                b, t,
            )
        )  # fmt: skip
    rows.sort(key=_values_order)
    return rows


def _bytes_tests(
    names: list[str], target: BuildSummary, base: BuildSummary
) -> list[tuple[float, float | None, str]]:
    """(U, p-value, method) of the rank test on each category's bytes per snapshot, target
    against base: `runs_u_p` of their runs, all categories merged at once when the test is the
    asymptotic one (`run_merge.merged_by_category`; 2,000 categories of 10,000 snapshots took
    0.2 s one by one)."""
    n1, n2 = target.snapshots, base.snapshots
    if n1 == 0 or n2 == 0 or (n1 <= EXACT_MAX_SIZE and n2 <= EXACT_MAX_SIZE):
        return [
            (u, p, method)
            for u, _, _, p, method in (
                runs_u_p(target.category(name)[1], n1, base.category(name)[1], n2) for name in names
            )
        ]
    (x, x_picks), (y, y_picks) = _bytes_picks(target, names), _bytes_picks(base, names)
    u2s, boths = merged_by_category(x, y, x_picks, y_picks)
    tests: list[tuple[float, float | None, str]] = []
    for name, u2, both in zip(names, u2s.tolist(), boths.tolist(), strict=True):
        t_cubes, b_cubes = target.category(name)[1][2], base.category(name)[1][2]
        tests.append((*merged_u_p(u2, both, t_cubes, b_cubes, n1, n2), "asymptotic"))
    return tests


def _bytes_picks(summary: BuildSummary, names: list[str]) -> tuple[Columns, np.ndarray]:
    """The summary's runs of bytes with the runs of a category it does not have (all its
    snapshots at 0) as one more sample after them, and which sample each name's is."""
    absent = len(summary.names)
    picks = np.fromiter((summary.index.get(n, absent) for n in names), np.int64, len(names))
    columns: Columns = (summary.bytes_values, summary.bytes_counts, summary.bytes_starts)
    if (picks == absent).any():  # (a million runs: copied only when needed)
        values, counts, _ = summary.absent[1]
        columns = (
            np.concatenate((np.asarray(columns[0], np.int64), np.asarray(values))),
            np.concatenate((np.asarray(columns[1], np.int64), np.asarray(counts))),
            np.append(np.asarray(columns[2], np.int64), columns[2][-1] + 1),
        )
    return columns, picks


def movers(values: list[RowValues], count: int) -> list[RowValues]:
    """The `count` rows whose median per-snapshot bytes moved most either way (by the mean when
    the medians did not move), of those that moved at all (else of all of them)."""

    def change(v: RowValues) -> float:
        return float(abs(v[_DELTA_MEDIAN] or 0) or abs(v[_DELTA_MEAN] or 0))

    moved = [v for v in values if change(v)] or values
    return sorted(moved, key=lambda v: -change(v))[:count]


def _values_order(values: RowValues) -> tuple[bool, float, float, float, str]:
    return build_order(
        values[_SIGNIFICANT],
        values[_DELTA_MEDIAN],
        values[_DELTA_MEAN],
        values[_DELTA_MEAN_COUNT],
        values[0],
    )


# The page's sortable columns: what each sorts by, a row's values (ROW_FIELDS) in, a number or
# text out (None, a build without snapshots, sorts as 0). "significance" is the default order.
_STATUS_RANK = {"new": 0, "grown": 1, "changed": 2, "same": 3, "shrunk": 4, "gone": 5}


def _field(name: str) -> Callable[[RowValues], float]:
    at = ROW_FIELDS.index(name)
    return lambda v: v[at] or 0


SORT_KEYS: dict[str, Callable[[RowValues], Any]] = {
    "category": lambda v: v[0].lower(),
    "status": lambda v: _STATUS_RANK[v[1]],
    "base_median": _field("base_bytes_median"),
    "base_mean": _field("base_bytes_mean"),
    "target_median": _field("target_bytes_median"),
    "target_mean": _field("target_bytes_mean"),
    "delta_median": _field("delta_median_bytes"),
    "delta_mean": _field("delta_mean_bytes"),
    "delta_count": _field("delta_median_count"),
    "delta_mean_count": _field("delta_mean_count"),
    "p": lambda v: 2.0 if v[P_VALUE] is None else v[P_VALUE],
    "present": _field("target_present"),
}
DEFAULT_SORT = "significance"


def sorted_values(values: list[RowValues], sort: str, descending: bool) -> list[RowValues]:
    """The rows in a page's order: `build_order` for "significance" (or an unknown key),
    else by the column, ties in `build_order`."""
    key = SORT_KEYS.get(sort)
    if key is None:
        return sorted(values, key=_values_order)
    ordered = sorted(values, key=_values_order)
    ordered.sort(key=key, reverse=descending)  # stable: ties keep the default order
    return ordered


def build_compare_row(
    values: RowValues, base: BuildSummary, target: BuildSummary
) -> BuildCompareRow:
    """The row object of a row's values (`compare_build_summaries` of these summaries): the
    same figures, the rank test on bytes as found, the one on counts run when asked for."""
    name = values[0]
    b, t = values[_RECORDS], values[_RECORDS + 1]
    b_count, b_bytes = category_spreads(b)
    t_count, t_bytes = category_spreads(t)
    n1, n2 = target.snapshots, base.snapshots
    test = RankTest(values[_U], n1, n2, values[P_VALUE], values[_TEST])
    sizes = compare_spreads(b_bytes, t_bytes, test)
    counts = compare_spreads(
        b_count, t_count, partial(_count_rank_test, target, base, name, n1, n2)
    )
    return BuildCompareRow(name, sizes, counts, b[0], t[0], values[1], values[_SIGNIFICANT])


def _count_rank_test(
    target: BuildSummary, base: BuildSummary, name: str, n1: int, n2: int
) -> RankTest:
    return runs_rank_test(target.count_runs(name), n1, base.count_runs(name), n2)


def _build_row(
    name: str,
    base: tuple[list[int], list[int], int],
    target: tuple[list[int], list[int], int],
    alpha: float,
) -> BuildCompareRow:
    base_counts, base_sizes, base_present = base
    target_counts, target_sizes, target_present = target
    sizes = compare_samples(base_sizes, target_sizes)
    counts = compare_samples(base_counts, target_counts)
    status = build_status(
        base_present, target_present, sizes.delta_median, sizes.delta_mean, counts.delta_mean,
        sizes.p_value, alpha,
    )  # fmt: skip
    return BuildCompareRow(
        name, sizes, counts, base_present, target_present, status, sizes.significant(alpha)
    )


def _sorted_build_rows(rows: list[BuildCompareRow]) -> list[BuildCompareRow]:
    rows.sort(
        key=lambda r: build_order(
            r.significant, r.bytes.delta_median, r.bytes.delta_mean, r.count.delta_mean, r.category
        )
    )
    return rows


@dataclass
class BuildComparison:
    """Two builds compared over their snapshots (those a filter kept): the whole heap, and a row
    per category as values (the API's rows), as objects when first read."""

    base: Build
    target: Build
    base_snapshots: list[int]
    target_snapshots: list[int]
    total: BuildCompareRow  # the whole heap: All Heap & Anonymous VM
    values: list[RowValues]  # a row per category as values (ROW_FIELDS), the API's rows
    categories: list[str] | None  # the categories asked for, None for all
    base_summary: BuildSummary = field(repr=False)
    target_summary: BuildSummary = field(repr=False)
    alpha: float = DEFAULT_ALPHA  # the significance level of statuses and the gate

    def row_objects(self, values: Iterable[RowValues]) -> list[BuildCompareRow]:
        """Rows given as values (some of `self.values`) as objects, for a page: made only for
        the rows shown, since a build has thousands of categories and each object holds ten."""
        return [build_compare_row(v, self.base_summary, self.target_summary) for v in values]
