"""Moving the test database between migrations, for the tests of one migration: `migrate` to
some targets (answering the models as they were there) and `latest` for the project's newest
(the `back_to_latest` fixture of conftest.py goes back there after a test)."""

from __future__ import annotations

from django.apps.registry import Apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

Target = tuple[str, str]


def migrate(targets: list[Target]) -> Apps:
    """Migrate the database to `targets`; the models as they are there."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def latest() -> list[Target]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def table_indexes(table: str) -> dict[str, list[str]]:
    """The table's indexes other than its primary key: name -> columns."""
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, table)
    return {
        name: info["columns"]
        for name, info in found.items()
        if info["index"] and not info["primary_key"]
    }
