"""Migration 0012: the category and generation totals lose their index by category alone (every
read names the snapshot first, through the composite indexes, which stay); undone, it comes
back. On both databases, by the index's name."""

import pytest

from tests.migrations import latest, migrate, table_indexes

pytestmark = pytest.mark.slow  # migrations back and forth

BEFORE = [("allocations", "0011_sqlite_rowids_without_autoincrement")]
TABLES = {
    "snapshots_categorytotal": {"cattotal_snap_cat", "cattotal_snap_size"},
    "snapshots_generationcategorytotal": {"gentotal_snap_gen"},
}


def by_category_alone(table: str) -> list[str]:
    return [name for name, columns in table_indexes(table).items() if columns == ["category_id"]]


@pytest.mark.django_db(transaction=True)
def test_the_index_by_category_alone_goes_and_comes_back(back_to_latest):
    for table, kept in TABLES.items():
        assert set(table_indexes(table)) == kept
    migrate(BEFORE)
    for table, kept in TABLES.items():
        assert len(by_category_alone(table)) == 1
        assert kept < set(table_indexes(table))
    migrate(latest())
    for table, kept in TABLES.items():
        assert by_category_alone(table) == []
        assert set(table_indexes(table)) == kept
