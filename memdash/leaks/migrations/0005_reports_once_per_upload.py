"""An upload's leak reports are stored once: a unique constraint on (`upload_id`, `position`).
An upload processed twice at once before it keeps its first reports; the repeats keep their
data without the upload's id."""

from django.db import migrations, models
from django.db.models import Count


def detach_repeats(apps, schema_editor):
    LeakReport = apps.get_model("leaks", "LeakReport")
    repeated = (
        LeakReport.objects.filter(upload_id__isnull=False)
        .values("upload_id", "position")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .values_list("upload_id", "position")
    )
    for upload_id, position in list(repeated):
        same = LeakReport.objects.filter(upload_id=upload_id, position=position)
        first = same.order_by("id").first()
        same.exclude(pk=first.pk).update(upload_id=None)


class Migration(migrations.Migration):

    dependencies = [
        ('leaks', '0004_mark_groups_for_regrouping'),
    ]

    operations = [
        migrations.RunPython(detach_repeats, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='leakreport',
            constraint=models.UniqueConstraint(fields=('upload_id', 'position'), name='leaks_once_per_upload'),
        ),
    ]
