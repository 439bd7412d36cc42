"""The snapshots pages' tables as CSV (`core.web.export`): the statistics tables of a snapshot and
of a build (asked of their pages with ?format=csv), a snapshot's generations, the builds, a
build's snapshots, the debug files and the images missing theirs."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import HttpRequest, StreamingHttpResponse

from memdash.allocations.models import Snapshot
from memdash.allocations.reads import builds as build_selectors
from memdash.allocations.reads import snapshots as selectors
from memdash.allocations.reads.generations import GENERATION_HEADERS, snapshot_generations
from memdash.allocations.reads.names import MissingImage
from memdash.allocations.reads.timeline import RangeStatisticsTable
from memdash.core.models import Build
from memdash.core.web.export import Cell, csv_response
from memdash.core.web.http import found
from memdash.symbols.models import DebugFile

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
    filename: str,
    table: selectors.StatisticsTable | RangeStatisticsTable,
    with_callers: bool,
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


@login_required
def generations_csv(request: HttpRequest, snapshot_id: int) -> StreamingHttpResponse:
    """The generations page's list: each generation's growth and persistent count."""
    with found():
        snapshot = selectors.snapshot_for_user(request.user, snapshot_id)
    return csv_response(
        f"snapshot-{snapshot.pk}-generations",
        GENERATION_HEADERS,
        (row.csv_cells() for row in snapshot_generations(snapshot)),
    )


BUILD_LIST_HEADERS = [
    "Version",
    "Number",
    "Commit",
    "Snapshots",
    "Persistent bytes (median per snapshot)",
    "Last upload",
]


def build_list_csv(filename: str, rows: Iterable[dict[str, Any]]) -> StreamingHttpResponse:
    """The builds page's table (`selectors.build_rows`, in the page's order)."""
    cells = (
        [
            r["build"].version,
            r["build"].number,
            r["build"].commit,
            r["build"].snapshot_count,
            r["median_persistent_bytes"],
            r["build"].last_upload,
        ]
        for r in rows
    )
    return csv_response(filename, BUILD_LIST_HEADERS, cells)


SNAPSHOT_HEADERS = [
    "Snapshot",
    "Device model",
    "OS",
    "Trigger",
    "Captured at",
    "Persistent bytes",
    "# Persistent",
]


def snapshot_list_csv(filename: str, snapshots: QuerySet[Snapshot]) -> StreamingHttpResponse:
    """A build's snapshots under the page's filters, every page of them."""

    def cells() -> Iterator[list[Cell]]:
        for s in snapshots.iterator(chunk_size=500):
            row: list[Cell] = [s.pk, s.device_model, s.os, s.trigger, s.captured_at]
            yield [*row, s.persistent_bytes, s.persistent]

    return csv_response(filename, SNAPSHOT_HEADERS, cells())


DEBUG_FILE_HEADERS = [
    "Image",
    "Arch",
    "Debug id",
    "Kind",
    "Line tables",
    "Size (bytes)",
    "Uploaded",
    "Uploaded by",
    "Builds that use it",
]


def debug_files_csv(
    filename: str, rows: Iterable[tuple[DebugFile, list[Build]]]
) -> StreamingHttpResponse:
    """An app's debug files, with who uploaded each and the builds whose frames are in it."""

    def cells() -> Iterator[list[Cell]]:
        for f, builds in rows:
            by = f"key {f.key.prefix}…" if f.key else (f.user.get_username() if f.user else None)
            yield [
                f.image_name,
                f.arch,
                f.debug_id,
                f.get_kind_display(),
                f.has_lines,
                f.size,
                f.uploaded_at,
                by,
                ", ".join(str(b) for b in builds),
            ]

    return csv_response(filename, DEBUG_FILE_HEADERS, cells())


def missing_images_csv(
    filename: str, images: Iterable[MissingImage], per_build: bool
) -> StreamingHttpResponse:
    """The images with frames that have no name, most bytes first (`Snapshots` on a build's)."""
    headers = ["Image", "System", "UUID / debug id", "Arch", "Frames without name"]
    headers += ["Bytes under them", *(["Snapshots"] if per_build else []), "Debug file kind"]

    def cells() -> Iterator[list[Cell]]:
        for image in images:
            row: list[Cell] = [image.name, image.system, image.uuid, image.arch, image.frames]
            row += [image.bytes, *([image.snapshots] if per_build else [])]
            yield [*row, image.debug_file.kind if image.debug_file else None]

    return csv_response(filename, headers, cells())
