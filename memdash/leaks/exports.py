"""The leak group list as CSV rows (`core.export`): the groups of the page under its status
filter and sort, all pages of them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from memdash.core.export import Cell
from memdash.leaks.models import LeakGroup

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
