"""Writes of a snapshot's timeline (`logic.timeline`): its live series and its rows by the time
bucket they were made in, inside the upload's transaction (`snapshots.store_parsed_snapshot`)."""

from __future__ import annotations

import numpy as np

from memdash.allocations.logic.columns import RowColumns
from memdash.allocations.logic.document.parse import TimelineParts
from memdash.allocations.logic.timeline import live_series, made_per_bucket
from memdash.allocations.logic.totals import Nodes
from memdash.allocations.models import TimedAllocationRow, Timeline
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
    """The live series (one row) and the rows by bucket (one bulk write)."""
    assert timed.bucket is not None
    buckets = parts.buckets
    made = made_per_bucket(timed.bucket, timed.counts, buckets.count)
    live_count, live_bytes = live_series(made, parts.ended)
    Timeline.objects.create(
        snapshot_id=snapshot_id,
        app_id=app_id,
        start_ms=buckets.start_ms,
        bucket_ms=buckets.width_ms,
        buckets=buckets.count,
        live_bytes=live_bytes,
        live_count=live_count,
    )
    if not len(timed):
        return
    ids = np.fromiter(map(category_ids.__getitem__, timed.names), np.int64, len(timed.names))
    with_stack = timed.stack >= 0
    node = np.zeros(len(timed), dtype=np.int64)
    node[with_stack] = nodes.ids[nodes.of_node[timed.stack[with_stack]]]
    copy_rows(
        TimedAllocationRow,
        TIMED_COLUMNS,
        ArrayRows(
            [
                app_id,
                snapshot_id,
                timed.bucket,
                ids[timed.category],
                np.ma.MaskedArray(node, mask=~with_stack),
                np.ma.MaskedArray(timed.thread, mask=timed.thread < 0),
                np.ma.MaskedArray(timed.generation, mask=timed.generation < 0),
                *timed.counts.T,
            ]
        ),
    )
