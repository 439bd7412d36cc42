"""An upload makes at most one cycle report: a unique constraint on `upload_id`. An upload
processed twice at once before it keeps its first report; the others keep their data without
the upload's id."""

from django.db import migrations, models
from django.db.models import Count


def detach_repeats(apps, schema_editor):
    CycleReport = apps.get_model("cycles", "CycleReport")
    repeated = (
        CycleReport.objects.filter(upload_id__isnull=False)
        .values("upload_id")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .values_list("upload_id", flat=True)
    )
    for upload_id in list(repeated):
        first = CycleReport.objects.filter(upload_id=upload_id).order_by("id").first()
        CycleReport.objects.filter(upload_id=upload_id).exclude(pk=first.pk).update(upload_id=None)


class Migration(migrations.Migration):

    dependencies = [
        ('cycles', '0003_settings_from_core'),
    ]

    operations = [
        migrations.RunPython(detach_repeats, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='cyclereport',
            constraint=models.UniqueConstraint(fields=('upload_id',), name='cycles_one_per_upload'),
        ),
    ]
