"""On PostgreSQL, allocation rows and call-tree totals are partitioned by the month they were
stored in, and retention drops a whole month instead of deleting its rows (issue 19). The
figures of the stored document are those worked out by hand in test_retention.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memdash.allocations.models import AllocationRow, CallTreeNode, CategoryTotal, Snapshot
from memdash.allocations.writes import partitions
from memdash.allocations.writes.snapshots import store_snapshot_document
from memdash.core.writes import table_statistics
from memdash.core.writes.uploads import UploadMeta
from tests.bench.test_retention import CALL_TREE_NODES, ROWS, document
from tests.citus.cluster import is_citus

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        "postgres" not in __import__("os").environ.get("DATABASE_URL", ""),
        reason="partitions are PostgreSQL's",
    ),
]
OLD_MONTH = 202401  # long past any retention the tests use


def count(table: str, where: str = "") -> int:
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT count(*) FROM "{table}" {where}')
        return int(cursor.fetchone()[0])


def exists(table: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s)", [table])
        return cursor.fetchone()[0] is not None


def store(app, device: str) -> Snapshot:
    result = store_snapshot_document(
        document(device), UploadMeta(app=app, received_at=datetime.now(UTC))
    )
    return Snapshot.objects.get(pk=result.object_id)


def test_rows_land_in_the_partition_of_the_month_they_are_stored_in(app):
    partitions.ensure_partitions()
    snapshot = store(app, "A")
    month = partitions.month_of(datetime.now(UTC))
    assert partitions.is_partitioned("snapshots_allocationrow")
    assert partitions.is_partitioned("snapshots_calltreenode")
    where = f"WHERE snapshot_id = {snapshot.pk}"
    assert count(f"snapshots_allocationrow_m{month}", where) == ROWS
    assert count(f"snapshots_calltreenode_m{month}", where) == CALL_TREE_NODES
    assert count("snapshots_allocationrow_default") == 0
    # the months ahead exist before they begin
    following = partitions.next_month(month)
    assert {month, following, partitions.next_month(following)} <= set(
        partitions.months_of("snapshots_allocationrow")
    )


def test_retention_drops_a_whole_month_and_keeps_the_totals(app):
    old, new = store(app, "OLD"), store(app, "NEW")
    for table in partitions.TABLES:
        partitions.make_partition(table, OLD_MONTH)
        with connection.cursor() as cursor:  # as if stored in January 2024
            cursor.execute(
                f'UPDATE "{table}" SET month = %s WHERE snapshot_id = %s', [OLD_MONTH, old.pk]
            )
    Snapshot.objects.filter(pk=old.pk).update(created_at=datetime(2024, 1, 15, tzinfo=UTC))
    totals_before = list(
        CategoryTotal.objects.filter(snapshot_id=old.pk).values_list("persistent_bytes")
    )

    out = StringIO()
    call_command("prune_allocation_rows", "--older-than", "90d", stdout=out)

    assert not exists(f"snapshots_allocationrow_m{OLD_MONTH}")
    assert not exists(f"snapshots_calltreenode_m{OLD_MONTH}")
    assert f"dropped the partition of {OLD_MONTH} of snapshots_allocationrow ({ROWS} rows)" in (
        out.getvalue()
    )
    old.refresh_from_db()
    assert old.rows_pruned_at is not None
    assert AllocationRow.objects.filter(snapshot_id=old.pk).count() == 0
    assert CallTreeNode.objects.filter(snapshot_id=old.pk).count() == 0
    assert list(
        CategoryTotal.objects.filter(snapshot_id=old.pk).values_list("persistent_bytes")
    ) == (totals_before)
    # the snapshot of this month keeps every row
    assert AllocationRow.objects.filter(snapshot_id=new.pk).count() == ROWS
    assert CallTreeNode.objects.filter(snapshot_id=new.pk).count() == CALL_TREE_NODES


def test_keep_call_tree_drops_only_the_allocation_rows(app):
    old = store(app, "OLD")
    for table in partitions.TABLES:
        partitions.make_partition(table, OLD_MONTH)
        with connection.cursor() as cursor:
            cursor.execute(
                f'UPDATE "{table}" SET month = %s WHERE snapshot_id = %s', [OLD_MONTH, old.pk]
            )
    Snapshot.objects.filter(pk=old.pk).update(created_at=datetime.now(UTC) - timedelta(days=700))
    call_command(
        "prune_allocation_rows", "--older-than", "90d", "--keep-call-tree", stdout=StringIO()
    )
    assert not exists(f"snapshots_allocationrow_m{OLD_MONTH}")
    assert CallTreeNode.objects.filter(snapshot_id=old.pk).count() == CALL_TREE_NODES


def test_rows_the_default_partition_caught_move_into_their_month(app):
    snapshot = store(app, "A")
    far = 203001  # no partition is made this far ahead
    with connection.cursor() as cursor:
        cursor.execute(
            'UPDATE "snapshots_allocationrow" SET month = %s WHERE snapshot_id = %s',
            [far, snapshot.pk],
        )
    assert count("snapshots_allocationrow_default") == ROWS
    partitions.make_partition("snapshots_allocationrow", far)
    assert count("snapshots_allocationrow_default") == 0
    assert count(f"snapshots_allocationrow_m{far}") == ROWS
    assert AllocationRow.objects.filter(snapshot_id=snapshot.pk).count() == ROWS


def ranges_left_unsummarised(cursor, app_id: int) -> int:
    """What `brin_summarize_new_values` finds to summarise in this month's allocation rows
    (and summarises: ask once): on one PostgreSQL in the partition's part of the index; on
    Citus in the shard holding the app's rows, asked on its worker itself (the coordinator's
    partition is an empty shell)."""
    partition = f"snapshots_allocationrow_m{partitions.month_of(datetime.now(UTC))}"
    if not is_citus():
        cursor.execute(
            "SELECT brin_summarize_new_values(i.inhrelid::regclass) FROM pg_inherits i "
            "WHERE i.inhparent = 'allocrow_snap_cat'::regclass AND i.inhrelid IN "
            "(SELECT indexrelid FROM pg_index WHERE indrelid = %s::regclass)",
            [partition],
        )
        return cursor.fetchone()[0]
    cursor.execute(
        "SELECT shard_name, nodename, nodeport FROM citus_shards "
        "WHERE shardid = get_shard_id_for_distribution_column(%s, %s)",
        [partition, app_id],
    )
    shard, host, port = cursor.fetchone()
    name = connection.settings_dict["NAME"]
    with psycopg.connect(host=host, port=port, dbname=name, user="postgres") as worker:
        worker.execute("SET citus.override_table_visibility = off")  # the shard's own index
        (left,) = worker.execute(
            "SELECT sum(brin_summarize_new_values(i.indexrelid)) FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam "
            "WHERE i.indrelid = %s::regclass AND a.amname = 'brin'",
            [shard],
        ).fetchone()
    return int(left)


def test_allocation_rows_carry_their_own_ids_and_a_brin_summarised_after_commit(
    app, django_capture_on_commit_callbacks
):
    """Migration 0010: no primary key and no sequence on the two large tables, and a BRIN on
    allocation rows; the writer numbers a snapshot's rows from its id shifted 32 bits left, and
    after the commit the page ranges they filled are summarised, so nothing is left for
    `brin_summarize_new_values` to do."""
    partitions.ensure_partitions()
    with django_capture_on_commit_callbacks(execute=True):
        snapshot = store(app, "BRIN")
    ids = sorted(AllocationRow.objects.filter(snapshot_id=snapshot.pk).values_list("id", flat=True))
    assert ids == [(snapshot.pk << 32) + i for i in range(ROWS)]
    node_ids = sorted(
        CallTreeNode.objects.filter(snapshot_id=snapshot.pk).values_list("id", flat=True)
    )
    assert node_ids == [(snapshot.pk << 32) + i for i in range(CALL_TREE_NODES)]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT am.amname FROM pg_class c JOIN pg_am am ON am.oid = c.relam "
            "WHERE c.relname = 'allocrow_snap_cat'"
        )
        assert cursor.fetchone()[0] == "brin"
        cursor.execute(
            "SELECT count(*) FROM pg_constraint WHERE contype = 'p' AND conrelid IN "
            "('snapshots_allocationrow'::regclass, 'snapshots_calltreenode'::regclass)"
        )
        assert cursor.fetchone()[0] == 0
        assert ranges_left_unsummarised(cursor, app.pk) == 0
        if is_citus():  # the settings below go with the query to the app's shard
            cursor.execute("SET LOCAL citus.propagate_set_commands = 'local'")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(
            "EXPLAIN SELECT count(*) FROM snapshots_allocationrow "
            "WHERE app_id = %s AND snapshot_id = %s",
            [app.pk, snapshot.pk],
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Bitmap Index Scan" in plan


def test_a_partition_is_summarised_at_most_once_a_second_by_a_process(
    app, django_capture_on_commit_callbacks, monkeypatch
):
    """Under a stream of uploads, one summary covers the ranges of those stored since the last
    (`brin_summarize_new_values` takes every range not yet summarised): an upload within a
    second of its process's last summary of the partition makes none."""

    def summaries(device: str) -> int:
        with (
            CaptureQueriesContext(connection) as queries,
            django_capture_on_commit_callbacks(execute=True),
        ):
            store(app, device)
        return sum("brin_summarize" in q["sql"] for q in queries.captured_queries)

    partitions.ensure_partitions()
    assert (summaries("FIRST"), summaries("SECOND")) == (1, 0)
    monkeypatch.setattr(partitions, "SUMMARIZE_EVERY_SECONDS", 0.0)
    assert summaries("THIRD") == 1  # which summarised the second's ranges too:
    with connection.cursor() as cursor:
        assert ranges_left_unsummarised(cursor, app.pk) == 0


def planner_statistics(partition: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT reltuples >= 0 FROM pg_class WHERE oid = to_regclass(%s)", [partition]
        )
        return bool(cursor.fetchone()[0])


def test_a_partition_without_planner_statistics_is_analysed_after_commit(
    app, django_capture_on_commit_callbacks
):
    """A month's new partition has no statistics until autovacuum's first look (never, with
    autovacuum off): the first upload into it makes them, so that a snapshot's rows are read
    through the BRIN and not by a sequential scan of the month."""
    if is_citus():
        pytest.skip("on Citus the rows are in the workers' shards, kept by their autovacuum")
    partitions.ensure_partitions()
    month = partitions.month_of(datetime.now(UTC))
    tables = [partitions.partition_name(t, month) for t in partitions.TABLES]
    with connection.cursor() as cursor:  # as a month's partition is made (ANALYZE writes these
        # in place, so an earlier test's survive its rollback; this update is rolled back)
        cursor.execute(
            "UPDATE pg_class SET reltuples = -1, relpages = 0 WHERE oid = ANY(%s::regclass[])",
            [tables],
        )
    assert [planner_statistics(t) for t in tables] == [False, False]
    with django_capture_on_commit_callbacks(execute=True):
        store(app, "STATISTICS")
    assert [planner_statistics(t) for t in tables] == [True, True]
    with connection.cursor() as cursor:  # the rows ANALYZE counted: those of the snapshot
        cursor.execute(
            "SELECT reltuples::int FROM pg_class WHERE oid = ANY(%s::regclass[]) ORDER BY relname",
            [tables],
        )
        assert [row[0] for row in cursor.fetchall()] == [ROWS, CALL_TREE_NODES]


@pytest.mark.parametrize(
    ("analysed_pages", "analysed", "pages", "stale"),
    [
        (0, False, 0, False),  # never analysed, empty: nothing to learn yet
        (0, False, 1, True),  # never analysed, rows in it
        (100, True, 400, False),  # grown 4 times over: still near enough
        (100, True, 401, True),  # past it
        (0, True, 5, True),  # analysed while empty, rows since
    ],
)
def test_statistics_are_stale_when_missing_or_grown_four_times_over(
    analysed_pages, analysed, pages, stale
):
    assert table_statistics.grown_past(analysed_pages, analysed, pages) is stale
