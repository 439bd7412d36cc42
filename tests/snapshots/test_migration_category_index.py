"""Migration 0012: the category and generation totals lose their index by category alone (every
read names the snapshot first, through the composite indexes, which stay); undone, it comes
back. On both databases, by the index's name."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("allocations", "0011_sqlite_rowids_without_autoincrement")]
TABLES = {
    "snapshots_categorytotal": {"cattotal_snap_cat", "cattotal_snap_size"},
    "snapshots_generationcategorytotal": {"gentotal_snap_gen"},
}


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


@pytest.fixture
def back_to_latest():
    yield
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def indexes(table: str) -> dict[str, list[str]]:
    """The table's indexes other than its primary key: name -> columns."""
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, table)
    return {
        name: info["columns"]
        for name, info in found.items()
        if info["index"] and not info["primary_key"]
    }


def by_category_alone(table: str) -> list[str]:
    return [name for name, columns in indexes(table).items() if columns == ["category_id"]]


@pytest.mark.django_db(transaction=True)
def test_the_index_by_category_alone_goes_and_comes_back(back_to_latest):
    for table, kept in TABLES.items():
        assert set(indexes(table)) == kept
    migrate(BEFORE)
    for table, kept in TABLES.items():
        assert len(by_category_alone(table)) == 1
        assert kept < set(indexes(table))
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    for table, kept in TABLES.items():
        assert by_category_alone(table) == []
        assert set(indexes(table)) == kept
