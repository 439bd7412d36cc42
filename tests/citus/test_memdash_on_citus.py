"""memdash itself on the cluster (memdash/site/writes/citus.py): the large tables distributed by
app and co-located, the small ones reference tables or left on the coordinator; an upload's
rows all on the one worker of its app; retention dropping a month of a distributed table (the
demo's pages: test_demo_on_citus.py). Skipped without a cluster, failed under
MEMDASH_REQUIRE_CITUS=1."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import psycopg
import pytest
from django.db import connection

from memdash.allocations.writes import partitions
from memdash.site.writes.citus import COLUMN, DISTRIBUTED, LOCAL, ROOT
from tests.bench.test_retention import CALL_TREE_NODES, ROWS, document
from tests.citus.cluster import require_citus

SNAPSHOT = document("device-1")  # its figures worked out by hand in test_retention


@pytest.fixture
def citus(db):
    require_citus()


def fetch(sql: str, params: list | None = None) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])
        return cursor.fetchall()


def test_large_tables_are_distributed_by_app_and_co_located_the_rest_shared(citus):
    placed = {
        name: (method, column, colocation, model)
        for name, method, column, colocation, model in fetch(
            "SELECT logicalrelid::text, partmethod, column_to_column_name(logicalrelid, partkey), "
            "colocationid, repmodel FROM pg_dist_partition "
            "WHERE NOT logicalrelid::regclass::text ~ '_(m[0-9]{6}|default)$'"
        )
    }
    tables = {
        row[0]
        for row in fetch(
            "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace "
            "AND relkind IN ('r', 'p') AND NOT relispartition"
        )
    }
    for table in DISTRIBUTED:
        assert placed[table][:2] == ("h", COLUMN), table
    assert {placed[t][2] for t in DISTRIBUTED} == {placed[ROOT][2]}  # one co-location group
    for table in LOCAL:
        assert table not in placed, table
    # Every other table is a reference table, or (made by a migration after the distribution,
    # with a foreign key to one) a table Citus keeps on the coordinator of its own accord.
    for table in tables - set(DISTRIBUTED) - set(LOCAL):
        assert (placed[table][0], placed[table][3]) in {("n", "t"), ("n", "s")}, table
    for must in ("auth_user", "core_app", "core_build", "core_device", "core_ingestkey"):
        assert placed[must][3] == "t"
    # a month's partitions are distributed with their table
    month = partitions.month_of(datetime.now(UTC))
    partitions.ensure_partitions()
    for table in partitions.TABLES:
        (row,) = fetch(
            "SELECT partmethod, colocationid FROM pg_dist_partition "
            "WHERE logicalrelid = %s::regclass",
            [partitions.partition_name(table, month)],
        )
        assert row == ("h", placed[ROOT][2])
    # the primary keys of distributed tables hold the app's id (Citus wants it in every one)
    lacking = fetch(
        "SELECT c.conrelid::regclass::text FROM pg_constraint c "
        "WHERE c.contype IN ('p', 'u') AND c.conrelid::regclass::text = ANY(%s) "
        "AND NOT EXISTS (SELECT 1 FROM unnest(c.conkey) k(n) JOIN pg_attribute a "
        "  ON a.attrelid = c.conrelid AND a.attnum = k.n WHERE a.attname = 'app_id')",
        [list(DISTRIBUTED)],
    )
    assert lacking == []


def test_an_uploads_rows_are_all_on_the_worker_of_its_app(citus, transactional_db, app, upload):
    response = upload(SNAPSHOT)
    assert response.status_code in (201, 202), response.content
    rows_here = {}
    for table in DISTRIBUTED:
        if table.endswith(("_allocationrow", "_calltreenode")):
            continue  # their rows are in the month's partition, counted below
        (count,) = fetch(f'SELECT count(*) FROM "{table}" WHERE app_id = %s', [app.pk])[0]
        rows_here[table] = count
    month = partitions.month_of(datetime.now(UTC))
    for table in partitions.TABLES:
        name = partitions.partition_name(table, month)
        rows_here[name] = fetch(f'SELECT count(*) FROM "{name}" WHERE app_id = %s', [app.pk])[0][0]
    # what the document makes: 1 snapshot, 4 frames, 4 stack nodes, 2 categories with a
    # total each, 2 generations, the rows and call-tree nodes worked out in test_retention
    assert rows_here["snapshots_snapshot"] == 1
    assert rows_here["snapshots_frame"] == 4
    assert rows_here["snapshots_stacknode"] == 4
    assert rows_here["snapshots_category"] == 2
    assert rows_here["snapshots_categorytotal"] == 2
    assert rows_here["snapshots_generation"] == 2
    assert rows_here[partitions.partition_name("snapshots_allocationrow", month)] == ROWS
    assert rows_here[partitions.partition_name("snapshots_calltreenode", month)] == CALL_TREE_NODES

    placements = fetch(
        "SELECT p.logicalrelid::text, s.nodename, s.nodeport, s.shard_name FROM "
        "unnest(%s::text[]) AS p(logicalrelid) CROSS JOIN LATERAL ("
        "  SELECT nodename, nodeport, shard_name FROM citus_shards WHERE shardid = "
        "  get_shard_id_for_distribution_column(p.logicalrelid, %s)) AS s",
        [list(rows_here), app.pk],
    )
    nodes = {(host, port) for _table, host, port, _shard in placements}
    assert len(nodes) == 1  # every table's shard of this app on one worker
    ((host, port),) = nodes
    name = connection.settings_dict["NAME"]
    counted = Counter()
    with psycopg.connect(host=host, port=port, dbname=name, user="postgres") as worker:
        for table, _host, _port, shard in placements:
            query = f'SELECT count(*) FROM "{shard}" WHERE app_id = %s'
            counted[table] = worker.execute(query, [app.pk]).fetchone()[0]
    assert counted == Counter(rows_here)  # read on the worker itself: all of it is there


def test_retention_drops_a_month_of_the_distributed_tables(citus, transactional_db, app, upload):
    assert upload(SNAPSHOT).status_code in (201, 202)
    old = 202401
    for table in partitions.TABLES:
        partitions.make_partition(table, old)
        with connection.cursor() as cursor:  # as if stored in January 2024
            cursor.execute(f'UPDATE "{table}" SET month = %s WHERE app_id = %s', [old, app.pk])
    (placed,) = fetch(
        "SELECT partmethod FROM pg_dist_partition WHERE logicalrelid = %s::regclass",
        [partitions.partition_name("snapshots_allocationrow", old)],
    )
    assert placed == ("h",)  # a partition made later is distributed too
    dropped = partitions.drop_months_before(202402)
    assert [(d.table, d.month, d.rows, d.snapshots) for d in dropped] == [
        ("snapshots_allocationrow", old, ROWS, 1),
        (
            "snapshots_calltreenode",
            old,
            CALL_TREE_NODES,
            0,
        ),  # the snapshot was marked by the first drop
    ]
    for table in partitions.TABLES:
        name = partitions.partition_name(table, old)
        assert fetch("SELECT to_regclass(%s)", [name]) == [(None,)]
        assert fetch(
            "SELECT count(*) FROM pg_dist_shard WHERE logicalrelid::text = %s", [name]
        ) == [(0,)]
    assert fetch(
        "SELECT count(*) FROM snapshots_snapshot WHERE app_id = %s AND rows_pruned_at IS NOT NULL",
        [app.pk],
    ) == [(1,)]
