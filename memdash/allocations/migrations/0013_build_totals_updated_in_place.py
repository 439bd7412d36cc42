"""Build totals, updated in place by every upload of their build (issue 19), cost less to update.

- Their index by build alone goes: the unique (build, category) index starts with the build and
  serves every read, and the cascade from a build, as well. Dropped by name on both databases
  (SQLite's schema editor would otherwise remake the table).
- On PostgreSQL the table leaves half of each page free (fillfactor 50), so that the new version
  of an updated row fits on its page and no index is touched (a HOT update: the counters it
  changes are in no index). An upsert of a build's 5,000 categories took 21 ms instead of
  58–67 ms. Pages written before keep their fill until they are rewritten (`VACUUM FULL
  snapshots_buildcategorytotal`, once, if a large table of old builds is still updated).
"""

import django.db.models.deletion
from django.db import migrations, models

TABLE = "snapshots_buildcategorytotal"
BUILD_INDEX = "snapshots_buildcategorytotal_build_id_dfbfda46"
FILLFACTOR = 50


def _room_for_updates(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f'ALTER TABLE "{TABLE}" SET (fillfactor = {FILLFACTOR})')


def _pages_filled(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f'ALTER TABLE "{TABLE}" RESET (fillfactor)')


class Migration(migrations.Migration):
    dependencies = [
        ("allocations", "0012_totals_not_indexed_by_category"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="buildcategorytotal",
                    name="build",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="core.build",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{BUILD_INDEX}"',
                    reverse_sql=f'CREATE INDEX "{BUILD_INDEX}" ON "{TABLE}" ("build_id")',
                ),
            ],
        ),
        migrations.RunPython(_room_for_updates, _pages_filled),
    ]
