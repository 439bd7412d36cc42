"""The app's id in the records and LeakCanary's occurrences, and in the unique keys of reports
and analyses: the distribution column on Citus (an app's leaks on one worker)."""

from django.db import migrations, models

from memdash.core.writes.schema import app_column


class Migration(migrations.Migration):
    dependencies = [
        ("leaks", "0008_mark_groups_for_regrouping_2027_02"),
        ("core", "0005_cache_table"),
    ]

    operations = [
        *app_column("leakrecord", "leaks_leakrecord", "leaks_leakreport", "report_id"),
        *app_column(
            "leaktraceoccurrence",
            "leaks_leaktraceoccurrence",
            "leaks_leaktraceanalysis",
            "analysis_id",
        ),
        migrations.RemoveConstraint(model_name="leakreport", name="leaks_once_per_upload"),
        migrations.AddConstraint(
            model_name="leakreport",
            constraint=models.UniqueConstraint(
                fields=("upload_id", "position", "app"), name="leaks_once_per_upload"
            ),
        ),
        migrations.RemoveConstraint(
            model_name="leaktraceanalysis", name="leaks_analysis_once_per_upload"
        ),
        migrations.AddConstraint(
            model_name="leaktraceanalysis",
            constraint=models.UniqueConstraint(
                fields=("upload_id", "position", "app"), name="leaks_analysis_once_per_upload"
            ),
        ),
    ]
