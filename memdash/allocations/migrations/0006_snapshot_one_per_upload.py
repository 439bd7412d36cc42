"""An upload makes at most one snapshot: a unique constraint on `upload_id` (which replaces its
index). Before it, an upload processed twice at once (a worker run again while the first still
ran) could store two; the first keeps the upload's id, the others keep their data without it
(delete them from their page if they are not wanted)."""

from django.db import migrations, models
from django.db.models import Count


def detach_repeats(apps, schema_editor):
    Snapshot = apps.get_model("allocations", "Snapshot")
    repeated = (
        Snapshot.objects.filter(upload_id__isnull=False)
        .values("upload_id")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .values_list("upload_id", flat=True)
    )
    for upload_id in list(repeated):
        first = Snapshot.objects.filter(upload_id=upload_id).order_by("id").first()
        Snapshot.objects.filter(upload_id=upload_id).exclude(pk=first.pk).update(upload_id=None)


class Migration(migrations.Migration):

    dependencies = [
        ('allocations', '0005_snapshot_frame_identity'),
    ]

    operations = [
        migrations.RunPython(detach_repeats, migrations.RunPython.noop),
        migrations.AlterField(
            model_name='snapshot',
            name='upload_id',
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddConstraint(
            model_name='snapshot',
            constraint=models.UniqueConstraint(fields=('upload_id',), name='snapshot_one_per_upload'),
        ),
    ]
