"""Migration 0011: on SQLite the two large tables number their rows by rowid without
AUTOINCREMENT (no `sqlite_sequence` write per row), keeping their rows and indexes; undone, the
word comes back with the same rows. Nothing changes on PostgreSQL."""

import pytest
from django.db import connection

from tests.migrations import migrate

BEFORE = [("allocations", "0010_large_tables_own_ids")]
BEFORE_APP_IDS = [("allocations", "0014_snapshot_recording_rule")]
TABLES = ("snapshots_allocationrow", "snapshots_calltreenode")

pytestmark = [
    pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's AUTOINCREMENT only"),
    pytest.mark.slow,  # migrations back and forth
]


def definition(table):
    with connection.cursor() as cursor:
        cursor.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = %s", [table])
        return cursor.fetchone()[0]


def index_names(table):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = %s "
            "AND sql IS NOT NULL ORDER BY name",
            [table],
        )
        return [row[0] for row in cursor.fetchall()]


ROW = "INSERT INTO snapshots_allocationrow (snapshot_id, category_id, stack_id, thread, generation, persistent, persistent_bytes, transient, transient_bytes) VALUES (7, 3, NULL, 1, NULL, 2, 32, 0, 0)"  # noqa: E501


@pytest.mark.django_db(transaction=True)
def test_rows_and_indexes_survive_both_ways(back_to_latest):
    for table in TABLES:
        assert "AUTOINCREMENT" not in definition(table)
    assert index_names("snapshots_allocationrow") == ["allocrow_snap_cat"]
    assert index_names("snapshots_calltreenode") == ["calltree_snap_parent"]
    with connection.cursor() as cursor:
        cursor.execute(ROW)
        cursor.execute(ROW)

    migrate(BEFORE)
    for table in TABLES:
        assert "AUTOINCREMENT" in definition(table)
    assert index_names("snapshots_allocationrow") == ["allocrow_snap_cat"]

    # Up to the migration before the app's id (0015 deletes rows of no snapshot, as these are).
    migrate(BEFORE_APP_IDS)
    assert "AUTOINCREMENT" not in definition("snapshots_allocationrow")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, snapshot_id, category_id, thread, persistent_bytes "
            "FROM snapshots_allocationrow ORDER BY id"
        )
        assert cursor.fetchall() == [(1, 7, 3, 1, 32), (2, 7, 3, 1, 32)]
        cursor.execute("DELETE FROM snapshots_allocationrow")
