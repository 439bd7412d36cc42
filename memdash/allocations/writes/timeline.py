"""Writes of a snapshot's timeline (`logic.timeline`): its live series, what was made in each
time bucket, its rows by the bucket they were made in and the call tree of each bucket
(TimedCallTreeNode: what a range's tree reads), inside the upload's transaction
(`snapshots.store_parsed_snapshot`)."""

from __future__ import annotations

import numpy as np

from memdash.allocations.logic.columns import RowColumns
from memdash.allocations.logic.document.parse import TimelineParts
from memdash.allocations.logic.timeline import live_series, made_per_bucket
from memdash.allocations.logic.totals import Nodes, call_trees_by_bucket
from memdash.allocations.models import TimedAllocationRow, TimedCallTreeNode, Timeline
from memdash.allocations.writes.tables import category_id_column, stack_node_column
from memdash.core.logic.rows import ArrayRows
from memdash.core.writes.bulk import copy_rows

TIMED_COLUMNS = [
    "app_id", "snapshot_id", "bucket", "category_id", "stack_id", "thread", "generation",
    "persistent", "persistent_bytes", "transient", "transient_bytes",
]  # fmt: skip


def store_timeline(
    app_id: int,
    snapshot_id: int,
    timed: RowColumns,
    parts: TimelineParts,
    category_ids: dict[str, int],
    nodes: Nodes,
) -> None:
    """The live series and what each bucket made (one row), the rows by bucket and the call
    tree of each bucket (a bulk write each)."""
    assert timed.bucket is not None
    buckets = parts.buckets
    made = made_per_bucket(timed.bucket, timed.counts, buckets.count)
    live_count, live_bytes = live_series(made, parts.ended)
    made_counts = np.zeros((buckets.count, 4), dtype=np.int64)
    np.add.at(made_counts, timed.bucket, timed.counts)
    Timeline.objects.create(
        snapshot_id=snapshot_id,
        app_id=app_id,
        start_ms=buckets.start_ms,
        bucket_ms=buckets.width_ms,
        buckets=buckets.count,
        live_bytes=live_bytes,
        live_count=live_count,
        made=made_counts.tolist(),
    )
    store_timed_rows(app_id, snapshot_id, timed, category_ids, nodes)


def store_timed_rows(
    app_id: int, snapshot_id: int, timed: RowColumns, category_ids: dict[str, int], nodes: Nodes,
    trees: bool = True,
) -> None:  # fmt: skip
    """The rows by bucket (`timed.stack`: indexes among the document's nodes) and, with
    `trees`, the call tree of each bucket: at ingest, and again when the snapshot's stacks are
    keyed again (`rekey`)."""
    assert timed.bucket is not None
    if not len(timed):
        return
    ids = category_id_column(timed.names, category_ids)
    copy_rows(
        TimedAllocationRow,
        TIMED_COLUMNS,
        ArrayRows(
            [
                app_id,
                snapshot_id,
                timed.bucket,
                ids[timed.category],
                stack_node_column(timed.stack, nodes),
                np.ma.MaskedArray(timed.thread, mask=timed.thread < 0),
                np.ma.MaskedArray(timed.generation, mask=timed.generation < 0),
                *timed.counts.T,
            ]
        ),
    )
    if trees:
        store_bucket_trees(app_id, snapshot_id, timed, nodes)


TREE_COLUMNS = [
    "app_id", "snapshot_id", "bucket", "node_id", "parent_id", "frame_id",
    "persistent", "persistent_bytes", "transient", "transient_bytes",
    "self_persistent", "self_persistent_bytes", "self_transient", "self_transient_bytes",
]  # fmt: skip


def store_bucket_trees(app_id: int, snapshot_id: int, timed: RowColumns, nodes: Nodes) -> None:
    """The call tree of each bucket (`totals.call_trees_by_bucket`), one bulk write."""
    trees = call_trees_by_bucket(timed, nodes)
    if not len(trees.nodes):
        return
    copy_rows(
        TimedCallTreeNode,
        TREE_COLUMNS,
        ArrayRows(
            [
                app_id,
                snapshot_id,
                trees.bucket,
                nodes.ids[trees.nodes],
                nodes.parent_ids[trees.nodes],
                nodes.frame_id[trees.nodes],
                *trees.inclusive.T,
                *trees.own.T,
            ]
        ),
    )
