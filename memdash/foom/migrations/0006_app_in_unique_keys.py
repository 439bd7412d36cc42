"""The app's id in the unique keys of the per-build and per-day counts: Citus wants the
distribution column in every unique key. A build's counts were one-to-one with the build; they
are one row per (build, app), the same thing, as a plain foreign key and a unique constraint."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("foom", "0005_metrickit_diagnostics"),
        ("core", "0005_cache_table"),
    ]

    operations = [
        migrations.AlterField(
            model_name="buildfoomstats",
            name="build",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="core.build",
            ),
        ),
        migrations.AddConstraint(
            model_name="buildfoomstats",
            constraint=models.UniqueConstraint(
                fields=("build", "app"), name="foom_buildstats_identity"
            ),
        ),
        migrations.RemoveConstraint(
            model_name="builddayfoomstats", name="foom_builddaystats_identity"
        ),
        migrations.AddConstraint(
            model_name="builddayfoomstats",
            constraint=models.UniqueConstraint(
                fields=("build", "day", "app"), name="foom_builddaystats_identity"
            ),
        ),
        migrations.RemoveConstraint(
            model_name="osexitdaystats", name="foom_osexitdaystats_identity"
        ),
        migrations.AddConstraint(
            model_name="osexitdaystats",
            constraint=models.UniqueConstraint(
                fields=("build", "day", "source", "app"), name="foom_osexitdaystats_identity"
            ),
        ),
    ]
