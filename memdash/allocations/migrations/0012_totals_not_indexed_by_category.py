"""The category and generation totals lose their index by category alone (issue 19).

Every read of these tables names the snapshot first and goes through the composite indexes;
the index by category took each upload's few thousand rows at scattered places among every
snapshot's, nearly half the database's work of storing a small snapshot's totals. The index is
dropped by name on both databases: SQLite's schema editor would otherwise remake the whole table
(and bring back the AUTOINCREMENT that 0011 removed); PostgreSQL's treats the change as nothing.
"""

import django.db.models.deletion
from django.db import migrations, models

INDEXES = {
    "snapshots_categorytotal": "snapshots_categorytotal_category_id_b37b1b56",
    "snapshots_generationcategorytotal": "snapshots_generationcategorytotal_category_id_9c384c6b",
}


def _field() -> models.ForeignKey:
    return models.ForeignKey(
        db_constraint=False,
        db_index=False,
        on_delete=django.db.models.deletion.DO_NOTHING,
        related_name="+",
        to="allocations.category",
    )


class Migration(migrations.Migration):
    dependencies = [
        ("allocations", "0011_sqlite_rowids_without_autoincrement"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(model_name="categorytotal", name="category", field=_field()),
                migrations.AlterField(
                    model_name="generationcategorytotal", name="category", field=_field()
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{index}"',
                    reverse_sql=f'CREATE INDEX "{index}" ON "{table}" ("category_id")',
                )
                for table, index in INDEXES.items()
            ],
        )
    ]
