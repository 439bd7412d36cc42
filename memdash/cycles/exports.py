"""The cluster list as CSV rows (`core.export`): the rows of the page under its filters and sort,
all pages of them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from memdash.core.export import Cell
from memdash.cycles.selectors import ClusterRows

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
