"""Test databases on a Citus cluster (scripts/citus.sh): a database made on the coordinator
exists nowhere else, and Citus keeps its nodes' list inside each database. So the test
database Django creates on the coordinator is made on every worker too (new: a worker's
leftover database of that name would hold shards a new coordinator database knows nothing
of), with the extension on each node and the workers registered, before the migrations run;
and dropped from the workers with it.

A transactional test (`transaction=True`, `live_server`) is followed by Django's flush: one
TRUNCATE of every table, which on the cluster reaches every shard of every distributed table
(1,536 with 32 shards a table), each given new files, committed in two phases over many
connections: 10-40 s a test. There the flush deletes the rows instead: every table in one
transaction, over one connection a worker, the foreign keys checked at its commit when every
row is gone; an empty shard is read by its index and nothing is written to it. It keeps the
content types and permissions, which Django's post_migrate signal after a flush would make
again one by one in those reference tables (a commit on every node each, 1.1 s), and now finds
there. The flush costs 0.2-0.5 s where it cost 10-40 s (measured at a load of 5-12). The
sequences go on either way (Django's test flush does not restart them).

A test database's distributed tables have 4 shards each (2 on each worker), not 32, unless
`MEMDASH_CITUS_SHARD_COUNT` is set: what the tests ask of Citus (an app's rows on one worker,
queries routed there, co-location, foreign keys, partitions, the rebalancer moving shards onto
a new worker) is the same with 4 as with 32, and a query over every shard reaches 8 times
fewer. A test database is made in 43 s where it took 68 (at a load of 8).

The workers are those the configured database (`DATABASE_URL`'s, where `scripts/citus.sh
start` registered them) knows. A server without Citus there changes nothing: plain
PostgreSQL and SQLite create their test databases as Django does."""

from __future__ import annotations

import os
import time
from typing import Any

import psycopg
import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.db.backends.postgresql.creation import DatabaseCreation
from django.db.backends.postgresql.operations import DatabaseOperations
from psycopg import sql

Node = tuple[str, int]

# Test database name -> the workers it was made on (to drop it there after).
_made_on: dict[str, list[Node]] = {}
TEST_SHARD_COUNT = 4


def _connect(host: str, port: int, dbname: str, settings: dict[str, Any]) -> psycopg.Connection:
    return psycopg.connect(
        host=host,
        port=port,
        dbname=dbname,
        user=settings.get("USER") or None,
        password=settings.get("PASSWORD") or None,
        autocommit=True,
        connect_timeout=10,
    )


def coordinator_of(settings: dict[str, Any]) -> Node:
    return settings.get("HOST") or "127.0.0.1", int(settings.get("PORT") or 5432)


def registered_workers(settings: dict[str, Any]) -> list[Node] | None:
    """The primary workers the configured database's Citus knows, or None when that database
    is not a Citus coordinator (no such database, no extension)."""
    host, port = coordinator_of(settings)
    try:
        with _connect(host, port, settings["NAME"], settings) as conn:
            if not conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'").fetchone():
                return None
            rows = conn.execute(
                "SELECT nodename, nodeport FROM pg_dist_node "
                "WHERE noderole = 'primary' AND groupid <> 0 ORDER BY nodeport"
            ).fetchall()
    except psycopg.OperationalError:
        return None
    return [(str(name), int(p)) for name, p in rows]


def make_on_workers(name: str, workers: list[Node], settings: dict[str, Any]) -> None:
    """Database `name`, new, with the extension on each worker; then the extension in the
    coordinator's (Django has just made it), its own address and the workers registered."""
    for host, port in workers:
        with _connect(host, port, "postgres", settings) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        with _connect(host, port, name, settings) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS citus")
    host, port = coordinator_of(settings)
    with _connect(host, port, name, settings) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS citus")
        conn.execute("SELECT citus_set_coordinator_host(%s, %s)", [host, port])
        for worker_host, worker_port in workers:
            known = conn.execute(
                "SELECT 1 FROM pg_dist_node WHERE nodename = %s AND nodeport = %s",
                [worker_host, worker_port],
            ).fetchone()
            if not known:
                add_node(conn, worker_host, worker_port)
    _made_on[name] = workers


def add_node(conn: psycopg.Connection[Any], host: str, port: int, tries: int = 5) -> None:
    """citus_add_node, tried again a few times: once seen in CI, a worker just made took a
    moment before the coordinator's first connection to it ("failure on connection marked as
    essential"), and every test of the run then failed at its set-up."""
    for attempt in range(tries):
        try:
            conn.execute("SELECT citus_add_node(%s, %s)", [host, port])
            return
        except psycopg.errors.InternalError:
            if attempt == tries - 1:
                raise
            time.sleep(1 + attempt)


def drop_on_workers(name: str, settings: dict[str, Any]) -> None:
    for host, port in _made_on.pop(name, []):
        with _connect(host, port, "postgres", settings) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


_django_create = DatabaseCreation._create_test_db
_django_destroy = DatabaseCreation._destroy_test_db


def _create_test_db(
    self: DatabaseCreation, verbosity: int, autoclobber: bool, keepdb: bool = False
) -> str:
    # Django names the configured database in settings_dict until this returns.
    settings = dict(self.connection.settings_dict)
    workers = registered_workers(settings)
    if workers is not None and not keepdb:
        # A test database left by an interrupted run is held by Citus's own connections (its
        # maintenance daemon), which Django's DROP DATABASE waits on and gives up: FORCE.
        host, port = coordinator_of(settings)
        with _connect(host, port, "postgres", settings) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                    sql.Identifier(self._get_test_db_name())
                )
            )
    name = _django_create(self, verbosity, autoclobber, keepdb)
    if workers is not None:
        make_on_workers(name, workers, settings)
        # Read by the migrations that distribute the tables, which Django runs next.
        if "MEMDASH_CITUS_SHARD_COUNT" not in os.environ:
            django_settings.MEMDASH_CITUS_SHARD_COUNT = TEST_SHARD_COUNT
    return name


def _destroy_test_db(self: DatabaseCreation, test_database_name: str, verbosity: int) -> None:
    if test_database_name not in _made_on:
        _django_destroy(self, test_database_name, verbosity)
        return
    # Citus's own connections (its maintenance daemon, its connections to the coordinator
    # itself) hold the database still: FORCE ends them.
    settings = dict(self.connection.settings_dict)
    host, port = coordinator_of(settings)
    with _connect(host, port, "postgres", settings) as conn:
        drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(test_database_name)
        )
        conn.execute(drop)
    drop_on_workers(test_database_name, settings)


_django_sql_flush = DatabaseOperations.sql_flush
# What the post_migrate signal after a flush makes again as it was (no test makes its own).
KEPT = frozenset({"django_content_type", "auth_permission"})


def _sql_flush(
    self: DatabaseOperations,
    style: Any,
    tables: list[str],
    *,
    reset_sequences: bool = False,
    allow_cascade: bool = False,
) -> list[str]:
    """A test database made on the cluster is emptied by DELETEs (this module's docstring);
    anything else, or a flush that restarts the sequences or cascades, as Django does."""
    on_cluster = self.connection.settings_dict["NAME"] in _made_on
    if not tables or not on_cluster or reset_sequences or allow_cascade:
        return _django_sql_flush(
            self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
        )
    return [
        "SET LOCAL citus.multi_shard_modify_mode TO 'sequential'",
        "SET CONSTRAINTS ALL DEFERRED",
        *(f"DELETE FROM {self.quote_name(table)}" for table in tables if table not in KEPT),
    ]


def install() -> None:
    """Django's PostgreSQL test database creation, made on every node of a Citus cluster, and
    its flush after a transactional test made cheap there."""
    DatabaseCreation._create_test_db = _create_test_db  # type: ignore[method-assign]
    DatabaseCreation._destroy_test_db = _destroy_test_db  # type: ignore[method-assign]
    DatabaseOperations.sql_flush = _sql_flush  # type: ignore[method-assign]


def is_citus() -> bool:
    """The database the tests run on is a Citus coordinator."""
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'")
        return cursor.fetchone() is not None


def require_citus() -> None:
    """Skip the calling test without a Citus coordinator under it, with the reason; a failure
    instead under MEMDASH_REQUIRE_CITUS=1 (CI's cluster step)."""
    if is_citus():
        return
    message = (
        "needs a Citus cluster: DATABASE_URL=$(scripts/citus.sh url) after scripts/citus.sh start"
    )
    if os.environ.get("MEMDASH_REQUIRE_CITUS"):
        pytest.fail(message)
    pytest.skip(message)
