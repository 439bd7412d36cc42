"""Reads of call trees: a snapshot's or a build's, under the statistics' filters.

The default tree of a snapshot (all categories, all threads, all generations, not inverted, no
folding) is read from CallTreeNode, computed at ingest (`calltree_stored`): the children of a node
with their frames are one query; so is that of a time range of its timeline, from the trees of
its time buckets (`calltree_ranged`). Every other combination is built on demand by
`calltree_build.build_call_tree` from the allocation rows (filtered and summed in SQL) plus the
stack nodes and frames of their paths (three queries, whatever the depth of the stacks), and kept
in Django's cache keyed by the snapshot (or the build's snapshots) and the options, so only the
first request pays for it. A tree built from more rows than a request may read (`InlineBudget`) is
built by a task instead (`calltree_jobs`, `tasks.read_or_queue`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from django.core.cache import cache
from django.db import connection
from django.db.models import F, Q, Sum
from django.db.models.expressions import Combinable

from memdash.allocations.logic.analysis import BASELINE
from memdash.allocations.logic.calltree.build import build_call_tree
from memdash.allocations.logic.calltree.merged import MergedCallTree
from memdash.allocations.logic.calltree.mining import (
    ConstrainedTree,
    inverted_of,
    mine_tree,
)
from memdash.allocations.logic.calltree.per_snapshot import MEDIAN, PerSnapshotTree
from memdash.allocations.logic.calltree.tree import (
    CallTree,
    StackInfo,
    TreeRow,
)
from memdash.allocations.models import (
    AllocationRow,
    CallTreeNode,
    Category,
    Snapshot,
    StackNode,
    TimedAllocationRow,
)
from memdash.allocations.reads.calltree.jobs import InlineBudget, TreeDeferred, TreeJob
from memdash.allocations.reads.calltree.made import (
    TREE,
    eligible,
    forget_made,
    made_object,
    usable,
)
from memdash.allocations.reads.calltree.query import CallTreeQuery
from memdash.allocations.reads.calltree.ranged import (
    RangeCallTree,
    range_source,
    range_tree_whole,
)
from memdash.allocations.reads.calltree.stored import StoredCallTree, frame_infos, tree_of_nodes
from memdash.allocations.reads.snapshots import build_snapshots
from memdash.core.models import Build

Json = dict[str, Any]
Progress = Callable[[float], None]  # how far a tree being built is, 0..1 (`calltree_jobs`)
CACHE_SECONDS = 60 * 60
# Part of every key: raise it when the cached trees change shape or module (they are pickled).
CACHE_VERSION = 4
_CHUNK = 2000  # ids per IN (...) query


class TreeUnavailable(Exception):
    """The rows needed for this view of the tree are gone (pruned); only the default is kept."""


# --- lifespan as SQL --------------------------------------------------------------------------


def _bytes_expr(lifespan: str) -> Combinable:
    if lifespan == "persistent":
        return F("persistent_bytes")
    if lifespan == "transient":
        return F("transient_bytes")
    return F("persistent_bytes") + F("transient_bytes")


def _count_expr(lifespan: str) -> Combinable:
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


def _span(query: CallTreeQuery) -> list[Q]:
    """The rows a query keeps: under its lifespan filter, made in its time range (if any)."""
    column, *span = query.time_range or ("", 0, 0)
    return [_kept(query.lifespan), *([Q(**{f"{column}__range": span})] if column else [])]


# --- trees built on demand --------------------------------------------------------------------


def _thread_name(threads: list[object], index: int | None) -> str | None:
    if index is None:
        return None
    name = threads[index] if 0 <= index < len(threads) else None
    if isinstance(name, str) and name:
        return name
    return f"Thread {index}"


def _tree_rows(
    app_id: int, snapshots: list[Snapshot], query: CallTreeQuery, by_snapshot: bool = False
) -> list[tuple[int | None, TreeRow]]:
    """The allocation rows of the snapshots under the query's filters, summed per stack (and
    per snapshot and thread when separating by thread), each with its snapshot's id when
    `by_snapshot` (else None)."""
    by_bucket = (query.time_range or ("",))[0] == "bucket"  # an events run's rows by bucket
    table = TimedAllocationRow if by_bucket else AllocationRow
    rows = table.objects.filter(*_span(query), snapshot_id__in=[s.pk for s in snapshots])
    if query.category:  # by name in the same query; no such category in the app: no rows
        names = Category.objects.filter(app_id=app_id).named([query.category]).values("pk")
        rows = rows.filter(category_id__in=names)
    if query.generation == BASELINE:
        rows = rows.filter(generation__isnull=True)
    elif query.generation is not None:
        rows = rows.filter(generation=int(query.generation))
    per_snapshot = query.by_thread or by_snapshot
    group = ["snapshot_id", "stack_id", *(["thread"] if query.by_thread else [])]
    sums = rows.values(*(group if per_snapshot else ["stack_id"])).annotate(
        b=Sum(_bytes_expr(query.lifespan)), c=Sum(_count_expr(query.lifespan))
    )
    threads = {s.pk: s.threads or [] for s in snapshots}
    return [
        (
            r["snapshot_id"] if by_snapshot else None,
            TreeRow(
                r["stack_id"],
                _thread_name(threads[r["snapshot_id"]], r["thread"]) if query.by_thread else None,
                r["b"] or 0,
                r["c"] or 0,
            ),
        )
        for r in sums.order_by()
    ]


def stack_paths(
    app_id: int, stack_ids: Iterable[int | None], snapshots: list[Snapshot]
) -> dict[int, StackInfo]:
    """The stack nodes of the given stacks (of the app's snapshots) and of all their callers.

    For one snapshot with many stacks, its CallTreeNode rows already hold every node on the path
    of its allocations (one indexed query); otherwise one recursive query per chunk of stacks
    walks StackNode (by primary key) from the stacks up to their roots, so the cost does not grow
    with the depth of the stacks (UNION drops the callers already met: shared prefixes are read
    once)."""
    wanted = {s for s in stack_ids if s is not None}
    stacks: dict[int, StackInfo] = {}
    if len(snapshots) == 1 and len(wanted) > _CHUNK:
        for node_id, parent_id, frame_id in CallTreeNode.objects.filter(
            snapshot_id=snapshots[0].pk
        ).values_list("node_id", "parent_id", "frame_id"):
            stacks[node_id] = StackInfo(parent_id, frame_id)
    pending = list(wanted - stacks.keys())
    # The app on both sides of the recursion: Citus runs a recursive query only when it names
    # the distribution column (the app's one worker then answers it).
    table = StackNode._meta.db_table
    for start in range(0, len(pending), _CHUNK):
        chunk = pending[start : start + _CHUNK]
        marks = ", ".join(["%s"] * len(chunk))
        sql = (
            "WITH RECURSIVE up(id, parent_id, frame_id) AS ("
            f"SELECT id, parent_id, frame_id FROM {table} WHERE app_id = %s AND id IN ({marks}) "
            f"UNION SELECT s.id, s.parent_id, s.frame_id FROM {table} s "
            "JOIN up ON s.id = up.parent_id AND s.app_id = %s"
            ") SELECT id, parent_id, frame_id FROM up"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [app_id, *chunk, app_id])
            for node_id, parent_id, frame_id in cursor.fetchall():
                stacks[node_id] = StackInfo(parent_id, frame_id)
    return stacks


def _compute_tree(
    app_id: int, snapshots: list[Snapshot], query: CallTreeQuery, progress: Progress | None = None
) -> CallTree:
    """Three queries whatever the tree: the rows, the stack paths, the frames. A build's tree
    per snapshot (`query.aggregate` median, over more than one snapshot) is built from the same
    three: one tree per snapshot, their medians per node (`per_snapshot`)."""
    step = progress or (lambda done: None)
    step(0.05)
    per_snapshot = query.aggregate == MEDIAN and len(snapshots) > 1
    rows = _tree_rows(app_id, snapshots, query, by_snapshot=per_snapshot)
    step(0.5)
    stacks = stack_paths(app_id, (r.stack_id for _, r in rows), snapshots)
    step(0.65)
    frames = frame_infos(s.frame_id for s in stacks.values())
    step(0.75)
    if not per_snapshot:
        tree = build_call_tree([r for _, r in rows], stacks, frames, query.options)
        step(0.95)  # what is left: keeping it in the cache
        return tree
    by_snapshot: dict[int, list[TreeRow]] = {s.pk: [] for s in snapshots}
    for snapshot_id, row in rows:
        by_snapshot[snapshot_id or 0].append(row)
    trees = [build_call_tree(r, stacks, frames, query.options) for r in by_snapshot.values()]
    step(0.95)
    return PerSnapshotTree(trees, query.options)


def _stored_tree(snapshot: Snapshot, lifespan: str) -> CallTree:
    """The default tree built whole from CallTreeNode (two queries: the nodes with their self
    counters, the frames), for what needs every node at once (a flame graph, Top Functions);
    it needs no allocation rows, so it is there after they are pruned."""
    nodes = CallTreeNode.objects.filter(snapshot_id=snapshot.pk).values_list(
        "node_id", "parent_id", "frame_id", "self_persistent", "self_persistent_bytes",
        "self_transient", "self_transient_bytes",
    )  # fmt: skip
    totals = (snapshot.persistent, snapshot.persistent_bytes, snapshot.transient,
              snapshot.transient_bytes)  # fmt: skip
    return tree_of_nodes(nodes, totals, lifespan)


# The last trees read in this process, by cache key: a tree of 200,000 nodes takes a few hundred
# milliseconds to unpickle, and a page asks for the same tree again and again (each node opened,
# the flame graph, each focus). Kept only while the cache still holds the key (`has_key` reads no
# value), so clearing the cache or its expiry drops them too.
_RECENT: OrderedDict[str, CallTree] = OrderedDict()
_RECENT_SIZE = 2
_RECENT_LOCK = threading.Lock()


def _cached(
    key: str,
    compute: Callable[[], CallTree],
    budget: InlineBudget | None = None,
    job: TreeJob | None = None,
) -> CallTree:
    """The tree under `key`, from this process or the cache, else built by `compute`; with a
    `budget`, a tree past it is not built here (TreeDeferred: `job` for a task to build)."""
    with _RECENT_LOCK:
        recent = _RECENT.get(key)
    if recent is not None and cache.has_key(key):
        return recent
    tree: CallTree | None = cache.get(key)
    if tree is None:
        if budget is not None and job is not None and not budget.take(job.rows):
            raise TreeDeferred([job])
        tree = compute()
        cache.set(key, tree, CACHE_SECONDS)
    with _RECENT_LOCK:
        _RECENT[key] = tree
        _RECENT.move_to_end(key)
        while len(_RECENT) > _RECENT_SIZE:
            _RECENT.popitem(last=False)
    return tree


def tree_job(
    key: str, kind: str, pk: int, query: CallTreeQuery, rows: int, **filters: str
) -> TreeJob:
    """The job that builds the tree of `query` (its focus aside) under `key`."""
    fields = {**dataclasses.asdict(query), "charge": list(query.charge), "focus": ""}
    return TreeJob(key, kind, pk, fields, filters, rows)


def forget_recent() -> None:
    """Drop the trees this process keeps (a worker builds trees for the web processes), those
    made ahead too."""
    with _RECENT_LOCK:
        _RECENT.clear()
    forget_made()


def _mined(
    query: CallTreeQuery,
    key_of: Callable[[CallTreeQuery], str],
    tree_of: Callable[[CallTreeQuery, bool], CallTree],
) -> CallTree:
    """The tree of a query with data mining, made of the tree without it (`tree_of(query,
    whole)`, from the cache, built whole when there are rules): one pass over its nodes, kept in
    the cache in turn (`key_of`); the minimums are a view over it."""
    tree: CallTree
    if query.rules:
        plain = tree_of(query.unmined(), True)

        def mine_one(one: CallTree) -> CallTree:
            assert isinstance(one, MergedCallTree)  # not inverted, built whole: merged
            mined = mine_tree(one, query.rules)
            return inverted_of(mined) if query.inverted else mined

        def mine() -> CallTree:
            if not isinstance(plain, PerSnapshotTree):
                return mine_one(plain)
            # a build's medians per snapshot: each snapshot's tree mined, then their medians
            options = dataclasses.replace(plain.options, inverted=query.inverted, mined=True)
            return PerSnapshotTree([mine_one(one) for one in plain.trees], options)

        rules_only = dataclasses.replace(query, min_bytes=0, min_count=0, focus="")
        tree = _cached(key_of(rules_only), mine)
    else:
        tree = tree_of(query.unmined(), False)
    if query.min_bytes or query.min_count:
        tree = ConstrainedTree(tree, query.min_bytes, query.min_count)
    return tree


def snapshot_tree_key(snapshot: Snapshot, query: CallTreeQuery) -> str:
    """The cache key of a snapshot's tree under `query` (its focus aside)."""
    return (
        f"memdash:calltree:{CACHE_VERSION}:snapshot:{snapshot.pk}:"
        f"{snapshot.created_at.timestamp()}:{snapshot.symbols_version}:{query.cache_token()}"
    )  # symbols_version: debug files renamed its frames since (allocations.resymbolicate)


def snapshot_call_tree(
    snapshot: Snapshot,
    query: CallTreeQuery,
    whole: bool = False,
    *,
    budget: InlineBudget | None = None,
    progress: Progress | None = None,
) -> CallTree:
    """The call tree of a snapshot under `query` (raises TreeUnavailable when the rows it needs
    were pruned). The default tree is read level by level from CallTreeNode, or with `whole`
    built in memory from it (every node at once: a flame graph, Top Functions). Any other is
    built from the rows, unless that goes past `budget` (TreeDeferred); the default tree of a
    time range is read from its buckets' trees (`ranged`), as the default tree is."""
    if query.mines:
        return _mined(
            query, lambda q: snapshot_tree_key(snapshot, q),
            lambda q, whole: snapshot_call_tree(snapshot, q, whole, budget=budget,
                                                progress=progress),
        )  # fmt: skip
    key = snapshot_tree_key(snapshot, query)
    if query.is_default:
        if (
            snapshot.rows_pruned_at is not None
            and not CallTreeNode.objects.filter(snapshot_id=snapshot.pk).exists()
        ):
            raise TreeUnavailable(
                "the call tree of this snapshot was removed by retention "
                "(prune_allocation_rows without --keep-call-tree); its statistics are kept"
            )
        if whole:  # every stored node at once: by a task past the budget, as any tree
            whole_job = tree_job(key + ":whole", "snapshot", snapshot.pk, query, snapshot.row_count)
            whole_job = dataclasses.replace(whole_job, whole=True)
            return _cached(
                whole_job.key, lambda: _stored_tree(snapshot, query.lifespan), budget, whole_job
            )
        return StoredCallTree(snapshot, query.lifespan)
    ranged = range_source(snapshot, query)
    if ranged is not None:  # the default tree of a time range: its buckets' trees summed
        if not whole:
            return RangeCallTree(ranged, query.lifespan)
        whole_job = tree_job(key + ":whole", "snapshot", snapshot.pk, query, snapshot.row_count)
        whole_job = dataclasses.replace(whole_job, whole=True)
        return _cached(
            whole_job.key, lambda: range_tree_whole(ranged, query.lifespan), budget, whole_job
        )
    if snapshot.rows_pruned_at is not None:
        raise TreeUnavailable(
            "the allocation rows of this snapshot were pruned: only the default call tree "
            "(all categories, not inverted, not folded, not by thread) is kept"
        )
    job = tree_job(key, "snapshot", snapshot.pk, query, snapshot.row_count)
    return _cached(
        key, lambda: _compute_tree(snapshot.app_id, [snapshot], query, progress), budget, job
    )


def build_call_tree_for(
    build: Build,
    query: CallTreeQuery,
    trigger: str = "",
    model: str = "",
    os: str = "",
    *,
    budget: InlineBudget | None = None,
    progress: Progress | None = None,
) -> CallTree:
    """The call tree of a build over its snapshots (those whose rows are kept): the one made
    ahead when there is one for `query` (`made`), else on demand; with the build page's
    filters, over the snapshots of that trigger, device model and OS only (TreeDeferred when
    building it goes past `budget`)."""
    if query.mines:
        return _mined(
            query, lambda q: build_tree_selection(build, q, trigger, model, os)[0],
            lambda q, whole: build_call_tree_for(build, q, trigger, model, os, budget=budget,
                                                 progress=progress),
        )  # fmt: skip
    made = made_build_tree(build, query, trigger, model, os)
    if made is not None:
        return made
    key, snapshots, rows = build_tree_selection(build, query, trigger, model, os)
    job = tree_job(key, "build", build.pk, query, rows, trigger=trigger, model=model, os=os)
    return _cached(
        key, lambda: _compute_tree(build.app_id, snapshots, query, progress), budget, job
    )


def made_build_tree(
    build: Build, query: CallTreeQuery, trigger: str, model: str, os: str
) -> CallTree | None:
    """The build's tree made ahead for `query` and the filters, when a request reads one."""
    key = eligible(query, trigger, model, os)
    made = None if key is None else usable(build, key, query.lifespan, TREE)
    tree = None if made is None else made_object(made)
    return tree if isinstance(tree, CallTree) else None


def build_tree_selection(
    build: Build, query: CallTreeQuery, trigger: str, model: str, os: str
) -> tuple[str, list[Snapshot], int]:
    """The cache key of a build's tree under `query` and the build page's filters, the
    snapshots it is built from, and their allocation rows."""
    # One read of the chosen snapshots gives both the cache key (all of them, so an upload or a
    # deletion changes it) and the snapshots whose rows the tree is built from.
    every = list(
        build_snapshots(build, trigger, model, os)
        .select_related(None)
        .only("id", "threads", "created_at", "rows_pruned_at", "symbols_version", "row_count")
    )
    snapshots = [s for s in every if s.rows_pruned_at is None]
    last = max((s.pk for s in every), default=None)
    latest = max((s.created_at.timestamp() for s in every), default=0)
    renamed = sum(s.symbols_version for s in every)  # frames renamed by debug files since
    chosen = hashlib.sha1(
        repr((trigger, model, os)).encode(), usedforsecurity=False
    ).hexdigest()  # the filters are user text: hashed into the key
    key = (
        f"memdash:calltree:{CACHE_VERSION}:build:{build.pk}:{chosen}:{len(every)}:{last}:"
        f"{latest}:{renamed}:{len(snapshots)}:{query.aggregate}:{query.cache_token()}"
    )
    return key, snapshots, sum(s.row_count for s in snapshots)
