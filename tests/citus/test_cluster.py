"""The test database on the cluster scripts/citus.sh starts (CI's Citus step): on every node,
with the extension, the workers registered; a table distributed by app spreads its shards over
the workers, and an app's rows live on the one worker that holds its shard, read back through
the coordinator. Skipped without a cluster, failed under MEMDASH_REQUIRE_CITUS=1."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection

from tests.citus.cluster import registered_workers, require_citus


@pytest.fixture
def citus(transactional_db):
    require_citus()


def workers_of_test_database() -> list[tuple[str, int]]:
    workers = registered_workers(connection.settings_dict)
    assert workers is not None
    return workers


def test_the_test_database_is_on_every_worker_with_the_extension(citus):
    workers = workers_of_test_database()
    assert len(workers) >= 2  # scripts/citus.sh starts two
    name = connection.settings_dict["NAME"]
    for host, port in workers:
        with psycopg.connect(host=host, port=port, dbname=name, user="postgres") as conn:
            version = conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'citus'"
            ).fetchone()
        assert version is not None, f"{name} on {host}:{port} has no citus extension"
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM citus_get_active_worker_nodes()")
        assert cursor.fetchone()[0] == len(workers)


def test_a_table_distributed_by_app_keeps_each_apps_rows_on_one_worker(citus):
    workers = dict((port, host) for host, port in workers_of_test_database())
    name = connection.settings_dict["NAME"]
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE citus_probe (app_id bigint NOT NULL, n int NOT NULL)")
        try:
            cursor.execute("SELECT create_distributed_table('citus_probe', 'app_id')")
            # 20 apps × 5 rows: n = 1..5 for each.
            cursor.execute(
                "INSERT INTO citus_probe SELECT a, n FROM generate_series(1, 20) a, "
                "generate_series(1, 5) n"
            )
            cursor.execute(
                "SELECT nodeport, count(*) FROM citus_shards "
                "WHERE table_name = 'citus_probe'::regclass GROUP BY nodeport"
            )
            shards_per_worker = dict(cursor.fetchall())
            cursor.execute(
                "SELECT a, s.shardid, s.nodeport FROM generate_series(1, 20) a "
                "JOIN citus_shards s ON s.table_name = 'citus_probe'::regclass "
                "AND s.shardid = get_shard_id_for_distribution_column('citus_probe', a)"
            )
            shard_of_app = {app: (shard, port) for app, shard, port in cursor.fetchall()}
            # On each worker, read its shards' own tables (not through the coordinator).
            held: dict[int, list[tuple[int, int, int]]] = {}
            for port, host in workers.items():
                with psycopg.connect(host=host, port=port, dbname=name, user="postgres") as conn:
                    for app, (shard, shard_port) in shard_of_app.items():
                        if shard_port != port:
                            continue
                        count, total = conn.execute(
                            f"SELECT count(*), sum(n) FROM citus_probe_{shard} WHERE app_id = %s",
                            [app],
                        ).fetchone()
                        held.setdefault(app, []).append((port, count, total))
            cursor.execute("SELECT sum(n), count(*) FROM citus_probe WHERE app_id = 7")
            app_7 = cursor.fetchone()
        finally:
            cursor.execute("DROP TABLE citus_probe")
    assert sorted(shards_per_worker) == sorted(workers)
    assert all(count > 0 for count in shards_per_worker.values())
    assert sorted(shard_of_app) == list(range(1, 21))
    # Each app's five rows (1+2+3+4+5 = 15) in its shard on its one worker.
    assert held == {app: [(shard_of_app[app][1], 5, 15)] for app in range(1, 21)}
    assert app_7 == (15, 5)
