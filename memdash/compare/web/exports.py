"""The compare pages' tables as CSV rows (`core.web.export`): the rows each page lists, under the
same filters and in the same order, every one of them (a page shows the first 2,000)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from memdash.compare.logic.build_rows import ROW_FIELDS, STATUS_LABELS, TOTAL_ROW, RowValues
from memdash.compare.logic.category_diff import DiffRow
from memdash.compare.reads.trends import TrendPoint
from memdash.core.web.export import Cell

DIFF_HEADERS = [
    "Category",
    "Status",
    "Base bytes",
    "Target bytes",
    "Delta bytes",
    "Base count",
    "Target count",
    "Delta count",
]


def diff_cells(rows: Iterable[DiffRow]) -> Iterator[list[Cell]]:
    """A generation or snapshot diff's rows (a build side's figures per snapshot)."""
    for r in rows:
        yield [
            r.category,
            r.status,
            r.base_bytes,
            r.target_bytes,
            r.delta_bytes,
            r.base_count,
            r.target_count,
            r.delta_count,
        ]


# (header, field of ROW_FIELDS) of build compare's export: the page's columns, medians first
COMPARE_COLUMNS = [
    ("Category", "category"),
    ("Base median bytes", "base_bytes_median"),
    ("Base mean bytes", "base_bytes_mean"),
    ("Target median bytes", "target_bytes_median"),
    ("Target mean bytes", "target_bytes_mean"),
    ("Delta median bytes", "delta_median_bytes"),
    ("Delta mean bytes", "delta_mean_bytes"),
    ("Delta median count", "delta_median_count"),
    ("Delta mean count", "delta_mean_count"),
    ("p", "p_value"),
    ("Significant", "significant"),
    ("Base snapshots with it", "base_present"),
    ("Base snapshots", "base_snapshots"),
    ("Target snapshots with it", "target_present"),
    ("Target snapshots", "target_snapshots"),
]
COMPARE_HEADERS = ["Category", "Status", *(header for header, _ in COMPARE_COLUMNS[1:])]
_COLUMN_AT = [ROW_FIELDS.index(name) for _, name in COMPARE_COLUMNS[1:]]


def compare_cells(values: Iterable[RowValues]) -> Iterator[list[Cell]]:
    """Build compare's rows (as values, `build_rows.ROW_FIELDS`) with their statuses as the
    page words them."""
    for v in values:
        yield [v[0], STATUS_LABELS.get(v[1], v[1]), *(v[i] for i in _COLUMN_AT)]


TRENDS_HEADERS = [
    "Snapshots",
    "Series",
    "Median bytes",
    "Q1 bytes",
    "Q3 bytes",
    "Min bytes",
    "Max bytes",
]


def trends_headers(axis: str) -> list[str]:
    """The trends table's columns: the first names the x axis (a build, or a capture date)."""
    return ["Date" if axis == "date" else "Build", *TRENDS_HEADERS]


def trend_cells(points: Iterable[TrendPoint], categories: list[str]) -> Iterator[list[Cell]]:
    """The trends table: per build (or day), the whole heap then each chosen category."""
    for point in points:
        series = [(TOTAL_ROW, point.total)]
        series += [(name, point.categories[name]) for name in categories]
        for name, spread in series:
            yield [
                point.label,
                point.snapshots,
                name,
                spread.median,
                spread.q1,
                spread.q3,
                spread.minimum,
                spread.maximum,
            ]
