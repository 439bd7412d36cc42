"""memdash on Citus: the tables that grow with uploads distributed by app, the rest shared.

Run by the migration `site/0001_distribute_on_citus` and again after every `migrate`
(`apps.SiteConfig`: a table made by a later migration is placed the same way), on a database
with the citus extension only (`core.reads.citus.is_citus`); nothing happens elsewhere.
Idempotent: a table already placed is left as it is.

- **Distributed by `app_id`, all co-located** with the snapshots (`DISTRIBUTED`): an app's
  snapshots, rows, totals, frames, stack nodes, sessions, cycles, leaks and churn runs are on
  one worker, so an upload's transaction and an app's pages touch one worker. Citus wants the
  distribution column in every primary key, unique key and foreign key between these tables:
  the migrations put the app in every unique key (allocations 0015 and its siblings); here the
  primary keys on `id` become (id, app_id), and each foreign key between two of these tables
  becomes (column, app_id) -> (id, app_id), as Django's ORM cannot say (its models keep `id` as
  the primary key, which stays unique: it is drawn from the table's identity sequence).
- **Local to the coordinator** (`LOCAL`): the task queue (its workers lock rows with SKIP
  LOCKED), the cache, sessions, django's migration records and axes' log of attempts.
- **Reference tables**, a copy on every node, everything else: users, apps, builds, devices,
  keys, uploads, debug files, triage and alert settings. Distributed tables join them on any
  column, and their foreign keys to them stay as they are.
- **Functions** the writes call inside a shard's query (the BRIN summary after an upload) are
  made on every node.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper

from memdash.core.reads.citus import is_citus
from memdash.core.writes.brin import BRIN_SUMMARY_FUNCTION, BRIN_SUMMARY_FUNCTION_SQL

logger = logging.getLogger(__name__)

COLUMN = "app_id"
ROOT = "snapshots_snapshot"  # the first distributed; the others are co-located with it
DISTRIBUTED = (
    ROOT,
    "snapshots_category",
    "snapshots_frame",
    "snapshots_stacknode",
    "snapshots_generation",
    "snapshots_allocationrow",
    "snapshots_calltreenode",
    "snapshots_categorytotal",
    "snapshots_generationcategorytotal",
    "snapshots_buildcategorytotal",
    "allocations_snapshotimage",
    "allocations_timeline",
    "allocations_timedrow",
    "allocations_timedcalltree",
    "allocations_listentry",
    "allocations_block",
    "allocations_listorder",
    "allocations_buildtree",
    "compare_buildfiltersamples",
    "foom_session",
    "foom_buildfoomstats",
    "foom_builddayfoomstats",
    "foom_metrickitpayload",
    "foom_metrickitdiagnostic",
    "foom_processexit",
    "foom_osexitdaystats",
    "cycles_cyclereport",
    "cycles_cluster",
    "cycles_canonicalcycle",
    "cycles_retaincycle",
    "leaks_leakreport",
    "leaks_leakgroup",
    "leaks_leakrecord",
    "leaks_unnamedimage",
    "leaks_leaktraceanalysis",
    "leaks_leaktracecluster",
    "leaks_leaktraceoccurrence",
    "churn_churnrun",
    "churn_scenario",
    "churn_scenariorun",
    "churn_scenariofunction",
)
LOCAL = (
    "django_migrations",
    "django_session",
    "django_tasks_database_dbtaskresult",
    "memdash_cache",
    "axes_accessattempt",
    "axes_accessattemptexpiration",
    "axes_accessfailurelog",
    "axes_accesslog",
)


@dataclass(frozen=True)
class ForeignKey:
    table: str
    name: str
    columns: tuple[str, ...]
    target: str
    target_columns: tuple[str, ...]
    definition: str

    def restored(self, distributed: set[str]) -> str:
        """The key as it was; between two distributed tables with the app's id on both sides
        (checked at commit, as Django's are)."""
        if not {self.table, self.target} <= distributed:
            return f'ALTER TABLE "{self.table}" ADD CONSTRAINT "{self.name}" {self.definition}'
        cols = ", ".join([*self.columns, COLUMN])
        targets = ", ".join([*self.target_columns, COLUMN])
        return (
            f'ALTER TABLE "{self.table}" ADD CONSTRAINT "{self.name}" FOREIGN KEY ({cols}) '
            f'REFERENCES "{self.target}" ({targets}) DEFERRABLE INITIALLY DEFERRED'
        )


def distribute(connection: BaseDatabaseWrapper) -> list[str]:
    """Place every table not placed yet; answers what it did, one line a table.

    The foreign keys of the tables placed go first and come back last: while a local table has
    one to a reference table, Citus makes it a "Citus local table" of its own accord, and no
    longer lets it be made anything else (its identity column cannot be moved)."""
    if not is_citus(connection):
        return []
    done: list[str] = []
    with connection.cursor() as cursor:
        # DDL over many shards in one transaction: one connection per worker.
        cursor.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
        placed = _placed(cursor)
        tables = _tables(cursor)
        references = [t for t in tables if t not in placed and t not in (*DISTRIBUTED, *LOCAL)]
        wanted = [t for t in DISTRIBUTED if t in tables and t not in placed]
        moving = {*references, *wanted}
        keys = [k for k in _foreign_keys(cursor) if k.table in moving or k.target in moving]
        for key in keys:
            cursor.execute(f'ALTER TABLE "{key.table}" DROP CONSTRAINT "{key.name}"')
        for table in references:
            cursor.execute("SELECT create_reference_table(%s)", [table])
            done.append(f"{table}: reference table")
        if wanted:
            done += _distribute(cursor, wanted, placed)
        distributed = {*wanted, *(t for t, kind in placed.items() if kind == "h")}
        for key in keys:
            cursor.execute(key.restored(distributed))
        if wanted:
            _join_anything(cursor)
        _functions_on_every_node(cursor)
    for line in done:
        logger.info("citus: %s", line)
    return done


def _distribute(cursor: CursorWrapper, wanted: list[str], placed: dict[str, str]) -> list[str]:
    for table in wanted:
        _app_in_primary_key(cursor, table)
        _check_unique_keys(cursor, table)
    done = []
    cursor.execute(
        "SELECT set_config('citus.shard_count', %s, true)",
        [str(settings.MEMDASH_CITUS_SHARD_COUNT)],
    )
    for table in sorted(wanted, key=lambda t: t != ROOT):
        colocate = "none" if table == ROOT and ROOT not in placed else ROOT
        cursor.execute(
            "SELECT create_distributed_table(%s, %s, colocate_with => %s)",
            [table, COLUMN, colocate],
        )
        done.append(f"{table}: distributed by {COLUMN}")
    return done


def _join_anything(cursor: CursorWrapper) -> None:
    """Joins of two distributed tables on another column than the app's (a retain cycle and its
    loop by the loop's id) are answered by repartitioning rather than refused: every session
    of this database, and this one. The queries of one app's pages name the app of each table
    they join, which keeps them on the app's worker (`core.reads.citus`)."""
    cursor.execute("SELECT current_database()")
    (database,) = cursor.fetchone()
    q = cursor.db.ops.quote_name
    cursor.execute(f"ALTER DATABASE {q(database)} SET citus.enable_repartition_joins = on")
    cursor.execute("SET citus.enable_repartition_joins = on")


def _functions_on_every_node(cursor: CursorWrapper) -> None:
    """The functions the writes call inside a shard's query (the BRIN summary of the shard an
    upload wrote: `allocations.writes.partitions`), made or replaced here and on every worker.
    Citus copies a function made while it is there to the workers, and to a worker added later;
    one made before the extension (a database moved onto the cluster) is copied when named."""
    cursor.execute(BRIN_SUMMARY_FUNCTION_SQL)
    signature = f"{BRIN_SUMMARY_FUNCTION}(oid)"
    cursor.execute(
        "SELECT 1 FROM pg_dist_object WHERE classid = 'pg_proc'::regclass "
        "AND objid = %s::regprocedure",
        [signature],
    )
    if cursor.fetchone() is None:
        cursor.execute("SELECT create_distributed_function(%s)", [signature])


def _placed(cursor: CursorWrapper) -> dict[str, str]:
    """Tables Citus knows, with their kind: h distributed, n reference or local."""
    cursor.execute("SELECT logicalrelid::regclass::text, partmethod FROM pg_dist_partition")
    return {name.strip('"'): kind for name, kind in cursor.fetchall()}


def _tables(cursor: CursorWrapper) -> list[str]:
    """The schema's tables, partitions aside (they go with their parent)."""
    cursor.execute(
        "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace "
        "AND relkind IN ('r', 'p') AND NOT relispartition ORDER BY relname"
    )
    return [row[0] for row in cursor.fetchall()]


def _foreign_keys(cursor: CursorWrapper) -> list[ForeignKey]:
    cursor.execute(
        "SELECT c.conrelid::regclass::text, c.conname, c.confrelid::regclass::text, "
        "ARRAY(SELECT attname FROM unnest(c.conkey) WITH ORDINALITY k(n, i) "
        "  JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.i), "
        "ARRAY(SELECT attname FROM unnest(c.confkey) WITH ORDINALITY k(n, i) "
        "  JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.i), "
        "pg_get_constraintdef(c.oid) FROM pg_constraint c WHERE c.contype = 'f' "
        "AND c.connamespace = current_schema()::regnamespace"
    )
    return [
        ForeignKey(
            table.strip('"'), name, tuple(cols), target.strip('"'), tuple(target_cols), definition
        )
        for table, name, target, cols, target_cols, definition in cursor.fetchall()
    ]


def _app_in_primary_key(cursor: CursorWrapper, table: str) -> None:
    """A primary key on the id alone becomes (id, app_id)."""
    cursor.execute(
        "SELECT conname, ARRAY(SELECT attname FROM unnest(conkey) k(n) JOIN pg_attribute a "
        "  ON a.attrelid = conrelid AND a.attnum = k.n) "
        "FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'p'",
        [table],
    )
    row = cursor.fetchone()
    if row is None or COLUMN in row[1]:
        return
    name, columns = row
    cursor.execute(f'ALTER TABLE "{table}" DROP CONSTRAINT "{name}"')
    cols = ", ".join(f'"{c}"' for c in [*columns, COLUMN])
    cursor.execute(f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" PRIMARY KEY ({cols})')


def _check_unique_keys(cursor: CursorWrapper, table: str) -> None:
    """Every unique index has the app's id (the migrations saw to it): say which does not."""
    cursor.execute(
        "SELECT i.indexrelid::regclass::text FROM pg_index i WHERE i.indrelid = %s::regclass "
        "AND i.indisunique AND NOT EXISTS (SELECT 1 FROM unnest(i.indkey) k(n) "
        "  JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n "
        "  WHERE a.attname = %s)",
        [table, COLUMN],
    )
    lacking = [row[0] for row in cursor.fetchall()]
    if lacking:
        raise RuntimeError(f"{table}: unique keys without {COLUMN}: {lacking}")
