"""Monthly partitions of the two large tables on PostgreSQL (allocation rows, call-tree totals).

A year of uploads is mostly these rows. Partitioned by the month they were stored in (declarative
range partitioning on a `month` column, `yyyymm`, that the database fills from the time of the
writing transaction), retention drops a whole month with `DROP TABLE` instead of deleting rows
one by one, and each month's indexes stay the size of one month.

The month is the month the rows were *stored* in, not the capture time a device reports: device
clocks say 1970 or 2099, which would make a partition per bogus month, and retention goes by the
time a snapshot was stored (`retention.py`).

The column exists only in the database: Django's models do not list it (the default fills it on
every insert and COPY), so the ORM, SQLite and the bulk engine are unchanged. A `DEFAULT`
partition catches rows of a month whose partition was not made in time; making that partition
later moves them into it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import connection, transaction

from memdash.allocations.models import Snapshot
from memdash.core.logic import pacing
from memdash.core.reads.citus import is_citus
from memdash.core.writes.brin import BRIN_SUMMARY_FUNCTION
from memdash.core.writes.table_statistics import ANALYZE_EVERY_SECONDS, analyze_if_grown, briefly

TABLES = ("snapshots_allocationrow", "snapshots_calltreenode")
MONTH_DEFAULT = "(to_char(now() AT TIME ZONE 'UTC', 'YYYYMM'))::integer"
AHEAD = 2  # months made ahead of the current one, so a month never starts without its own

logger = logging.getLogger(__name__)

_made: set[tuple[str, int]] = set()  # (table, month) known to exist, in this process
# A partition's new BRIN ranges are summarised at most this often by one process: a summary
# takes every range not yet summarised, so under a stream of uploads the next one's covers
# this one's; the last of a burst waits at most for autovacuum (`autosummarize`). Four
# statements spared in most of many small uploads.
SUMMARIZE_EVERY_SECONDS = 1.0


def month_of(moment: datetime) -> int:
    utc = moment.astimezone(UTC)
    return utc.year * 100 + utc.month


def next_month(month: int) -> int:
    year, m = divmod(month, 100)
    return (year + 1) * 100 + 1 if m == 12 else month + 1


def partition_name(table: str, month: int) -> str:
    return f"{table}_m{month}"


def is_partitioned(table: str) -> bool:
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid "
            "WHERE c.relname = %s AND c.relnamespace = current_schema()::regnamespace",
            [table],
        )
        return cursor.fetchone() is not None


def months_of(table: str) -> list[int]:
    """The months that have a partition of `table`, oldest first."""
    prefix = partition_name(table, 0)[:-1]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = %s",
            [table],
        )
        names = [row[0] for row in cursor.fetchall()]
    return sorted(int(n[len(prefix) :]) for n in names if n.startswith(prefix))


def partitions_of(table: str) -> list[str]:
    """The partitions of `table`, its default one last (none if it is not partitioned)."""
    if not is_partitioned(table):
        return []
    return [partition_name(table, m) for m in months_of(table)] + [f"{table}_default"]


def ensure_partitions(now: datetime | None = None) -> None:
    """Make this month's partition and the next ones of each table, if missing (PostgreSQL;
    nothing elsewhere). Run outside an upload's transaction: making a partition locks its
    table for a moment, once a month."""
    if connection.vendor != "postgresql":
        return
    month = month_of(now or datetime.now(UTC))
    wanted = [month]
    for _ in range(AHEAD):
        wanted.append(next_month(wanted[-1]))
    for table in TABLES:
        missing = [m for m in wanted if (table, m) not in _made]
        if not missing or not is_partitioned(table):
            continue
        existing = set(months_of(table))
        for m in missing:
            if m not in existing:
                make_partition(table, m)
            _made.add((table, m))


def make_partition(table: str, month: int) -> None:
    """The partition of one month, taking over any rows of that month the default partition
    caught (a partition cannot be attached while the default holds rows of its range)."""
    name, default = partition_name(table, month), f"{table}_default"
    q = connection.ops.quote_name
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"CREATE TABLE IF NOT EXISTS {q(name)} (LIKE {q(table)})")
        cursor.execute(
            f"WITH moved AS (DELETE FROM {q(default)} WHERE month = %s RETURNING *) "
            f"INSERT INTO {q(name)} SELECT * FROM moved",
            [month],
        )
        cursor.execute(
            f"ALTER TABLE {q(table)} ATTACH PARTITION {q(name)} "
            f"FOR VALUES FROM ({month}) TO ({next_month(month)})"
        )


@dataclass
class Dropped:
    table: str
    month: int
    rows: int
    snapshots: int  # marked pruned by this drop (those with rows in the month, not marked yet)


def drop_months_before(month: int, tables: tuple[str, ...] = TABLES) -> list[Dropped]:
    """Drop the partitions of every month before `month`, after marking the snapshots with
    rows in them pruned (so no page shows them half there). Returns what went."""
    dropped: list[Dropped] = []
    q = connection.ops.quote_name
    for table in tables:
        if not is_partitioned(table):
            continue
        for m in months_of(table):
            if m >= month:
                continue
            name = partition_name(table, m)
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(
                    f"UPDATE {q(Snapshot._meta.db_table)} SET rows_pruned_at = now() "
                    f"WHERE rows_pruned_at IS NULL AND id IN (SELECT snapshot_id FROM {q(name)})"
                )
                marked = cursor.rowcount
                cursor.execute(f"SELECT count(*) FROM {q(name)}")
                row = cursor.fetchone()
                cursor.execute(f"DROP TABLE {q(name)}")
            _made.discard((table, m))
            dropped.append(Dropped(table, m, int(row[0]) if row else 0, marked))
    return dropped


@dataclass(frozen=True)
class WriteTarget:
    """Where a bulk write of a partitioned table goes (`core.writes.bulk.copy_rows` arguments)."""

    into: str | None = None  # None: the table itself
    constants: dict[str, int] | None = None
    # The writer gives the rows their ids (PostgreSQL: no sequence, migration 0010); SQLite
    # numbers its rowids itself.
    numbered: bool = False


def write_target(table: str) -> WriteTarget:
    """Where a snapshot's rows of `table` are written: on PostgreSQL, straight into the partition
    of the transaction's month, with that month, so that no row is routed and no default is
    computed per row (a million rows: a quarter of a second); elsewhere, or while that partition
    is missing, the table itself (its default then fills the month)."""
    if connection.vendor != "postgresql":
        return WriteTarget()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT m, to_regclass(%s || m) IS NOT NULL FROM (SELECT {MONTH_DEFAULT} AS m) AS now",
            [partition_name(table, 0)[:-1]],
        )
        month, exists = cursor.fetchone()
    if not exists:
        return WriteTarget(numbered=True)
    return WriteTarget(partition_name(table, month), {"month": month}, numbered=True)


def summarize_after_commit(target: WriteTarget, index: str, app_id: int) -> None:
    """Once the rows are committed, summarise the page ranges they filled in the partition's
    part of the BRIN `index`: until then, every query through the index reads those pages.
    Outside the upload's transaction, so the lock it takes (one summariser per table) is held
    for this statement only; if autovacuum holds it, autovacuum summarises them itself
    (`autosummarize`), so this gives up after a moment rather than wait. Not again within
    `SUMMARIZE_EVERY_SECONDS` of this process's last summary of the partition (on Citus, of
    the app's shard of it)."""
    if target.into is None:
        return
    partition = target.into
    on_citus = is_citus(connection)
    place = f"{partition} app {app_id}" if on_citus else partition
    if not pacing.due(f"summarize {place}", SUMMARIZE_EVERY_SECONDS):
        return
    summarize = _summarize_shard if on_citus else _summarize
    transaction.on_commit(lambda: summarize(partition, index, app_id), robust=True)


def _summarize(partition: str, index: str, app_id: int) -> None:
    """On one PostgreSQL: the partition's part of the index, named through the index's tree."""
    with briefly(partition) as cursor:
        cursor.execute(
            "SELECT brin_summarize_new_values(i.inhrelid::regclass) FROM pg_inherits i "
            "JOIN pg_index x ON x.indexrelid = i.inhrelid "
            "WHERE i.inhparent = to_regclass(%s) AND x.indrelid = to_regclass(%s)",
            [index, partition],
        )


def _summarize_shard(partition: str, index: str, app_id: int) -> None:
    """On Citus the coordinator's partition is an empty shell: the rows are in the shard of the
    app on its worker. A query of the partition by the app goes to that one shard, where the
    row's `tableoid` is the shard's: `BRIN_SUMMARY_FUNCTION` (`core.writes.brin`, on every
    node: made by `site.writes.citus`) summarises that shard's BRIN ranges there."""
    q = connection.ops.quote_name
    with briefly(partition) as cursor:
        cursor.execute(
            f"SELECT {BRIN_SUMMARY_FUNCTION}(tableoid) FROM {q(partition)} "
            "WHERE app_id = %s LIMIT 1",
            [app_id],
        )


def analyze_after_commit(target: WriteTarget) -> None:
    """Once the rows are committed, ANALYZE the partition they went to if its statistics are
    missing or stale (`table_statistics.grown_past`), at most every `ANALYZE_EVERY_SECONDS` in
    a process. Autovacuum does this within a minute when it runs; a month's new partition has
    nothing until then, and a database run with autovacuum off never would. On Citus the rows
    are in the workers' shards, whose autovacuum keeps them."""
    if target.into is None or is_citus(connection):
        return
    partition = target.into
    if pacing.due(f"analyze {partition}", ANALYZE_EVERY_SECONDS):
        transaction.on_commit(lambda: analyze_if_grown(partition), robust=True)
