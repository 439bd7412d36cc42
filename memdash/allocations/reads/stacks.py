"""Whole stacks of stored rows: the frames from a stack node up to its root (the Allocations
List's Extended Detail), and the responsible caller of each (Matrix's and Instruments': walking
out from the allocation, the first frame not in a system image). One recursive query for any
number of stacks: a node's ancestors are found by its parent's id (the primary key)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import connection

from memdash.allocations.logic.analysis import frame_label, responsible_frame
from memdash.allocations.logic.callers import callers_of_nodes
from memdash.allocations.models import Frame, StackNode
from memdash.core.reads.where_in import where_in_parts

ANCESTORS_SQL = """
WITH RECURSIVE up(start, node, parent, frame) AS (
  SELECT n.id, n.id, n.parent_id, n.frame_id FROM snapshots_stacknode n
  WHERE n.app_id = %s AND n.id IN ({ids})
  UNION ALL
  SELECT up.start, n.id, n.parent_id, n.frame_id FROM up
  JOIN snapshots_stacknode n ON n.id = up.parent AND n.app_id = %s
)
SELECT start, node, parent, frame FROM up
"""
ID_BATCH = 500  # stacks a query starts from (a page holds at most a thousand)


@dataclass(frozen=True)
class StackFrame:
    """A frame of a stack as the Extended Detail shows it."""

    node: int  # the stack node (the call tree's node id for this path)
    frame: int
    label: str  # the symbol, else image + offset, else the address
    symbol: str
    image: str
    file: str
    line: int | None
    system: bool
    inlined: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": str(self.node),
            "label": self.label,
            "symbol": self.symbol,
            "image": self.image,
            "file": self.file,
            "line": self.line,
            "system": self.system,
            "inlined": self.inlined,
        }


def _chains(app_id: int, stack_ids: list[int]) -> dict[int, list[tuple[int, int]]]:
    """Per stack: its (node, frame) pairs, innermost (the stack's own node) first."""
    links: dict[int, tuple[int | None, int]] = {}
    for start in range(0, len(stack_ids), ID_BATCH):
        batch = stack_ids[start : start + ID_BATCH]
        sql = ANCESTORS_SQL.format(ids=", ".join(["%s"] * len(batch)))
        with connection.cursor() as cursor:
            cursor.execute(sql, [app_id, *batch, app_id])
            for _start, node, parent, frame in cursor.fetchall():
                links[node] = (parent, frame)
    chains = {}
    for stack in stack_ids:
        chain: list[tuple[int, int]] = []
        at: int | None = stack
        while at is not None and at in links and len(chain) <= len(links):
            parent, frame = links[at]
            chain.append((at, frame))
            at = parent
        if chain:
            chains[stack] = chain
    return chains


FRAME_FIELDS = (
    "id", "symbol", "image", "offset", "address", "file", "line", "is_system", "inlined",
)  # fmt: skip


def _frames(frame_ids: set[int]) -> dict[int, tuple[Any, ...]]:
    rows: dict[int, tuple[Any, ...]] = {}
    for part in where_in_parts("id", list(frame_ids)):
        for row in Frame.objects.filter(part).values_list(*FRAME_FIELDS):
            rows[row[0]] = row
    return rows


def _stack_frame(node: int, row: tuple[Any, ...]) -> StackFrame:
    fid, symbol, image, offset, address, file, line, system, inlined = row
    return StackFrame(
        node, fid, frame_label(symbol, image, offset, address), symbol, image, file, line,
        system, inlined,
    )  # fmt: skip


def stacks_frames(app_id: int, stack_ids: Iterable[int]) -> dict[int, list[StackFrame]]:
    """Per stack of the app found: its frames, innermost first."""
    chains = _chains(app_id, sorted(set(stack_ids)))
    frames = _frames({frame for chain in chains.values() for _node, frame in chain})
    return {
        stack: [_stack_frame(node, frames[frame]) for node, frame in chain if frame in frames]
        for stack, chain in chains.items()
    }


def stack_frames(app_id: int, stack_id: int) -> list[StackFrame]:
    """The frames of one stack, innermost first (StackNode.DoesNotExist if the app has none)."""
    found = stacks_frames(app_id, [stack_id]).get(stack_id)
    if not found:
        raise StackNode.DoesNotExist("No such stack")
    return found


def responsible_frame_of(frames: list[StackFrame]) -> StackFrame | None:
    """The stack's responsible caller (`analysis.responsible_frame` over its frames, innermost
    first)."""
    outer = [f.node for f in frames[1:]] + [None]
    parent_of = {f.node: parent for f, parent in zip(frames, outer, strict=True)}
    index = responsible_frame(
        frames[0].node if frames else None,
        parent_of,
        {f.node: i for i, f in enumerate(frames)},
        {i: f.system for i, f in enumerate(frames)},
    )
    return None if index is None else frames[index]


def responsible_of(app_id: int, stack_ids: Iterable[int]) -> dict[int, StackFrame]:
    """Per stack: its responsible caller's frame (stacks of system frames only have none)."""
    found = {}
    for stack, frames in stacks_frames(app_id, stack_ids).items():
        frame = responsible_frame_of(frames)
        if frame is not None:
            found[stack] = frame
    return found


def responsible_frame_ids(app_id: int, stack_ids: Iterable[int]) -> dict[int, int]:
    """Per stack (of any number): its responsible caller's frame id, for those with one. Read
    outward a level at a time, and only past a system frame: the stacks, then the parents of
    those whose frame is a system one, and so on. A node-heavy tree (a million nodes under
    77,000 listed stacks) is read a few levels deep instead of whole."""
    parent_of: dict[int, int | None] = {}
    frame_of: dict[int, int] = {}
    system: set[int] = set()
    frames_read: set[int] = set()
    wanted = sorted(set(stack_ids))
    while wanted:
        found = [
            row
            for part in where_in_parts("id", wanted)
            for row in StackNode.objects.filter(part, app_id=app_id).values_list(
                "id", "parent_id", "frame_id"
            )
        ]
        new_frames = sorted({frame for _node, _parent, frame in found} - frames_read)
        frames_read.update(new_frames)
        for part in where_in_parts("id", new_frames):
            system.update(
                Frame.objects.filter(part, app_id=app_id, is_system=True).values_list(
                    "id", flat=True
                )
            )
        for node, parent, frame in found:
            parent_of[node], frame_of[node] = parent, frame
        wanted = sorted(
            {p for _n, p, f in found if f in system and p is not None and p not in frame_of}
        )
    return callers_of_nodes(parent_of, frame_of, system)


# The responsible caller of every node of the listed snapshots' call trees, as SQL: from each
# root down, a node's own frame when it is not in a system image, else its parent's caller
# (CallTreeNode holds every node of a snapshot's tree, found by (snapshot, parent)).
CALLERS_CTE = """callers(node, frame) AS (
  SELECT t.node_id, CASE WHEN f.is_system THEN NULL ELSE t.frame_id END
  FROM snapshots_calltreenode t JOIN snapshots_frame f ON f.id = t.frame_id AND f.app_id = t.app_id
  WHERE {snapshots} AND t.parent_id IS NULL
  UNION
  SELECT t.node_id, CASE WHEN f.is_system THEN callers.frame ELSE t.frame_id END
  FROM callers JOIN snapshots_calltreenode t ON t.parent_id = callers.node AND {snapshots}
  JOIN snapshots_frame f ON f.id = t.frame_id AND f.app_id = t.app_id
)"""
# The nodes whose responsible caller's symbol or library contains a text: the nodes of an app
# frame that matches, and below them the nodes reached through system frames only.
MATCHED_CALLERS_CTE = """matched(node) AS (
  SELECT t.node_id FROM snapshots_calltreenode t
  JOIN snapshots_frame f ON f.id = t.frame_id AND f.app_id = t.app_id
  WHERE {snapshots} AND NOT f.is_system
    AND (LOWER(f.symbol) LIKE %s ESCAPE '!' OR LOWER(f.image) LIKE %s ESCAPE '!')
  UNION
  SELECT t.node_id FROM matched
  JOIN snapshots_calltreenode t ON t.parent_id = matched.node AND {snapshots}
  JOIN snapshots_frame f ON f.id = t.frame_id AND f.app_id = t.app_id WHERE f.is_system
)"""


def like_pattern(text: str) -> str:
    """`%text%` for LIKE … ESCAPE '!', lower case, with LIKE's own characters escaped."""
    escaped = text.lower().replace("!", "!!").replace("%", "!%").replace("_", "!_")
    return f"%{escaped}%"
