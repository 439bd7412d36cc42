"""`CategoryTotal.responsible_frame_id` becomes a relation to its frame (the same column, no
constraint, no index), so the statistics table joins the frame in its one query. Nothing changes
in the database."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("allocations", "0008_partition_large_tables"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(model_name="categorytotal", name="responsible_frame_id"),
                migrations.AddField(
                    model_name="categorytotal",
                    name="responsible_frame",
                    field=models.ForeignKey(
                        blank=True,
                        db_constraint=False,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="allocations.frame",
                    ),
                ),
            ],
            database_operations=[],
        )
    ]
