"""The leak pages' tables as CSV rows (`core.web.export`): the groups of the list under its status
filter and sort (all pages of them), the totals per build and the latest reports beside them;
a group's latest occurrences; a report's totals, suppressions and records."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from memdash.core.web.export import Cell
from memdash.leaks.logic.reports import StackFrame
from memdash.leaks.models import LeakGroup, LeakRecord, LeakReport
from memdash.leaks.reads import BuildLeaks

GROUP_HEADERS = [
    "Group",
    "Allocated at",
    "Regression",
    "No stack",
    "Status",
    "Assignee",
    "Occurrences",
    "Bytes",
    "Devices",
    "First seen build",
    "First seen",
    "Last seen build",
    "Last seen",
]


def group_rows(groups: Iterable[LeakGroup]) -> Iterator[list[Cell]]:
    for g in groups:
        yield [
            g.pk,
            g.title,
            g.regression,
            g.by_size,
            g.get_status_display(),
            g.assignee.get_username() if g.assignee else None,
            g.occurrences,
            g.bytes,
            g.devices,
            str(g.first_seen_build) if g.first_seen_build else None,
            g.first_seen_at,
            str(g.last_seen_build) if g.last_seen_build else None,
            g.last_seen_at,
        ]


BUILD_TOTAL_HEADERS = [
    "Build",
    "Reports",
    "Devices",
    "Unreachable bytes",
    "Allocations",
    "Bytes per report",
    "Counted, not listed (bytes)",
    "Still reachable (bytes)",
]


def build_total_rows(totals: Iterable[BuildLeaks]) -> Iterator[list[Cell]]:
    """Unreachable memory per build, in release order."""
    for t in totals:
        yield [
            str(t.build),
            t.reports,
            t.devices,
            t.unreachable_bytes,
            t.unreachable_allocations,
            t.bytes_per_report,
            t.unlisted_bytes,
            t.reachable_bytes,
        ]


REPORT_HEADERS = [
    "Report",
    "Tool",
    "Process",
    "Captured",
    "Build",
    "Device",
    "Stated bytes",
    "Stated allocations",
    "Listed bytes",
    "Listed allocations",
    "Counted, not listed (bytes)",
    "Counted, not listed (allocations)",
    "Records listed",
    "Records stated",
    "Still reachable (bytes)",
]


def report_rows(reports: Iterable[LeakReport]) -> Iterator[list[Cell]]:
    """The latest reports, newest first, with their totals as stated and as listed."""
    for r in reports:
        yield [
            r.pk,
            r.tool_name,
            r.process,
            r.captured_at,
            str(r.build),
            str(r.device) if r.device else None,
            r.stated_bytes,
            r.stated_allocations,
            r.listed_bytes,
            r.listed_allocations,
            r.unlisted_bytes,
            r.unlisted_allocations,
            r.listed_records,
            r.stated_records,
            r.reachable_bytes,
        ]


OCCURRENCE_HEADERS = [
    "Report",
    "Tool",
    "Process",
    "Captured",
    "Build",
    "Device",
    "Kind",
    "Bytes",
    "Allocations",
]


def occurrence_rows(records: Iterable[LeakRecord]) -> Iterator[list[Cell]]:
    """A group's latest occurrences (records), newest report first."""
    for record in records:
        report = record.report
        yield [
            report.pk,
            report.tool_name,
            report.process,
            report.captured_at,
            str(record.build),
            str(record.device) if record.device else None,
            record.kind,
            record.bytes,
            record.allocations,
        ]


RECORD_HEADERS = [
    "#",
    "Kind",
    "Bytes",
    "Allocations",
    "Size of one (bytes)",
    "Group",
    "Group title",
    "Stack",
]


def record_rows(records: Iterable[LeakRecord]) -> Iterator[list[Cell]]:
    """A report's records in the tool's order, each with its whole stack (frames from the
    allocation up, as the page prints them, separated by " | ")."""
    for record in records:
        group = record.group
        yield [
            record.position + 1,
            record.kind,
            record.bytes,
            record.allocations,
            record.size,
            group.pk if group else None,
            group.title if group else "still reachable",
            " | ".join(StackFrame.from_dict(f).display() for f in record.frames),
        ]


TOTAL_HEADERS = ["", "Bytes", "Allocations", "Records"]


def report_total_rows(report: LeakReport) -> list[list[Cell]]:
    """A report's totals: as the tool states them, as its records add up, and the difference."""
    return [
        [
            "As the tool states them",
            report.stated_bytes,
            report.stated_allocations,
            report.stated_records,
        ],
        [
            "Sum of the records listed",
            report.listed_bytes,
            report.listed_allocations,
            report.listed_records,
        ],
        [
            "Counted but not listed",
            report.unlisted_bytes,
            report.unlisted_allocations,
            report.unlisted_records,
        ],
    ]


KIND_HEADERS = [
    "Kind",
    "Leak",
    "Stated bytes",
    "Stated blocks",
    "Listed bytes",
    "Listed allocations",
    "Records",
]


def kind_rows(report: LeakReport) -> list[list[Cell]]:
    """A report's memory per kind, in the tool's words: stated (where it states it) and listed."""
    return [
        [
            row["label"],
            "yes" if row["lost"] else "no",
            row["stated_bytes"],
            row["stated_allocations"],
            row["listed_bytes"],
            row["listed_allocations"],
            row["records"],
        ]
        for row in report.kind_rows
    ]


SUPPRESSION_HEADERS = ["Template", "Count", "Bytes"]


def suppression_rows(suppressions: Iterable[dict[str, Any]]) -> Iterator[list[Cell]]:
    for s in suppressions:
        yield [s.get("template"), s.get("count"), s.get("bytes")]
