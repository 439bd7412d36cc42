"""A snapshot's default call tree (all categories, threads and generations, not inverted, no
folding) of the allocations made in a time range of its timeline, read from TimedCallTreeNode:
the tree of each time bucket, stored at ingest (`writes.timeline.store_bucket_trees`), summed
over the range's buckets by the database a level at a time, as StoredCallTree reads the whole
snapshot's tree from CallTreeNode. A level is one query over the index on (snapshot, parent,
bucket), whatever the number of allocation rows; no row is read.

A range's totals (its "(no stack)" node and its percentages) are what its buckets made
(`Timeline.made`). Timelines stored before the buckets' trees were kept have no `made`: their
ranges are built from the rows by bucket, as before (`range_source` says None).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Sum

from memdash.allocations.logic.analysis import lifespan_counts
from memdash.allocations.logic.calltree.tree import CallTree, NodeView
from memdash.allocations.models import Snapshot, TimedCallTreeNode, Timeline
from memdash.allocations.reads.calltree.query import CallTreeQuery
from memdash.allocations.reads.calltree.stored import (
    MAX_DEPTH,
    StoredCallTree,
    fetch,
    of_app,
    stack_id_of,
    tree_of_nodes,
    with_frames,
)

_TIMED = TimedCallTreeNode._meta.db_table


@dataclass(frozen=True)
class RangeSource:
    """The buckets [first, last] of a snapshot's timeline and what each of them made."""

    snapshot: Snapshot
    first: int
    last: int
    made: list[list[int]]

    def totals(self) -> list[int]:
        """(p, pb, t, tb) made in the range."""
        span = self.made[self.first : self.last + 1]
        return [sum(counts[k] for counts in span) for k in range(4)]


def range_source(snapshot: Snapshot, query: CallTreeQuery) -> RangeSource | None:
    """The stored buckets' trees a query reads: one of the default tree in a range of an events
    or heaptrack snapshot's timeline whose buckets' trees were stored; None otherwise."""
    if query.time_range is None or query.time_range[0] != "bucket":
        return None
    column, first, last = query.time_range
    plain = CallTreeQuery(lifespan=query.lifespan, time_range=None)
    if query.options != plain.options or query.category or query.generation is not None:
        return None
    made = Timeline.objects.filter(snapshot_id=snapshot.pk).values_list("made", flat=True).first()
    if not made:
        return None
    return RangeSource(snapshot, first, last, made)


class _RangeSQL:
    """TimedCallTreeNode's counters summed over a range's buckets under a lifespan filter, as
    SQL over the table aliased `g` (a node's rows in the range, grouped by node)."""

    def __init__(self, lifespan: str, first: int, last: int, app_id: int) -> None:
        self.kinds = {"persistent": ("persistent",), "transient": ("transient",)}.get(
            lifespan, ("persistent", "transient")
        )
        self.span = f"bucket BETWEEN {int(first)} AND {int(last)}"  # two ints: no parameter
        self.app_id = app_id  # named by each table, as StoredCallTree's (`of_app`)

    def _sum(self, template: str) -> str:
        total = " + ".join(f"SUM(g.{template.format(kind)})" for kind in self.kinds)
        return f"CAST({total} AS BIGINT)"  # PostgreSQL sums bigints as numeric

    def bytes(self) -> str:
        return self._sum("{}_bytes")

    def count(self) -> str:
        return self._sum("{}")

    def kept(self) -> str:
        """Nodes that hold something in the range under the lifespan filter."""
        held = (f"SUM(g.{k}) > 0 OR SUM(g.{k}_bytes) > 0" for k in self.kinds)
        return f"({' OR '.join(held)})"

    def row_kept(self, alias: str) -> str:
        """A row (one bucket of a node) that holds something: its node then does (counters
        are never negative)."""
        held = (f"{alias}.{k} > 0 OR {alias}.{k}_bytes > 0" for k in self.kinds)
        return f"({' OR '.join(held)})"

    def grouped(self, where: str, extra: str = "", source: str = f"{_TIMED} g") -> str:
        """The nodes under `where` (over `g` of `source`, its parameters after the snapshot's)
        held in the range: node_id, frame_id, snapshot_id, parent_id, b, c, sb, sc (and
        `extra` columns, which are grouped by)."""
        return (
            f"SELECT g.node_id, g.frame_id, g.snapshot_id, g.parent_id{extra}, "
            f"{self.bytes()} AS b, {self.count()} AS c, {self._sum('self_{}_bytes')} AS sb, "
            f"{self._sum('self_{}')} AS sc FROM {source} WHERE {of_app('g', self.app_id)} "
            "AND g.snapshot_id = %s "
            f"AND g.{self.span} AND {where} "
            f"GROUP BY g.snapshot_id, g.node_id, g.parent_id, g.frame_id{extra} "
            f"HAVING {self.kept()}"
        )

    def views(self, inner: str) -> str:
        """The rows of `inner` with has_children and their frames (`StoredCallTree.views`)."""
        below = (
            f"EXISTS (SELECT 1 FROM {_TIMED} k WHERE {of_app('k', self.app_id)} "
            "AND k.snapshot_id = p.snapshot_id "
            f"AND k.parent_id = p.node_id AND k.{self.span} AND {self.row_kept('k')}) "
            "AS has_children"
        )
        return f"SELECT p.*, {below}, " + with_frames(inner, self.app_id)


class RangeCallTree(StoredCallTree):
    """The default tree of a range, read level by level from TimedCallTreeNode (its ids are
    stack node ids, "(no stack)" is `n`: StoredCallTree's, with the range's totals)."""

    def __init__(self, source: RangeSource, lifespan: str) -> None:
        super().__init__(source.snapshot, lifespan)
        self.range_sql = _RangeSQL(lifespan, source.first, source.last, source.snapshot.app_id)
        self.span = (source.first, source.last)
        p, pb, t, tb = lifespan_counts(source.totals(), lifespan)
        self.total_bytes, self.total_count = pb + tb, p + t

    @staticmethod
    def _parent(parent_id: int | None) -> tuple[str, list[int]]:
        if parent_id is None:
            return "g.parent_id IS NULL", []
        return "g.parent_id = %s", [parent_id]

    def _level(self, parent_id: int | None, offset: int, limit: int) -> list[dict[str, Any]]:
        s = self.range_sql
        where, params = self._parent(parent_id)
        inner = (
            "SELECT n.*, COUNT(*) OVER () AS total, SUM(n.b) OVER () AS sum_b, "
            f"SUM(n.c) OVER () AS sum_c FROM ({s.grouped(where)}) n "
            "ORDER BY n.b DESC, n.c DESC, n.node_id LIMIT %s OFFSET %s"
        )
        sql = s.views(inner) + " ORDER BY p.b DESC, p.c DESC, p.node_id"
        return fetch(sql, [self.snapshot_id, *params, limit, offset])

    def _sums(self, parent_id: int | None) -> tuple[int, int, int]:
        where, params = self._parent(parent_id)
        row = fetch(
            "SELECT COUNT(*) AS n, SUM(n.b) AS b, SUM(n.c) AS c "
            f"FROM ({self.range_sql.grouped(where)}) n",
            [self.snapshot_id, *params],
        )[0]
        return int(row["n"]), int(row["b"] or 0), int(row["c"] or 0)

    def _heaviest_levels(self, root_id: int, limit: int) -> list[dict[str, Any]]:
        s = self.range_sql
        path = f"heavy, {_TIMED} g"  # the children of each node of the path
        sql = (
            "WITH RECURSIVE heavy(node_id, depth) AS ("
            "SELECT CAST(%s AS BIGINT), 0 UNION ALL "
            f"SELECT (SELECT g.node_id FROM {_TIMED} g WHERE {of_app('g', s.app_id)} "
            "AND g.snapshot_id = %s "
            f"AND g.parent_id = heavy.node_id AND g.{s.span} GROUP BY g.node_id "
            f"HAVING {s.kept()} ORDER BY {s.bytes()} DESC, {s.count()} DESC, g.node_id "
            "LIMIT 1), heavy.depth + 1 FROM heavy "
            "WHERE heavy.node_id IS NOT NULL AND heavy.depth < %s), "
            f"ranked AS ({s.grouped('g.parent_id = heavy.node_id', ', heavy.depth', path)}), "
            "numbered AS (SELECT r.*, ROW_NUMBER() OVER (PARTITION BY r.parent_id "
            "ORDER BY r.b DESC, r.c DESC, r.node_id) AS pos, "
            "COUNT(*) OVER (PARTITION BY r.parent_id) AS total FROM ranked r) "
            + s.views("SELECT * FROM numbered WHERE pos <= %s")
            + " ORDER BY p.depth, p.pos"
        )
        sid = self.snapshot_id
        return fetch(sql, [root_id, sid, MAX_DEPTH, sid, limit])

    def node(self, node_id: str) -> NodeView | None:
        if node_id == "n":
            return self._no_stack_view()
        stack_id = stack_id_of(node_id)
        if stack_id is None:
            return None
        s = self.range_sql
        rows = fetch(s.views(s.grouped("g.node_id = %s")), [self.snapshot_id, stack_id])
        return self._views(rows)[0] if rows else None

    def _exists(self, stack_id: int) -> bool:
        return TimedCallTreeNode.objects.filter(
            snapshot_id=self.snapshot_id, node_id=stack_id, bucket__range=self.span
        ).exists()


def range_tree_whole(source: RangeSource, lifespan: str) -> CallTree:
    """The range's default tree built whole (two queries: its nodes with their own counters
    summed over its buckets, their frames), for what needs every node at once."""
    nodes = (
        TimedCallTreeNode.objects.filter(
            snapshot_id=source.snapshot.pk, bucket__range=(source.first, source.last)
        )
        .values_list("node_id", "parent_id", "frame_id")
        .order_by()
        .annotate(
            *(
                Sum(f"self_{k}")
                for k in ("persistent", "persistent_bytes", "transient", "transient_bytes")
            )
        )
    )
    return tree_of_nodes(
        ((n, parent, frame, *(int(v or 0) for v in counts)) for n, parent, frame, *counts in nodes),
        source.totals(),
        lifespan,
    )
