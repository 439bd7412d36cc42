"""The app's id in scenario runs and their functions, and in their unique keys: the
distribution column on Citus (an app's churn runs on one worker)."""

from django.db import migrations, models

from memdash.core.writes.schema import app_column


class Migration(migrations.Migration):
    dependencies = [
        ("churn", "0002_settings_from_core"),
        ("core", "0005_cache_table"),
    ]

    operations = [
        *app_column("scenariorun", "churn_scenariorun", "churn_churnrun", "run_id"),
        *app_column(
            "scenariofunction", "churn_scenariofunction", "churn_scenariorun", "scenario_run_id"
        ),
        migrations.RemoveConstraint(model_name="scenariorun", name="churn_scenario_run_identity"),
        migrations.AddConstraint(
            model_name="scenariorun",
            constraint=models.UniqueConstraint(
                fields=("run", "scenario", "app"), name="churn_scenario_run_identity"
            ),
        ),
        migrations.RemoveConstraint(model_name="scenariofunction", name="churn_function_identity"),
        migrations.AddConstraint(
            model_name="scenariofunction",
            constraint=models.UniqueConstraint(
                fields=("scenario_run", "function", "app"), name="churn_function_identity"
            ),
        ),
    ]
