"""A snapshot's default call tree (all categories, all threads, all generations, not inverted,
no folding), read from CallTreeNode, computed at ingest.

Frames are joined to the nodes in SQL (CallTreeNode.frame_id is a plain column, not a relation the
ORM could follow), so a level of the tree (the children of one node with their labels and whether
they have children) is one query, and the heaviest path below a root one recursive query whatever
its depth. The SQL is plain enough for both SQLite and PostgreSQL (window functions, WITH
RECURSIVE).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import groupby
from typing import Any

from django.db import connection

from memdash.allocations.logic.analysis import lifespan_counts
from memdash.allocations.logic.calltree.build import build_call_tree
from memdash.allocations.logic.calltree.tree import (
    NO_STACK_LABEL,
    CallTree,
    FrameInfo,
    NodeView,
    StackInfo,
    TreeOptions,
    TreeRow,
    frame_fields,
    tree_percent,
)
from memdash.allocations.models import CallTreeNode, Frame, Snapshot
from memdash.core.logic.numbers import int64
from memdash.core.reads.where_in import where_in_parts

_NODES = CallTreeNode._meta.db_table


def of_app(alias: str, app_id: int) -> str:
    """The app's rows of a table aliased `alias`: every table of these queries names the app
    (an int, no parameter), so Citus sends each query whole to the app's one worker (an outer
    join, a correlated subquery or a recursive one it refuses across shards)."""
    return f"{alias}.app_id = {int(app_id)}"


def with_frames(inner: str, app_id: int) -> str:
    """The frame of each row of a query `p` of nodes ("offset" is quoted: OFFSET is an SQL
    keyword)."""
    return (
        'f.symbol, f.image, f."offset", f.address, f.is_system, f.file, f.line, f.inlined '
        f"FROM ({inner}) p LEFT JOIN {Frame._meta.db_table} f "
        f"ON f.id = p.frame_id AND {of_app('f', app_id)}"
    )


MAX_DEPTH = 100_000  # stops the heaviest path's recursion should stored rows ever form a loop


class _NodeSQL:
    """CallTreeNode's counters under one lifespan filter, as SQL over a table alias."""

    def __init__(self, lifespan: str, app_id: int) -> None:
        self.kinds = {"persistent": ("persistent",), "transient": ("transient",)}.get(
            lifespan, ("persistent", "transient")
        )
        self.app_id = app_id

    def app(self, alias: str) -> str:
        return of_app(alias, self.app_id)

    def _sum(self, alias: str, template: str) -> str:
        return " + ".join(f"{alias}.{template.format(kind)}" for kind in self.kinds)

    def bytes(self, alias: str) -> str:
        return self._sum(alias, "{}_bytes")

    def count(self, alias: str) -> str:
        return self._sum(alias, "{}")

    def kept(self, alias: str) -> str:
        """Nodes that hold something under the lifespan filter."""
        held = (f"{alias}.{k} > 0 OR {alias}.{k}_bytes > 0" for k in self.kinds)
        return f"({' OR '.join(held)})"

    def columns(self, alias: str) -> str:
        """What a node view needs of the node itself (`snapshot_id` for `has_children`)."""
        return (
            f"{alias}.node_id, {alias}.frame_id, {alias}.snapshot_id, "
            f"{self.bytes(alias)} AS b, {self.count(alias)} AS c, "
            f"{self._sum(alias, 'self_{}_bytes')} AS sb, {self._sum(alias, 'self_{}')} AS sc"
        )

    def order(self, alias: str) -> str:
        """Heaviest first, as every tree orders its children (ties by id: the same every run)."""
        return f"{self.bytes(alias)} DESC, {self.count(alias)} DESC, {alias}.node_id"

    def views(self, inner: str) -> str:
        """The rows of `inner` (selecting `columns`) with has_children and their frames."""
        below = (
            f"EXISTS (SELECT 1 FROM {_NODES} k WHERE {self.app('k')} "
            "AND k.snapshot_id = p.snapshot_id "
            f"AND k.parent_id = p.node_id AND {self.kept('k')}) AS has_children"
        )
        return f"SELECT p.*, {below}, " + with_frames(inner, self.app_id)


def frame_infos(frame_ids: Iterable[int]) -> dict[int, FrameInfo]:
    ids = list(set(frame_ids))
    frames: dict[int, FrameInfo] = {}
    for part in where_in_parts("id", ids):
        for row in Frame.objects.filter(part).values_list(
            "id", "symbol", "image", "offset", "address", "is_system", "file", "line", "inlined"
        ):
            fid, symbol, image, offset, address, is_system, file, line, inlined = row
            frames[fid] = FrameInfo(symbol, image, offset, is_system, address, file, line, inlined)
    return frames


# A stored node with its own counters: (node, parent, frame, p, pb, t, tb)
NodeRow = tuple[int, int | None, int, int, int, int, int]


def tree_of_nodes(nodes: Iterable[NodeRow], totals: Sequence[int], lifespan: str) -> CallTree:
    """A tree built whole from stored nodes and their own counters (CallTreeNode's, or a
    range's), what has no stack being what `totals` (p, pb, t, tb) holds beyond them; for what
    needs every node at once (a flame graph, Top Functions)."""
    stacks: dict[int, StackInfo] = {}
    rows: list[TreeRow] = []
    for node_id, parent_id, frame_id, *counters in nodes:
        stacks[node_id] = StackInfo(parent_id, frame_id)
        p, pb, t, tb = lifespan_counts(counters, lifespan)
        if p or pb or t or tb:
            rows.append(TreeRow(node_id, None, pb + tb, p + t))
    p, pb, t, tb = lifespan_counts(list(totals), lifespan)
    no_stack = (pb + tb - sum(r.bytes for r in rows), p + t - sum(r.count for r in rows))
    if no_stack[0] > 0 or no_stack[1] > 0:  # what has no stack, as StoredCallTree shows it
        rows.append(TreeRow(None, None, *no_stack))
    frames = frame_infos(s.frame_id for s in stacks.values())
    return build_call_tree(rows, stacks, frames, TreeOptions())


def stack_id_of(node_id: str) -> int | None:
    """The stack node id a stored tree's node id names; None when it names none (another kind
    of id, or a number outside the signed 64-bit ids, which SQL would refuse rather than find
    no such node)."""
    return int64(node_id)


def fetch(sql: str, params: list[int]) -> list[dict[str, Any]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


class StoredCallTree(CallTree):
    """A snapshot's default tree, read level by level from CallTreeNode. Ids are stack node ids;
    the allocations without a stack are the "(no stack)" root `n` (the snapshot's totals minus
    those of the stored roots).

    A level (the children of one node, with their frames and whether they have children) is one
    query; the heaviest path below a root is one more, whatever its depth. An instance serves one
    request and keeps the pages it read, so the roots of an answer are not read twice."""

    def __init__(self, snapshot: Snapshot, lifespan: str) -> None:
        self.options = TreeOptions()
        self.snapshot_id = snapshot.pk
        self.sql = _NodeSQL(lifespan, snapshot.app_id)
        p, pb, t, tb = lifespan_counts(
            (snapshot.persistent, snapshot.persistent_bytes, snapshot.transient,
             snapshot.transient_bytes),
            lifespan,
        )  # fmt: skip
        self.total_bytes, self.total_count = pb + tb, p + t
        self._no_stack: tuple[int, int] | None = None
        self._pages: dict[tuple[str | None, int, int], tuple[list[NodeView], int] | None] = {}

    # --- SQL -------------------------------------------------------------------------------------

    def _level(self, parent_id: int | None, offset: int, limit: int) -> list[dict[str, Any]]:
        """A page of the children of a node (the roots for None), with how many there are and
        the sums of all of them (the roots' sums give the "(no stack)" node) on every row."""
        s = self.sql
        parent = "n.parent_id IS NULL" if parent_id is None else "n.parent_id = %s"
        inner = (
            f"SELECT {s.columns('n')}, COUNT(*) OVER () AS total, "
            f"SUM({s.bytes('n')}) OVER () AS sum_b, SUM({s.count('n')}) OVER () AS sum_c "
            f"FROM {_NODES} n WHERE {s.app('n')} AND n.snapshot_id = %s AND {parent} "
            f"AND {s.kept('n')} ORDER BY {s.order('n')} LIMIT %s OFFSET %s"
        )
        params = [self.snapshot_id, *([] if parent_id is None else [parent_id]), limit, offset]
        return fetch(s.views(inner) + " ORDER BY p.b DESC, p.c DESC, p.node_id", params)

    def _sums(self, parent_id: int | None) -> tuple[int, int, int]:
        """(how many, bytes, count) of the children of a node (the roots for None)."""
        s = self.sql
        parent = "n.parent_id IS NULL" if parent_id is None else "n.parent_id = %s"
        row = fetch(
            f"SELECT COUNT(*) AS n, SUM({s.bytes('n')}) AS b, SUM({s.count('n')}) AS c "
            f"FROM {_NODES} n WHERE {s.app('n')} AND n.snapshot_id = %s AND {parent} "
            f"AND {s.kept('n')}",
            [self.snapshot_id, *([] if parent_id is None else [parent_id])],
        )[0]
        return int(row["n"]), int(row["b"] or 0), int(row["c"] or 0)

    def _heaviest_levels(self, root_id: int, limit: int) -> list[dict[str, Any]]:
        """From a root down, following the heaviest child, the first `limit` children of each
        node on the way (one recursive query rather than one query per level)."""
        s = self.sql
        sql = (
            "WITH RECURSIVE heavy(node_id, depth) AS ("
            "SELECT CAST(%s AS BIGINT), 0 UNION ALL "
            f"SELECT (SELECT n.node_id FROM {_NODES} n WHERE {s.app('n')} AND n.snapshot_id = %s "
            f"AND n.parent_id = heavy.node_id AND {s.kept('n')} ORDER BY {s.order('n')} LIMIT 1), "
            "heavy.depth + 1 FROM heavy WHERE heavy.node_id IS NOT NULL AND heavy.depth < %s), "
            f"ranked AS (SELECT {s.columns('n')}, n.parent_id, heavy.depth, "
            f"ROW_NUMBER() OVER (PARTITION BY n.parent_id ORDER BY {s.order('n')}) AS pos, "
            "COUNT(*) OVER (PARTITION BY n.parent_id) AS total "
            f"FROM heavy JOIN {_NODES} n ON {s.app('n')} AND n.snapshot_id = %s "
            "AND n.parent_id = heavy.node_id "
            f"WHERE {s.kept('n')}) "
            + s.views("SELECT * FROM ranked WHERE pos <= %s")
            + " ORDER BY p.depth, p.pos"
        )
        sid = self.snapshot_id
        return fetch(sql, [root_id, sid, MAX_DEPTH, sid, limit])

    # --- views -----------------------------------------------------------------------------------

    def _views(self, rows: list[dict[str, Any]]) -> list[NodeView]:
        views = []
        for r in rows:
            frame = FrameInfo(
                r["symbol"] or "", r["image"] or "", r["offset"], bool(r["is_system"]),
                r["address"], r["file"] or "", r["line"], bool(r["inlined"]),
            )  # fmt: skip
            views.append(
                NodeView(
                    id=str(r["node_id"]),
                    symbol=frame.label,
                    bytes=r["b"],
                    count=r["c"],
                    self_bytes=r["sb"],
                    self_count=r["sc"],
                    has_children=bool(r["has_children"]),
                    percent=tree_percent(r["b"], r["c"], self.total_bytes, self.total_count),
                    **frame_fields(frame),
                )
            )
        return views

    def no_stack(self) -> tuple[int, int]:
        """(bytes, count) of the allocations without a stack."""
        if self._no_stack is None:
            _, root_bytes, root_count = self._sums(None)
            self._no_stack = self._without_roots(root_bytes, root_count)
        return self._no_stack

    def _without_roots(self, root_bytes: int, root_count: int) -> tuple[int, int]:
        """The snapshot's totals less those of the stored roots: what has no stack."""
        return self.total_bytes - root_bytes, self.total_count - root_count

    def _no_stack_view(self) -> NodeView | None:
        nbytes, count = self.no_stack()
        if nbytes <= 0 and count <= 0:
            return None
        return NodeView(
            id="n", symbol=NO_STACK_LABEL, image="", bytes=nbytes, count=count,
            self_bytes=nbytes, self_count=count, has_children=False,
            percent=tree_percent(nbytes, count, self.total_bytes, self.total_count),
            kind="no_stack",
        )  # fmt: skip

    def _roots(self, offset: int, limit: int) -> tuple[list[NodeView], int]:
        """The stored roots with the "(no stack)" node put in its place by bytes, in one query:
        from one root before the page (the page starts there when "(no stack)" is above it)."""
        start = max(offset - 1, 0)
        rows = self._level(None, start, limit + (1 if offset else 0))
        if rows:
            stored = int(rows[0]["total"])
            self._no_stack = self._without_roots(int(rows[0]["sum_b"]), int(rows[0]["sum_c"]))
        elif start:  # past the last root: only how many there are is left to tell
            stored, root_bytes, root_count = self._sums(None)
            self._no_stack = self._without_roots(root_bytes, root_count)
        else:
            stored = 0
            self._no_stack = self._without_roots(0, 0)
        views = self._views(rows)  # the stored roots from `start`
        extra = self._no_stack_view()
        if extra is None:
            return views[offset - start : offset - start + limit], stored
        # The stored roots heavier than "(no stack)" come first (a prefix of the order); when all
        # the rows read are, it is below this page and `before` only needs to be past it.
        weight = (extra.bytes, extra.count)
        lighter = [i for i, v in enumerate(views) if (v.bytes, v.count) <= weight]
        before = start + (lighter[0] if lighter else len(views))
        page: list[NodeView] = []
        for i in range(offset, offset + limit):
            j = i if i < before else i - 1  # index among the stored roots
            if i == before:
                page.append(extra)
            elif 0 <= j - start < len(views):
                page.append(views[j - start])
        return page, stored + 1

    # --- the CallTree interface ------------------------------------------------------------------

    def children(
        self, node_id: str | None, offset: int = 0, limit: int = 100
    ) -> tuple[list[NodeView], int] | None:
        key = (node_id, offset, limit)
        if key not in self._pages:
            self._pages[key] = self._children(node_id, offset, limit)
        return self._pages[key]

    def _children(
        self, node_id: str | None, offset: int, limit: int
    ) -> tuple[list[NodeView], int] | None:
        if node_id is None:
            return self._roots(offset, limit)
        if node_id == "n":
            return ([], 0) if self._no_stack_view() else None
        stack_id = stack_id_of(node_id)
        if stack_id is None:
            return None
        rows = self._level(stack_id, offset, limit)
        if rows:
            return self._views(rows), int(rows[0]["total"])
        total = self._sums(stack_id)[0] if offset else 0  # past the last page, or a leaf
        if not total and not self._exists(stack_id):
            return None
        return [], total

    def _exists(self, stack_id: int) -> bool:
        return CallTreeNode.objects.filter(snapshot_id=self.snapshot_id, node_id=stack_id).exists()

    def node(self, node_id: str) -> NodeView | None:
        if node_id == "n":
            return self._no_stack_view()
        stack_id = stack_id_of(node_id)
        if stack_id is None:
            return None
        s = self.sql
        inner = (
            f"SELECT {s.columns('n')} FROM {_NODES} n WHERE {s.app('n')} AND n.snapshot_id = %s "
            f"AND n.node_id = %s AND {s.kept('n')}"
        )
        rows = fetch(s.views(inner), [self.snapshot_id, stack_id])
        return self._views(rows)[0] if rows else None

    def heaviest_pages(self, limit: int) -> list[tuple[str, list[NodeView], int]]:
        page = self.children(None, 0, limit)
        if not page or not page[0] or not page[0][0].has_children:
            return []  # the heaviest root is "(no stack)" or a leaf
        rows = self._heaviest_levels(int(page[0][0].id), limit)
        return [
            (str(parent), self._views(level), int(level[0]["total"]))
            for parent, level in ((p, list(g)) for p, g in groupby(rows, lambda r: r["parent_id"]))
        ]

    def heaviest_path(self) -> list[str]:
        page = self.children(None, 0, 1)
        if not page or not page[0]:
            return []
        return [page[0][0].id] + [views[0].id for _, views, _ in self.heaviest_pages(1)]
