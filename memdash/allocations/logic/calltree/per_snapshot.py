"""A build's call tree per snapshot (no Django): each node's median over the build's snapshots.

A build's statistics table and build compare's diff tree give a category or a node its median per
snapshot (0 in a snapshot without it); a build's call tree does the same by default, so a node
reads as the table beside it does (`aggregate=sum` gives the sum over the snapshots instead).
`PerSnapshotTree` holds one tree per snapshot, built under the same options (so a path has the
same node id in each), and answers a level by merging the snapshots' children of a node by id:
bytes, count, self bytes and self count each their median per snapshot, rounded up (a median of
an even number of snapshots may be a half). A node whose median bytes and count are both 0 (in
fewer than half of the snapshots) is left out; its descendants are too (a child never holds more
than its parent in any snapshot, and medians keep that order).

Medians do not add up: two children may each have a larger median than their parent's share,
so `additive` is False and the flame graph is drawn with plotly's "remainder" branch values, as
build compare's diff flame graph is. Top Functions are the median per snapshot of each
function's figures in each snapshot's tree (`median_functions`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from memdash.allocations.logic.calltree.flame import FunctionRow, sort_functions
from memdash.allocations.logic.calltree.tree import CallTree, NodeView, TreeOptions, tree_percent
from memdash.core.logic.samples import median

MEDIAN, SUM = "median", "sum"
AGGREGATES = (MEDIAN, SUM)  # what a build's tree shows of its snapshots; the first the default
_ALL = 1 << 30  # a level is read whole: its nodes are merged across the snapshots


def median_of(values: Sequence[int], snapshots: int) -> int:
    """The median per snapshot of `values` found in some of `snapshots` (0 in the others),
    rounded up to a whole byte or allocation."""
    padded = [*values, *([0] * (snapshots - len(values)))]
    return math.ceil(median(padded) or 0)


class PerSnapshotTree(CallTree):
    """The medians per snapshot of trees of the same options, one tree per snapshot."""

    additive = False

    def __init__(self, trees: Sequence[CallTree], options: TreeOptions) -> None:
        self.trees = list(trees)
        self.options = options
        self.total_bytes = median_of([t.total_bytes for t in self.trees], len(self.trees))
        self.total_count = median_of([t.total_count for t in self.trees], len(self.trees))
        self._merged_levels: dict[str | None, list[NodeView] | None] = {}
        self._levels: dict[str | None, list[NodeView] | None] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_merged_levels"], state["_levels"] = {}, {}  # memos of this process
        return state

    def _combined(self, views: Sequence[NodeView]) -> NodeView:
        n = len(self.trees)
        nbytes = median_of([v.bytes for v in views], n)
        count = median_of([v.count for v in views], n)
        return dataclasses.replace(
            views[0],
            bytes=nbytes,
            count=count,
            self_bytes=median_of([v.self_bytes for v in views], n),
            self_count=median_of([v.self_count for v in views], n),
            has_children=any(v.has_children for v in views),
            percent=tree_percent(nbytes, count, self.total_bytes, self.total_count),
        )

    def _merged(self, node_id: str | None) -> list[NodeView] | None:
        """The children of a node with a median above 0, heaviest first (None: no such node)."""
        if node_id not in self._merged_levels:
            self._merged_levels[node_id] = self._merge(node_id)
        return self._merged_levels[node_id]

    def _merge(self, node_id: str | None) -> list[NodeView] | None:
        pages = [t.children(node_id, 0, _ALL) for t in self.trees]
        if all(page is None for page in pages):
            return None
        found: dict[str, list[NodeView]] = {}
        for page in pages:
            for view in page[0] if page else ():
                found.setdefault(view.id, []).append(view)
        views = [self._combined(same) for same in found.values()]
        kept = [v for v in views if v.bytes or v.count]
        kept.sort(key=lambda v: (-v.bytes, -v.count, v.symbol, v.id))
        return kept

    def _level(self, node_id: str | None) -> list[NodeView] | None:
        if node_id not in self._levels:
            level = self._merged(node_id)
            if level is not None:  # has_children: whether any child is left at its median
                level = [
                    dataclasses.replace(v, has_children=bool(self._merged(v.id)))
                    if v.has_children
                    else v
                    for v in level
                ]
            self._levels[node_id] = level
        return self._levels[node_id]

    def children(
        self, node_id: str | None, offset: int = 0, limit: int = 100
    ) -> tuple[list[NodeView], int] | None:
        level = self._level(node_id)
        if level is None:
            return None
        return level[offset : offset + limit], len(level)

    def node(self, node_id: str) -> NodeView | None:
        views = [v for v in (t.node(node_id) for t in self.trees) if v is not None]
        if not views:
            return None
        view = self._combined(views)
        if not view.bytes and not view.count:
            return None
        if view.has_children:
            view = dataclasses.replace(view, has_children=bool(self._merged(node_id)))
        return view


def median_functions(
    per_snapshot: Sequence[Sequence[FunctionRow]], order: str = "self"
) -> list[FunctionRow]:
    """Top Functions per snapshot: each function's (symbol and image) figures, their median over
    the snapshots' own Top Functions (0 in a snapshot without it), in `top_functions`' order.
    Functions whose median self and total bytes and counts are all 0 are left out."""
    n = len(per_snapshot)
    found: dict[tuple[str, str], list[FunctionRow]] = {}
    for rows in per_snapshot:
        for row in rows:
            found.setdefault((row.symbol, row.image), []).append(row)
    out = []
    for rows in found.values():
        self_bytes = median_of([r.self_bytes for r in rows], n)
        self_count = median_of([r.self_count for r in rows], n)
        nbytes = median_of([r.bytes for r in rows], n)
        count = median_of([r.count for r in rows], n)
        if self_bytes or self_count or nbytes or count:
            out.append(dataclasses.replace(
                rows[0], self_bytes=self_bytes, self_count=self_count, bytes=nbytes, count=count
            ))  # fmt: skip
    return sort_functions(out, order)
