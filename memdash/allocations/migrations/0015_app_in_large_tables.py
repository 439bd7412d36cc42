"""The app's id in every large table and in its unique keys: the distribution column on Citus
(an app's snapshots, rows, totals, frames and stack nodes on one worker; Citus wants it in every
unique key), filled from each row's snapshot or build. On PostgreSQL the frames' and stack
nodes' primary key becomes (id, app), the id first so that a lookup by id still uses it."""

from django.db import migrations, models

from memdash.core.writes.schema import app_column, primary_key

SNAPSHOT = "snapshots_snapshot"


class Migration(migrations.Migration):
    dependencies = [
        ("allocations", "0014_snapshot_recording_rule"),
        ("core", "0005_cache_table"),
    ]

    operations = [
        *app_column("allocationrow", "snapshots_allocationrow", SNAPSHOT, "snapshot_id"),
        *app_column("calltreenode", "snapshots_calltreenode", SNAPSHOT, "snapshot_id"),
        *app_column("categorytotal", "snapshots_categorytotal", SNAPSHOT, "snapshot_id"),
        *app_column(
            "generationcategorytotal", "snapshots_generationcategorytotal", SNAPSHOT, "snapshot_id"
        ),
        *app_column("generation", "snapshots_generation", SNAPSHOT, "snapshot_id"),
        *app_column("buildcategorytotal", "snapshots_buildcategorytotal", "core_build", "build_id"),
        migrations.RemoveConstraint(model_name="snapshot", name="snapshot_one_per_upload"),
        migrations.AddConstraint(
            model_name="snapshot",
            constraint=models.UniqueConstraint(
                fields=("upload_id", "app"), name="snapshot_one_per_upload"
            ),
        ),
        migrations.RemoveConstraint(model_name="generation", name="generation_identity"),
        migrations.AddConstraint(
            model_name="generation",
            constraint=models.UniqueConstraint(
                fields=("snapshot", "index", "app"), name="generation_identity"
            ),
        ),
        migrations.RemoveConstraint(model_name="buildcategorytotal", name="buildcat_identity"),
        migrations.AddConstraint(
            model_name="buildcategorytotal",
            constraint=models.UniqueConstraint(
                fields=("build", "category", "app"), name="buildcat_identity"
            ),
        ),
        migrations.AddConstraint(
            model_name="frame",
            constraint=models.UniqueConstraint(fields=("id", "app"), name="frame_identity"),
        ),
        primary_key("snapshots_frame", ("id", "app_id"), "frame_identity"),
        migrations.AddConstraint(
            model_name="stacknode",
            constraint=models.UniqueConstraint(fields=("id", "app"), name="stacknode_identity"),
        ),
        primary_key("snapshots_stacknode", ("id", "app_id"), "stacknode_identity"),
    ]
