"""A snapshot's tables that name its stack nodes besides its rows and call tree, moved to the
nodes its stacks became when it is keyed again (`resymbolicate`: debug files named its frames,
or it was stored under an older identity rule): its allocations one by one (`AllocationBlock`:
their stack changed in place, so their ids, the list's row ids, stay) and its rows by time
bucket with the call tree of each bucket (`TimedAllocationRow`, `TimedCallTreeNode`: made again
from the rows by bucket moved to the new nodes, as ingest makes them, since rows that land on
one node add up). The list made ahead (`ListEntry`) is forgotten by the caller and made again.
Every statement names the app (on Citus the snapshot's rows are on its app's shard)."""

from __future__ import annotations

import numpy as np
import orjson
from django.db import connection

from memdash.allocations.logic.columns import NONE, RowColumns
from memdash.allocations.logic.totals import Nodes
from memdash.allocations.models import AllocationBlock, TimedAllocationRow, TimedCallTreeNode
from memdash.allocations.writes.tables import COUNTERS
from memdash.allocations.writes.timeline import store_timed_rows
from memdash.core.reads.where_in import is_postgres


def _pg_array(values: list[int | None]) -> str:
    return "{" + ",".join("NULL" if v is None else str(v) for v in values) + "}"


def rekey_blocks(app_id: int, snapshot_id: int, node_ids: dict[int, int | None]) -> int:
    """Move the snapshot's blocks from each stored node to its new one (`node_ids[old]`, None:
    no stack any more), all in one statement (a chain old → new → newer moves each block once);
    answers how many blocks moved."""
    moved = {old: new for old, new in node_ids.items() if old != new}
    if not moved:
        return 0
    table = AllocationBlock._meta.db_table
    with connection.cursor() as cursor:
        if is_postgres():
            cursor.execute(
                f"UPDATE {table} b SET stack_id = m.new "
                "FROM unnest(%s::bigint[], %s::bigint[]) AS m(old, new) "
                "WHERE b.app_id = %s AND b.snapshot_id = %s AND b.stack_id = m.old",
                [_pg_array(list(moved)), _pg_array(list(moved.values())), app_id, snapshot_id],
            )
        else:
            pairs = orjson.dumps(list(moved.items())).decode()
            cursor.execute(
                f"UPDATE {table} SET stack_id = (SELECT json_extract(m.value, '$[1]') "
                f"FROM json_each(%s) m WHERE json_extract(m.value, '$[0]') = {table}.stack_id) "
                "WHERE app_id = %s AND snapshot_id = %s AND stack_id IN "
                "(SELECT json_extract(value, '$[0]') FROM json_each(%s))",
                [pairs, app_id, snapshot_id, pairs],
            )
        count: int = cursor.rowcount
    return count


def rekey_timed_rows(
    app_id: int, snapshot_id: int, moved_to: dict[int, int | None], nodes: Nodes
) -> None:
    """The snapshot's rows by bucket on the nodes their stacks became (`moved_to[old]`: the
    new stack's index among `nodes`' document nodes, None: no stack), and each bucket's call
    tree made again from them (when the snapshot had one: a timeline stored before such trees
    were kept reads its rows)."""
    ours = {"app_id": app_id, "snapshot_id": snapshot_id}
    stored = list(
        TimedAllocationRow.objects.filter(**ours).values_list(
            "bucket", "category_id", "stack_id", "thread", "generation", *COUNTERS
        )
    )
    if not stored:
        return
    trees = TimedCallTreeNode.objects.filter(**ours).exists()
    for model in (TimedAllocationRow, TimedCallTreeNode):
        model.objects.filter(**ours)._raw_delete(model.objects.db)
    categories = sorted({row[1] for row in stored})
    at = {cid: i for i, cid in enumerate(categories)}

    def index(value: int | None) -> int:
        return NONE if value is None else value

    timed = RowColumns(
        names=[str(cid) for cid in categories],
        category=np.array([at[row[1]] for row in stored], np.int64),
        stack=np.array(
            [NONE if row[2] is None else index(moved_to[row[2]]) for row in stored], np.int64
        ),
        thread=np.array([index(row[3]) for row in stored], np.int64),
        generation=np.array([index(row[4]) for row in stored], np.int64),
        counts=np.array([row[5:] for row in stored], np.int64).reshape(-1, 4),
        bucket=np.array([row[0] for row in stored], np.int64),
    ).aggregated()
    names = {str(cid): cid for cid in categories}
    store_timed_rows(app_id, snapshot_id, timed, names, nodes, trees=trees)
