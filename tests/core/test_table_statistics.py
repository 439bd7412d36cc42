"""Planner statistics kept where autovacuum would keep them (`core.writes.table_statistics`):
the rules, worked out by hand from autovacuum's defaults and the growth allowed, and the task
queue analysed once it has changed past them (PostgreSQL; its tables only). Without it a
worker's claim sorted every queued task: 18 ms a claim with 7,600 uploads queued."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memdash.allocations.tasks import make_allocation_list_task
from memdash.core.logic import pacing
from memdash.core.writes import table_statistics
from memdash.ingest.tasks import TASK_TABLE, process_upload_task
from tests.citus.cluster import is_citus
from tests.samples import spec_example


@pytest.mark.parametrize(
    ("changed", "tuples", "past"),
    [
        (50, -1, False),  # never analysed: 50 changes is autovacuum's threshold itself
        (51, -1, True),
        (150, 1000, False),  # 50 + a tenth of 1,000
        (151, 1000, True),
        (0, 0, False),
    ],
)
def test_a_table_changed_past_autovacuums_threshold_needs_analyze(changed, tuples, past):
    assert table_statistics.changed_past(changed, tuples) is past


def analyses() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT analyze_count FROM pg_stat_user_tables WHERE relid = to_regclass(%s)",
            [TASK_TABLE],
        )
        return cursor.fetchone()[0]


def flush_statistics() -> None:
    """This connection's counts of changed rows, into the shared statistics now (they go at
    most every second otherwise)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
        cursor.execute("SELECT 1")


@pytest.mark.django_db(transaction=True)
def test_the_task_queue_is_analysed_once_it_changed_past_its_statistics(database_tasks):
    if connection.vendor != "postgresql" or is_citus():
        pytest.skip("PostgreSQL's own statistics (on Citus the workers' autovacuum keeps them)")
    pacing.forget()
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {TASK_TABLE}")
    before = analyses()
    for _ in range(120):  # a burst of queued tasks: 120 rows inserted into an analysed table
        make_allocation_list_task.enqueue(0)
    flush_statistics()
    table_statistics.analyze_when_changed(TASK_TABLE)
    assert analyses() == before + 1
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)", [TASK_TABLE])
        assert cursor.fetchone()[0] >= 120
    table_statistics.analyze_when_changed(TASK_TABLE)  # looked within 30 s: not again
    pacing.forget()
    table_statistics.analyze_when_changed(TASK_TABLE)  # nothing changed since
    assert analyses() == before + 1


@pytest.mark.django_db
def test_a_workers_pass_looks_at_the_queues_statistics(database_tasks, upload):
    queued = upload(spec_example()).json()
    assert queued["status"] == "queued"
    pacing.forget()
    with CaptureQueriesContext(connection) as queries:
        assert process_upload_task.call(queued["id"]) == "done"
    looked = [q["sql"] for q in queries.captured_queries if "n_mod_since_analyze" in q["sql"]]
    assert len(looked) == int(connection.vendor == "postgresql" and not is_citus())
