"""Claims on uploads (a lease, the count of claims as its token) and the client's own
Idempotency-Key, unique per app."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('ingest', '0003_upload_unread'),
    ]

    operations = [
        migrations.AddField(
            model_name='upload',
            name='attempts',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='upload',
            name='client_key',
            field=models.CharField(blank=True, max_length=255),
        ),
        migrations.AddField(
            model_name='upload',
            name='lease_until',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddConstraint(
            model_name='upload',
            constraint=models.UniqueConstraint(condition=models.Q(('client_key', ''), _negated=True), fields=('app', 'client_key'), name='upload_client_key'),
        ),
    ]
