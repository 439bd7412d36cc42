"""The retain-cycle pages' tables as CSV rows (`core.web.export`): the cluster list under its
filters and sort (all pages of it), and a cluster's member cycles and suggested owners."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime

from memdash.core.web.export import Cell
from memdash.cycles.models import RetainCycle
from memdash.cycles.reads.clusters import ClusterRows, MemberCycle
from memdash.cycles.reads.owners import OwnerSuggestion

CLUSTER_HEADERS = [
    "Cluster",
    "Minimal cycle (app classes)",
    "System",
    "Regression",
    "Status",
    "Assignee",
    "Occurrences",
    "Devices",
    "Builds affected",
    "Newest",
    "First seen",
    "Last seen",
]
CHUNK = 500  # clusters read at a time


def cluster_rows(rows: ClusterRows) -> Iterator[list[Cell]]:
    total = len(rows)
    for start in range(0, total, CHUNK):
        for row in rows[start : start + CHUNK]:
            c = row.cluster
            yield [
                c.pk,
                " → ".join(c.key),
                c.system,
                c.regression,
                c.get_status_display(),
                c.assignee.get_username() if c.assignee else None,
                row.occurrences,
                row.devices,
                row.builds,
                row.newest_at if isinstance(row.newest_at, datetime) else None,
                str(c.first_seen_build) if c.first_seen_build else None,
                str(c.last_seen_build) if c.last_seen_build else None,
            ]


MEMBER_HEADERS = ["Cycle (canonical rotation)", "Occurrences", "Devices", "Builds"]


def loop_text(member: MemberCycle) -> str:
    """A loop as the cluster page prints it: each reference's name, then the class it holds."""
    return " ".join(f"{'.'.join(via) if via else '(unnamed)'} → {cls}" for cls, via in member.links)


def member_rows(members: Iterable[MemberCycle]) -> Iterator[list[Cell]]:
    """A cluster's distinct loops, most occurrences first."""
    for m in members:
        yield [loop_text(m), m.occurrences, m.devices, m.builds]


OWNER_HEADERS = ["Class", "Defined in", "Last author", "Email"]


def owner_rows(owners: OwnerSuggestion) -> Iterator[list[Cell]]:
    for o in owners.classes:
        yield [o.class_name, o.file, o.author, o.email]


OCCURRENCE_HEADERS = ["Captured", "Device", "OS", "Build"]


def occurrence_rows(occurrences: Iterable[RetainCycle]) -> Iterator[list[Cell]]:
    """A cluster's occurrences, newest first (`selectors.cluster_occurrences`)."""
    for o in occurrences:
        device = o.device
        yield [o.captured_at, device.model if device else None, device.os if device else None,
               str(o.build)]  # fmt: skip
