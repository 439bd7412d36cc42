"""Schema changes that several apps' migrations make alike: the app's id added to a large table
that lacked it (the distribution column on Citus, `core.writes.citus`).

A migration imports these and lists what they return among its operations; each works on
SQLite, PostgreSQL and Citus (where the tables are still on the coordinator when it runs: the
distribution is the last migration).
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models


def app_column(model: str, table: str, parent_table: str, parent_column: str) -> list[Any]:
    """Operations that give `model` (its `table`) an `app` column filled from its parent row
    (`parent_table`, found by this table's `parent_column`), then NOT NULL: a nullable column
    first (SQLite and PostgreSQL add it without rewriting the table), its values copied from
    the parent, rows of no parent (left by a deletion that nothing cascaded) deleted, then the
    NOT NULL on PostgreSQL only; SQLite would make the whole table again for it, and the
    model's NOT NULL matters to no one there (every writer gives the app)."""

    def field(null: bool) -> models.ForeignKey[Any, Any]:
        return models.ForeignKey(
            "core.App", on_delete=models.DO_NOTHING, db_constraint=False, db_index=False,
            related_name="+", null=null,
        )  # fmt: skip

    def fill(apps: Any, schema_editor: Any) -> None:
        q = schema_editor.connection.ops.quote_name
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {q(table)} SET app_id = (SELECT p.app_id FROM {q(parent_table)} AS p "
                f"WHERE p.id = {q(table)}.{q(parent_column)}) WHERE app_id IS NULL"
            )
            cursor.execute(f"DELETE FROM {q(table)} WHERE app_id IS NULL")

    def not_null(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            with schema_editor.connection.cursor() as cursor:
                cursor.execute(f'ALTER TABLE "{table}" ALTER app_id SET NOT NULL')

    def nullable(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            with schema_editor.connection.cursor() as cursor:
                cursor.execute(f'ALTER TABLE "{table}" ALTER app_id DROP NOT NULL')

    return [
        migrations.AddField(model_name=model, name="app", field=field(null=True)),
        migrations.RunPython(fill, migrations.RunPython.noop),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(model_name=model, name="app", field=field(null=False))
            ],
            database_operations=[migrations.RunPython(not_null, nullable)],
        ),
    ]


def primary_key(table: str, columns: tuple[str, ...], name: str) -> migrations.RunPython:
    """On PostgreSQL, make the table's primary key `columns` under the name of the model's
    unique constraint `name` on them (made just before by AddConstraint, which this replaces):
    one index, not a primary key on the id and a unique one on (id, app). SQLite keeps both."""

    def swap(to: tuple[str, ...], constraint: str) -> Any:
        def run(apps: Any, schema_editor: Any) -> None:
            if schema_editor.connection.vendor != "postgresql":
                return
            with schema_editor.connection.cursor() as cursor:
                cursor.execute(
                    "SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass "
                    "AND contype = 'p'",
                    [table],
                )
                (old,) = cursor.fetchone()
                cursor.execute(f'ALTER TABLE "{table}" DROP CONSTRAINT "{old}"')
                if to == columns:  # the unique constraint becomes the primary key
                    cursor.execute(f'ALTER TABLE "{table}" DROP CONSTRAINT "{name}"')
                    cols = ", ".join(f'"{c}"' for c in to)
                    cursor.execute(
                        f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" PRIMARY KEY ({cols})'
                    )
                else:  # back: the id alone, and the unique constraint again
                    cursor.execute(
                        f'ALTER TABLE "{table}" ADD CONSTRAINT "{constraint}" PRIMARY KEY (id)'
                    )
                    cols = ", ".join(f'"{c}"' for c in columns)
                    cursor.execute(f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" UNIQUE ({cols})')

        return run

    return migrations.RunPython(swap(columns, name), swap(("id",), f"{table}_pkey"))
