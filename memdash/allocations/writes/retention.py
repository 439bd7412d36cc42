"""Retention: old snapshots lose their raw rows, never their totals.

A year of uploads is mostly allocation rows (one per category, stack, thread and generation, a
million for a big snapshot) and call-tree totals (one per stack node). Pages about old builds
read only the pre-aggregated tables: category totals, per-generation totals, build totals and
the snapshot's own totals. So pruning deletes `AllocationRow` and `CallTreeNode` rows of
snapshots stored before a cutoff and keeps everything else; `Snapshot.rows_pruned_at` says that
the call tree and per-stack views of that snapshot are gone. What is made from the rows goes
with them, the same way: an events run's blocks (`AllocationBlock`), the rows by time bucket
(`TimedAllocationRow`) and the list made ahead (`ListEntry`, `ListOrderChunk`; its
`AllocationListOrder` first, so no page reads it half gone). With `keep_call_tree` the stored
default call tree (one row per stack node, about a fifth of the rows of a big snapshot) stays,
and each time bucket's tree with it (`TimedCallTreeNode`: a range's default tree), so those
trees can still be opened.

On PostgreSQL the two tables are partitioned by the month the rows were stored in
(`partitions.py`): a prune of every app first drops the months that ended before the cutoff's
month began (one `DROP TABLE` a month, whatever its size), then deletes what is left before the
cutoff row by row. Deletes run in batches, each its own short transaction, so a prune never
holds a long lock or writes one huge WAL segment, and an interrupted prune is finished by the
next run.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import NamedTuple

from django.db import connection, transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from memdash.allocations.models import (
    AllocationBlock,
    AllocationListOrder,
    AllocationRow,
    CallTreeNode,
    ListEntry,
    ListOrderChunk,
    Snapshot,
    TimedAllocationRow,
    TimedCallTreeNode,
)
from memdash.allocations.writes import partitions

DEFAULT_BATCH = 50_000
type PrunedModel = type[
    AllocationRow | CallTreeNode | TimedAllocationRow | TimedCallTreeNode | AllocationBlock
    | ListEntry | ListOrderChunk
]  # fmt: skip
# What is made from the rows (pruned with them), and the call trees (`keep_call_tree` keeps)
MADE_OF_ROWS: tuple[PrunedModel, ...] = (
    TimedAllocationRow, AllocationBlock, ListEntry, ListOrderChunk
)  # fmt: skip
PRUNED_TABLES: tuple[PrunedModel, ...] = (
    AllocationRow, *MADE_OF_ROWS, CallTreeNode, TimedCallTreeNode
)  # fmt: skip

_AGE = re.compile(r"^\s*(\d+)\s*([hdw]?)\s*$")
_AGE_UNITS = {"h": "hours", "d": "days", "w": "weeks", "": "days"}


def parse_age(text: str) -> timedelta:
    """`90d`, `12w`, `36h` (a bare number is days)."""
    match = _AGE.match(text or "")
    if match is None:
        raise ValueError(f"{text!r} is not an age like 90d, 12w or 36h")
    amount, unit = int(match.group(1)), match.group(2)
    return timedelta(**{_AGE_UNITS[unit]: amount})


@dataclass
class PruneResult:
    snapshots: int = 0
    allocation_rows: int = 0
    call_tree_nodes: int = 0
    other_rows: int = 0  # what is made of the rows and the time buckets' trees (PRUNED_TABLES)
    dropped_months: list[partitions.Dropped] = field(default_factory=list)


def snapshots_to_prune(
    cutoff: datetime, app_id: int | None = None, keep_call_tree: bool = False
) -> QuerySet[Snapshot]:
    """Snapshots stored before `cutoff` that still have rows to prune: those not marked pruned
    yet, and those marked by a prune that was interrupted before its last batch."""
    stored_before = Snapshot.objects.filter(created_at__lt=cutoff)
    if app_id is not None:
        stored_before = stored_before.filter(app_id=app_id)
    candidates = stored_before.filter(rows_pruned_at__isnull=True)
    for model in tables_to_prune(keep_call_tree):
        # By snapshot and its app: on Citus the rows are looked for beside the snapshot.
        rows = model.objects.filter(snapshot_id=OuterRef("pk"), app_id=OuterRef("app_id"))
        candidates |= stored_before.filter(Exists(rows), rows_pruned_at__isnull=False)
    return candidates.order_by("created_at", "pk")


def tables_to_prune(keep_call_tree: bool) -> tuple[PrunedModel, ...]:
    return (AllocationRow, *MADE_OF_ROWS) if keep_call_tree else PRUNED_TABLES


class Pruned(NamedTuple):
    """What a snapshot's prune deleted (or would): its allocation rows, its call-tree rows, and
    the rows of the other PRUNED_TABLES."""

    rows: int
    nodes: int
    others: int


def count_rows(snapshot: Snapshot, keep_call_tree: bool = False) -> Pruned:
    """What pruning this snapshot would delete."""
    counts = {
        model: model.objects.filter(snapshot_id=snapshot.pk, app_id=snapshot.app_id).count()
        for model in tables_to_prune(keep_call_tree)
    }
    rows, nodes = counts.pop(AllocationRow), counts.pop(CallTreeNode, 0)
    return Pruned(rows, nodes, sum(counts.values()))


def delete_in_batches(model: PrunedModel, snapshot: Snapshot, batch_size: int) -> int:
    """Delete the snapshot's rows of `model`, `batch_size` at a time; returns how many. On
    PostgreSQL a partition at a time, by the rows' physical place (allocation rows have no
    b-tree on their id: migration 0010), named with the app: on Citus a place is a shard's, and
    the app keeps the statement on that one shard; elsewhere by rowid (every table has one, a
    list's entries too, whose key is composite)."""
    q = connection.ops.quote_name
    deleted = 0
    for name in partitions.partitions_of(model._meta.db_table) or [model._meta.db_table]:
        table = q(name)
        if connection.vendor == "postgresql":
            picked = (
                f"app_id = %s AND ctid = ANY(ARRAY(SELECT ctid FROM {table} "
                "WHERE app_id = %s AND snapshot_id = %s LIMIT %s))"
            )
            values = [snapshot.app_id, snapshot.app_id, snapshot.pk, batch_size]
        else:
            picked = (
                f"rowid IN (SELECT rowid FROM {table} WHERE app_id = %s AND snapshot_id = %s "
                "LIMIT %s)"
            )
            values = [snapshot.app_id, snapshot.pk, batch_size]
        while True:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(f"DELETE FROM {table} WHERE {picked}", values)
                count: int = cursor.rowcount
            deleted += count
            if count < batch_size:
                break
    return deleted


def forget_pruned_lists() -> None:
    """The lists made of rows that whole months dropped (their snapshots marked pruned): no
    longer read; their entries go in batches with the rest of those snapshots' rows."""
    pruned = AllocationListOrder.objects.filter(snapshot__rows_pruned_at__isnull=False)
    for snapshot_id, app_id in pruned.values_list("snapshot_id", "app_id"):
        made = AllocationListOrder.objects.filter(snapshot_id=snapshot_id, app_id=app_id)
        made._raw_delete(made.db)


def prune_snapshot_rows(
    snapshot: Snapshot, batch_size: int = DEFAULT_BATCH, keep_call_tree: bool = False
) -> Pruned:
    """Mark the snapshot pruned first (so no page shows it half-pruned) and forget that its
    list was made, then delete its raw rows and what is made of them, in batches. Its totals,
    generations and the build totals are left as they are."""
    if snapshot.rows_pruned_at is None:
        snapshot.rows_pruned_at = timezone.now()
        Snapshot.objects.filter(pk=snapshot.pk).update(rows_pruned_at=snapshot.rows_pruned_at)
    made = AllocationListOrder.objects.filter(snapshot_id=snapshot.pk, app_id=snapshot.app_id)
    made._raw_delete(made.db)
    counts = {
        model: delete_in_batches(model, snapshot, batch_size)
        for model in tables_to_prune(keep_call_tree)
    }
    rows, nodes = counts.pop(AllocationRow), counts.pop(CallTreeNode, 0)
    return Pruned(rows, nodes, sum(counts.values()))


def prune_allocation_rows(
    older_than: timedelta,
    *,
    app_id: int | None = None,
    dry_run: bool = False,
    batch_size: int = DEFAULT_BATCH,
    keep_call_tree: bool = False,
    now: datetime | None = None,
    report: Callable[[Snapshot, int, int], None] | None = None,
) -> PruneResult:
    """Prune every snapshot stored more than `older_than` ago (of one app, or all)."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    cutoff = (now or timezone.now()) - older_than
    result = PruneResult()
    if app_id is None and not dry_run:
        tables = tuple(m._meta.db_table for m in tables_to_prune(keep_call_tree))
        result.dropped_months = partitions.drop_months_before(partitions.month_of(cutoff), tables)
        for dropped in result.dropped_months:
            result.snapshots += dropped.snapshots
            if dropped.table == AllocationRow._meta.db_table:
                result.allocation_rows += dropped.rows
            else:
                result.call_tree_nodes += dropped.rows
        forget_pruned_lists()
    # Fetched up front (a few thousand small objects at most): deleting while a cursor is open
    # over the same table is not something to rely on across databases.
    candidates = list(
        snapshots_to_prune(cutoff, app_id, keep_call_tree).only("pk", "app_id", "rows_pruned_at")
    )
    for snapshot in candidates:
        if dry_run:
            rows, nodes, others = count_rows(snapshot, keep_call_tree)
        else:
            rows, nodes, others = prune_snapshot_rows(snapshot, batch_size, keep_call_tree)
        result.snapshots += 1
        result.allocation_rows += rows
        result.call_tree_nodes += nodes
        result.other_rows += others
        if report is not None:
            report(snapshot, rows, nodes)
    return result
