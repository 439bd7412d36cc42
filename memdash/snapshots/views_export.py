"""The snapshots pages' tables as CSV (`core.export`): the statistics tables of a snapshot and
of a build (asked of their pages with ?format=csv), and a snapshot's generations."""

from __future__ import annotations

from collections.abc import Iterator

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, StreamingHttpResponse

from memdash.allocations import build_selectors, selectors
from memdash.allocations.generation_selectors import GenerationRow, snapshot_generations
from memdash.core.export import Cell, csv_response

STATISTICS_HEADERS = [
    "Category",
    "Persistent bytes",
    "# Persistent",
    "# Transient",
    "Total bytes",
    "# Total",
    "Transient bytes",
]


def statistics_csv(
    filename: str, table: selectors.StatisticsTable, with_callers: bool
) -> StreamingHttpResponse:
    """The summary rows, then every category row the page lists under its search and sort
    (all pages of it), with the responsible caller where the page shows that column."""

    def rows() -> Iterator[list[Cell]]:
        for row in [*table.summary, *table.all()]:
            cells: list[Cell] = [
                row["category"],
                row["persistent_bytes"],
                row["persistent"],
                row["transient"],
                row["total_bytes"],
                row["total"],
                row["transient_bytes"],
            ]
            if with_callers:
                cells.append(row["responsible_caller"])
            yield cells

    headers = STATISTICS_HEADERS + (["Responsible caller"] if with_callers else [])
    return csv_response(filename, headers, rows())


# the build table's columns per snapshot: (header, column of `per_snapshot.COLUMNS`)
BUILD_COLUMNS = [
    ("Persistent bytes", "persistent_bytes"),
    ("# Persistent", "persistent"),
    ("# Transient", "transient"),
    ("Total bytes", "total_bytes"),
    ("# Total", "total"),
    ("Transient bytes", "transient_bytes"),
]


def build_statistics_csv(
    filename: str, table: build_selectors.BuildStatisticsTable
) -> StreamingHttpResponse:
    """A build's table as its page shows it: per snapshot, each column's median then mean,
    the snapshots with the category (of all the page's), its responsible caller; the summary
    rows first, then every category under the page's filters, search and sort."""

    def rows() -> Iterator[list[Cell]]:
        for row in [*table.summary, *table.all()]:
            cells: list[Cell] = [row["category"], row["snapshots"]]
            for _, column in BUILD_COLUMNS:
                cells += [row["median"][column], row["mean"][column]]
            cells.append(row["responsible_caller"])
            yield cells

    headers = ["Category", f"Snapshots (of {table.snapshot_count})"]
    for header, _ in BUILD_COLUMNS:
        headers += [f"{header} (median per snapshot)", f"{header} (mean per snapshot)"]
    return csv_response(filename, [*headers, "Responsible caller"], rows())


def generation_cells(row: GenerationRow) -> list[Cell]:
    return [row.name, row.at_ms, row.growth_bytes, row.persistent]


@login_required
def generations_csv(request: HttpRequest, snapshot_id: int) -> StreamingHttpResponse:
    """The generations page's list: each generation's growth and persistent count."""
    snapshot = selectors.snapshot_for_user(request.user, snapshot_id)
    return csv_response(
        f"snapshot-{snapshot.pk}-generations",
        ["Generation", "Since launch (ms)", "Growth bytes", "# Persistent"],
        (generation_cells(row) for row in snapshot_generations(snapshot)),
    )
