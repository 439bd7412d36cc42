"""Moving the test database between migrations, for the tests of one migration: `migrate` to
some targets (answering the models as they were there) and `latest` for the project's newest
(the `back_to_latest` fixture of conftest.py goes back there after a test)."""

from __future__ import annotations

import pytest
from django.apps.registry import Apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.citus.cluster import is_citus

Target = tuple[str, str]


def migrate(targets: list[Target]) -> Apps:
    """Migrate the database to `targets`; the models as they are there.

    Not backwards on a Citus cluster (the test skips, saying so): there the tables that grow
    with uploads are distributed by app, and the older schemas' unique keys without the app are
    refused. A database moves onto Citus at the newest migration (docs/scaling.md), never
    back to an older one there."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    if any(backwards for _, backwards in executor.migration_plan(targets)) and is_citus():
        pytest.skip("migrations back on Citus: older unique keys lack the app, which it refuses")
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
