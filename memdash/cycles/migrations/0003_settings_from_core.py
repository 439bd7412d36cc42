"""Cycles' system prefixes move from `core.App` to `CycleSettings`, values copied (before core
drops the column: `run_before`)."""

import django.db.models.deletion
from django.db import migrations, models


def copy_from_apps(apps, schema_editor):
    App = apps.get_model("core", "App")
    CycleSettings = apps.get_model("cycles", "CycleSettings")
    CycleSettings.objects.bulk_create(
        CycleSettings(app_id=pk, system_prefixes=prefixes)
        for pk, prefixes in App.objects.values_list("pk", "system_prefixes")
        if prefixes
    )


def copy_to_apps(apps, schema_editor):
    App = apps.get_model("core", "App")
    for settings in apps.get_model("cycles", "CycleSettings").objects.all():
        App.objects.filter(pk=settings.app_id).update(system_prefixes=settings.system_prefixes)


class Migration(migrations.Migration):
    run_before = [("core", "0002_lens_settings_moved")]

    dependencies = [
        ('core', '0001_initial'),
        ('cycles', '0002_cluster_list_index'),
    ]

    operations = [
        migrations.CreateModel(
            name='CycleSettings',
            fields=[
                ('app', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='cycle_settings', serialize=False, to='core.app')),
                ('system_prefixes', models.JSONField(blank=True, default=list)),
            ],
        ),
        migrations.RunPython(copy_from_apps, copy_to_apps),
    ]
