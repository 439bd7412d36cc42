"""The lenses' settings leave `core.App`: churn's weights and threshold for `churn.ChurnSettings`,
cycles' system prefixes for `cycles.CycleSettings`. Their migrations copy the values first
(`run_before` this one), so core names no lens here."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('core', '0001_initial'),
    ]

    operations = [
        migrations.RemoveField(
            model_name='app',
            name='churn_threshold_percent',
        ),
        migrations.RemoveField(
            model_name='app',
            name='churn_weights',
        ),
        migrations.RemoveField(
            model_name='app',
            name='system_prefixes',
        ),
    ]
