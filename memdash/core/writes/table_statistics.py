"""Planner statistics of the tables that grow or churn with uploads, kept up where autovacuum
would keep them (PostgreSQL; on Citus the workers' autovacuum keeps their shards').

The planner picks the index reads every page and every upload relies on only when a table's
statistics say how big it is and what it holds. Autovacuum makes them within a minute of a
change when it runs; until then (a month's new partition, a queue that filled in a burst), and
on a database run with autovacuum off (as this machine's CI database is), it plans for a table
that no longer exists: a snapshot's rows read by a sequential scan of the month (2 s instead of
5 ms), a worker's claim of the next task sorting every queued one (18 ms a claim with 7,600
uploads queued, half of a PostgreSQL core under 8 uploaders, instead of one index step). So a
process looks, at most every `ANALYZE_EVERY_SECONDS`, and analyses a table whose statistics are
missing or far off: grown many times over (`grown_past`), or changed past autovacuum's own
threshold (`changed_past`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.db import OperationalError, connection, transaction
from django.db.backends.utils import CursorWrapper

from memdash.core.logic import pacing
from memdash.core.reads.citus import is_citus

logger = logging.getLogger(__name__)

ANALYZE_EVERY_SECONDS = 30.0  # a process looks at a table's statistics at most this often
STALE_GROWTH = 4  # pages grown this many times over since the last ANALYZE: made again
# autovacuum's defaults (autovacuum_analyze_threshold, autovacuum_analyze_scale_factor)
CHANGED_BASE, CHANGED_SHARE = 50, 0.1


def grown_past(analysed_pages: int, analysed: bool, pages: int) -> bool:
    """Whether a table of `pages` pages needs ANALYZE when it had `analysed_pages` at its last
    (`analysed`: there was one). Without statistics the planner guesses a snapshot's rows to be
    the whole month; grown many times over, it guesses a snapshot too small."""
    if not analysed:
        return pages > 0
    return pages > STALE_GROWTH * max(analysed_pages, 1)


def changed_past(changed: int, tuples: float) -> bool:
    """Whether a table of `tuples` rows (at its last ANALYZE; -1: never) with `changed` rows
    inserted, updated or deleted since needs ANALYZE, by autovacuum's own rule: a queue whose
    rows change state keeps its size while what it holds turns over."""
    return changed > CHANGED_BASE + CHANGED_SHARE * max(tuples, 0)


def _keeps_statistics() -> bool:
    return connection.vendor == "postgresql" and not is_citus(connection)


def analyze_when_grown(table: str) -> None:
    """ANALYZE `table` now if it has grown past its statistics (`grown_past`), looked at most
    every `ANALYZE_EVERY_SECONDS` in a process: an ANALYZE after every write cost more than the
    write (a sample of 30,000 rows of a table of millions)."""
    if _keeps_statistics() and pacing.due(f"analyze {table}", ANALYZE_EVERY_SECONDS):
        analyze_if_grown(table)


def analyze_when_changed(table: str) -> None:
    """ANALYZE `table` now if it changed past its statistics (`changed_past`), looked at most
    every `ANALYZE_EVERY_SECONDS` in a process."""
    if _keeps_statistics() and pacing.due(f"analyze {table}", ANALYZE_EVERY_SECONDS):
        _analyze_if(table, CHANGED_SQL, changed_past)


def analyze_if_grown(table: str) -> None:
    """ANALYZE `table` if it has grown past its statistics (`grown_past`)."""
    _analyze_if(table, GROWN_SQL, grown_past)


# What `grown_past` and `changed_past` take of a table, by its name
GROWN_SQL = (
    "SELECT relpages, reltuples >= 0, pg_relation_size(oid) / current_setting('block_size')::int "
    "FROM pg_class WHERE oid = to_regclass(%s)"
)
CHANGED_SQL = (
    "SELECT s.n_mod_since_analyze, c.reltuples FROM pg_stat_user_tables s "
    "JOIN pg_class c ON c.oid = s.relid WHERE s.relid = to_regclass(%s)"
)


def _analyze_if(table: str, query: str, past: Callable[..., bool]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(query, [table])
        found = cursor.fetchone()
    if found is not None and past(*found):
        _analyze(table)


def _analyze(table: str) -> None:
    with briefly(table) as cursor:
        cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")


@contextmanager
def briefly(table: str) -> Iterator[CursorWrapper]:
    """A cursor in a transaction of its own that gives up a lock it cannot have within 2 s
    (autovacuum holds it: it does the same work) and does not wait for the disk at its commit
    (lost in a crash, statistics and summaries are made again)."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT set_config('lock_timeout', '2s', true), "
                "set_config('synchronous_commit', 'off', true)"
            )
            yield cursor
    except OperationalError as error:  # the lock was not had in time
        logger.info("%s left to autovacuum or a later upload: %s", table, error)
