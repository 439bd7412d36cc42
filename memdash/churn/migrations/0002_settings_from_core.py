"""Churn settings move from `core.App` to `ChurnSettings`, values copied (before core drops its
columns: `run_before`)."""

import django.db.models.deletion
from django.db import migrations, models


def copy_from_apps(apps, schema_editor):
    App = apps.get_model("core", "App")
    ChurnSettings = apps.get_model("churn", "ChurnSettings")
    ChurnSettings.objects.bulk_create(
        ChurnSettings(app_id=pk, weights=weights or {}, threshold_percent=threshold)
        for pk, weights, threshold in App.objects.values_list(
            "pk", "churn_weights", "churn_threshold_percent"
        )
        if weights or threshold != 10.0
    )


def copy_to_apps(apps, schema_editor):
    App = apps.get_model("core", "App")
    for settings in apps.get_model("churn", "ChurnSettings").objects.all():
        App.objects.filter(pk=settings.app_id).update(
            churn_weights=settings.weights, churn_threshold_percent=settings.threshold_percent
        )


class Migration(migrations.Migration):
    run_before = [("core", "0002_lens_settings_moved")]

    dependencies = [
        ('churn', '0001_initial'),
        ('core', '0001_initial'),
    ]

    operations = [
        migrations.CreateModel(
            name='ChurnSettings',
            fields=[
                ('app', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='churn_settings', serialize=False, to='core.app')),
                ('weights', models.JSONField(blank=True, default=dict)),
                ('threshold_percent', models.FloatField(default=10.0)),
            ],
        ),
        migrations.RunPython(copy_from_apps, copy_to_apps),
    ]
