"""Reads of call trees: a snapshot's or a build's, under the statistics' filters.

The default tree of a snapshot (all categories, all threads, all generations, not inverted, no
folding) is read from CallTreeNode, computed at ingest: the children of a node are one indexed
query. Every other combination is built on demand by `calltree.build_call_tree` from the
allocation rows (filtered and summed in SQL) plus the stack nodes and frames of their paths, and
kept in Django's cache keyed by the snapshot (or the build's snapshots) and the options, so only
the first request pays for it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from django.core.cache import cache
from django.db.models import Count, Exists, F, Max, OuterRef, Q, QuerySet, Sum

from memdash.allocations.analysis import lifespan_counts
from memdash.allocations.calltree import (
    NO_STACK_LABEL,
    CallTree,
    FrameInfo,
    NodeView,
    StackInfo,
    TreeOptions,
    TreeRow,
    build_call_tree,
    tree_percent,
)
from memdash.allocations.models import (
    AllocationRow,
    CallTreeNode,
    Category,
    Frame,
    Snapshot,
    StackNode,
)
from memdash.allocations.selectors import BASELINE
from memdash.core.models import Build

CACHE_SECONDS = 60 * 60
CACHE_VERSION = 1
_CHUNK = 2000  # ids per IN (...) query


class TreeUnavailable(Exception):
    """The rows needed for this view of the tree are gone (pruned); only the default is kept."""


@dataclass(frozen=True)
class CallTreeQuery:
    category: str = ""  # a category name; "" for all categories
    lifespan: str = "all"
    generation: int | str | None = None  # an index, BASELINE, or None for all
    inverted: bool = False
    hide_system: bool = False
    by_thread: bool = False

    @property
    def options(self) -> TreeOptions:
        return TreeOptions(self.inverted, self.hide_system, self.by_thread)

    @property
    def is_default(self) -> bool:
        """The tree precomputed at ingest (any lifespan: it keeps all four counters)."""
        return not self.category and self.generation is None and self.options == TreeOptions()

    def cache_token(self) -> str:
        text = repr((self.category, self.lifespan, self.generation, self.options))
        return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


# --- lifespan as SQL --------------------------------------------------------------------------


def _bytes_expr(lifespan: str):
    if lifespan == "persistent":
        return F("persistent_bytes")
    if lifespan == "transient":
        return F("transient_bytes")
    return F("persistent_bytes") + F("transient_bytes")


def _count_expr(lifespan: str):
    if lifespan == "persistent":
        return F("persistent")
    if lifespan == "transient":
        return F("transient")
    return F("persistent") + F("transient")


def _kept(lifespan: str, prefix: str = "") -> Q:
    """Rows that hold something under the lifespan filter."""
    persistent = Q(**{f"{prefix}persistent__gt": 0}) | Q(**{f"{prefix}persistent_bytes__gt": 0})
    transient = Q(**{f"{prefix}transient__gt": 0}) | Q(**{f"{prefix}transient_bytes__gt": 0})
    return {"persistent": persistent, "transient": transient}.get(lifespan, persistent | transient)


def _frame_infos(frame_ids: Iterable[int]) -> dict[int, FrameInfo]:
    ids = list(set(frame_ids))
    frames: dict[int, FrameInfo] = {}
    for start in range(0, len(ids), _CHUNK):
        for fid, symbol, image, offset, address, is_system in Frame.objects.filter(
            id__in=ids[start : start + _CHUNK]
        ).values_list("id", "symbol", "image", "offset", "address", "is_system"):
            frames[fid] = FrameInfo(symbol, image, offset, is_system, address)
    return frames


# --- the default tree, read from CallTreeNode -----------------------------------------------------


class StoredCallTree(CallTree):
    """A snapshot's default tree, read node by node from CallTreeNode. Ids are stack node ids;
    the allocations without a stack are the "(no stack)" root `n` (the snapshot's totals minus
    those of the stored roots)."""

    def __init__(self, snapshot: Snapshot, lifespan: str) -> None:
        self.options = TreeOptions()
        self.snapshot_id = snapshot.pk
        self.lifespan = lifespan
        p, pb, t, tb = lifespan_counts(
            (snapshot.persistent, snapshot.persistent_bytes, snapshot.transient,
             snapshot.transient_bytes),
            lifespan,
        )  # fmt: skip
        self.total_bytes, self.total_count = pb + tb, p + t
        self._no_stack: tuple[int, int] | None = None

    def _nodes(self) -> QuerySet:
        return CallTreeNode.objects.filter(snapshot_id=self.snapshot_id)

    def _children_query(self, parent_id: int | None) -> QuerySet:
        nodes = self._nodes()
        nodes = (
            nodes.filter(parent_id__isnull=True)
            if parent_id is None
            else nodes.filter(parent_id=parent_id)
        )
        return nodes.filter(_kept(self.lifespan)).annotate(
            b=_bytes_expr(self.lifespan), c=_count_expr(self.lifespan)
        )

    def _annotated(self, nodes: QuerySet) -> QuerySet:
        below = self._nodes().filter(parent_id=OuterRef("node_id")).filter(_kept(self.lifespan))
        return nodes.annotate(
            sb=_self_bytes(self.lifespan),
            sc=_self_count(self.lifespan),
            has_children=Exists(below),
        ).values("node_id", "frame_id", "b", "c", "sb", "sc", "has_children")

    def _views(self, rows: list[dict]) -> list[NodeView]:
        frames = _frame_infos(r["frame_id"] for r in rows)
        views = []
        for r in rows:
            frame = frames.get(r["frame_id"], FrameInfo())
            views.append(
                NodeView(
                    id=str(r["node_id"]),
                    symbol=frame.label,
                    image=frame.image,
                    bytes=r["b"],
                    count=r["c"],
                    self_bytes=r["sb"],
                    self_count=r["sc"],
                    has_children=bool(r["has_children"]),
                    percent=tree_percent(r["b"], r["c"], self.total_bytes, self.total_count),
                    system=frame.is_system,
                )
            )
        return views

    def _page(self, parent_id: int | None, offset: int, limit: int) -> tuple[list[NodeView], int]:
        query = self._children_query(parent_id)
        ordered = self._annotated(query.order_by("-b", "-c", "node_id"))
        rows = list(ordered[offset : offset + limit])
        # A page that is not full is the last one: no need to count.
        last_page = bool(rows) and len(rows) < limit
        total = offset + len(rows) if last_page else query.count()
        return self._views(rows), total

    def no_stack(self) -> tuple[int, int]:
        """(bytes, count) of the allocations without a stack."""
        if self._no_stack is None:
            sums = self._children_query(None).aggregate(root_bytes=Sum("b"), root_count=Sum("c"))
            self._no_stack = (
                self.total_bytes - (sums["root_bytes"] or 0),
                self.total_count - (sums["root_count"] or 0),
            )
        return self._no_stack

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
        """The stored roots with the "(no stack)" node put in its place by bytes."""
        extra = self._no_stack_view()
        if extra is None:
            return self._page(None, offset, limit)
        before = (
            self._children_query(None)
            .filter(Q(b__gt=extra.bytes) | Q(b=extra.bytes, c__gt=extra.count))
            .count()
        )
        start = offset if offset <= before else offset - 1
        views, total = self._page(None, start, limit)
        if offset <= before < offset + limit:
            views.insert(before - offset, extra)
        return views[:limit], total + 1

    def children(
        self, node_id: str | None, offset: int = 0, limit: int = 100
    ) -> tuple[list[NodeView], int] | None:
        if node_id is None:
            return self._roots(offset, limit)
        if node_id == "n":
            return ([], 0) if self._no_stack_view() else None
        try:
            stack_id = int(node_id)
        except ValueError:
            return None
        views, total = self._page(stack_id, offset, limit)
        if not total and not self._nodes().filter(node_id=stack_id).exists():
            return None
        return views, total

    def node(self, node_id: str) -> NodeView | None:
        if node_id == "n":
            return self._no_stack_view()
        try:
            stack_id = int(node_id)
        except ValueError:
            return None
        nodes = self._nodes().filter(node_id=stack_id).filter(_kept(self.lifespan))
        rows = list(
            self._annotated(
                nodes.annotate(b=_bytes_expr(self.lifespan), c=_count_expr(self.lifespan))
            )[:1]
        )
        return self._views(rows)[0] if rows else None


def _self_bytes(lifespan: str):
    if lifespan == "persistent":
        return F("self_persistent_bytes")
    if lifespan == "transient":
        return F("self_transient_bytes")
    return F("self_persistent_bytes") + F("self_transient_bytes")


def _self_count(lifespan: str):
    if lifespan == "persistent":
        return F("self_persistent")
    if lifespan == "transient":
        return F("self_transient")
    return F("self_persistent") + F("self_transient")


# --- trees built on demand --------------------------------------------------------------------


def _thread_name(threads: list, index: int | None) -> str | None:
    if index is None:
        return None
    if 0 <= index < len(threads) and isinstance(threads[index], str) and threads[index]:
        return threads[index]
    return f"Thread {index}"


def _tree_rows(snapshots: list[Snapshot], query: CallTreeQuery, category_id: int) -> list[TreeRow]:
    """The allocation rows of the snapshots under the query's filters, summed per stack (and
    per snapshot and thread when separating by thread)."""
    rows = AllocationRow.objects.filter(
        snapshot_id__in=[s.pk for s in snapshots]
    ).filter(_kept(query.lifespan))  # fmt: skip
    if category_id:
        rows = rows.filter(category_id=category_id)
    if query.generation == BASELINE:
        rows = rows.filter(generation__isnull=True)
    elif query.generation is not None:
        rows = rows.filter(generation=int(query.generation))
    group = ["snapshot_id", "stack_id", "thread"] if query.by_thread else ["stack_id"]
    sums = rows.values(*group).annotate(
        b=Sum(_bytes_expr(query.lifespan)), c=Sum(_count_expr(query.lifespan))
    )
    threads = {s.pk: s.threads or [] for s in snapshots}
    return [
        TreeRow(
            r["stack_id"],
            _thread_name(threads[r["snapshot_id"]], r["thread"]) if query.by_thread else None,
            r["b"] or 0,
            r["c"] or 0,
        )
        for r in sums.order_by()
    ]


def _stack_paths(
    stack_ids: Iterable[int | None], snapshots: list[Snapshot]
) -> dict[int, StackInfo]:
    """The stack nodes of the given stacks and of all their callers.

    For one snapshot with many stacks, its CallTreeNode rows already hold every node on the path
    of its allocations (one indexed query); otherwise the nodes are read level by level from
    StackNode (by primary key), starting from the stacks and going up to their roots."""
    wanted = {s for s in stack_ids if s is not None}
    stacks: dict[int, StackInfo] = {}
    if len(snapshots) == 1 and len(wanted) > _CHUNK:
        for node_id, parent_id, frame_id in CallTreeNode.objects.filter(
            snapshot_id=snapshots[0].pk
        ).values_list("node_id", "parent_id", "frame_id"):
            stacks[node_id] = StackInfo(parent_id, frame_id)
    pending = wanted - stacks.keys()
    while pending:
        ids = list(pending)
        parents: set[int] = set()
        for start in range(0, len(ids), _CHUNK):
            for node_id, parent_id, frame_id in StackNode.objects.filter(
                id__in=ids[start : start + _CHUNK]
            ).values_list("id", "parent_id", "frame_id"):
                stacks[node_id] = StackInfo(parent_id, frame_id)
                if parent_id is not None:
                    parents.add(parent_id)
        pending = parents - stacks.keys()
    return stacks


def _compute_tree(app_id: int, snapshots: list[Snapshot], query: CallTreeQuery) -> CallTree:
    category_id = 0
    if query.category:
        category = Category.objects.filter(app_id=app_id, name=query.category).first()
        if category is None:  # no such category in this app: nothing was allocated in it
            return build_call_tree([], {}, {}, query.options)
        category_id = category.pk
    rows = _tree_rows(snapshots, query, category_id)
    stacks = _stack_paths((r.stack_id for r in rows), snapshots)
    frames = _frame_infos(s.frame_id for s in stacks.values())
    return build_call_tree(rows, stacks, frames, query.options)


def _cached(key: str, compute) -> CallTree:
    tree = cache.get(key)
    if tree is None:
        tree = compute()
        cache.set(key, tree, CACHE_SECONDS)
    return tree


def snapshot_call_tree(snapshot: Snapshot, query: CallTreeQuery) -> CallTree:
    """The call tree of a snapshot under `query` (raises TreeUnavailable when the rows it needs
    were pruned)."""
    if query.is_default:
        if (
            snapshot.rows_pruned_at is not None
            and not CallTreeNode.objects.filter(snapshot_id=snapshot.pk).exists()
        ):
            raise TreeUnavailable(
                "the call tree of this snapshot was removed by retention "
                "(prune_allocation_rows without --keep-call-tree); its statistics are kept"
            )
        return StoredCallTree(snapshot, query.lifespan)
    if snapshot.rows_pruned_at is not None:
        raise TreeUnavailable(
            "the allocation rows of this snapshot were pruned: only the default call tree "
            "(all categories, not inverted, not folded, not by thread) is kept"
        )
    key = (
        f"memdash:calltree:{CACHE_VERSION}:snapshot:{snapshot.pk}:"
        f"{snapshot.created_at.timestamp()}:{query.cache_token()}"
    )
    return _cached(key, lambda: _compute_tree(snapshot.app_id, [snapshot], query))


def build_call_tree_for(build: Build, query: CallTreeQuery) -> CallTree:
    """The call tree of a build over its snapshots (those whose rows are kept), on demand."""
    snapshots = list(
        Snapshot.objects.filter(build=build, rows_pruned_at__isnull=True).only(
            "id", "threads", "created_at"
        )
    )
    state = Snapshot.objects.filter(build=build).aggregate(
        n=Count("id"), last=Max("id"), latest=Max("created_at")
    )
    latest = state["latest"].timestamp() if state["latest"] else 0
    key = (
        f"memdash:calltree:{CACHE_VERSION}:build:{build.pk}:{state['n']}:{state['last']}:"
        f"{latest}:{len(snapshots)}:{query.cache_token()}"
    )
    return _cached(key, lambda: _compute_tree(build.app_id, snapshots, query))


# --- what the API returns ---------------------------------------------------------------------


def call_tree_page(
    tree: CallTree, node_id: str | None, offset: int, limit: int, heaviest: bool = False
) -> dict | None:
    """The children of a node (the roots without one) as the API returns them; with `heaviest`
    (roots only) also the first page of children of each node on the heaviest path, so the page
    opens that path in one request. None when the node is not in the tree."""
    page = tree.children(node_id, offset, limit)
    if page is None:
        return None
    views, total = page
    data = {
        "node": node_id,
        "children": [v.as_dict() for v in views],
        "total": total,
        "offset": offset,
        "limit": limit,
        "more": max(0, total - offset - len(views)),
        "total_bytes": tree.total_bytes,
        "total_count": tree.total_count,
    }
    if heaviest and node_id is None:
        data["heaviest"] = [
            {
                "node": parent,
                "children": [v.as_dict() for v in views],
                "total": total,
                "more": max(0, total - len(views)),
            }
            for parent, views, total in tree.heaviest_pages(limit)
        ]
    return data
