"""The app's id in the one-report-per-upload key: Citus wants the distribution column in every
unique key."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("cycles", "0006_cluster_link_to_weaken")]

    operations = [
        migrations.RemoveConstraint(model_name="cyclereport", name="cycles_one_per_upload"),
        migrations.AddConstraint(
            model_name="cyclereport",
            constraint=models.UniqueConstraint(
                fields=("upload_id", "app"), name="cycles_one_per_upload"
            ),
        ),
    ]
