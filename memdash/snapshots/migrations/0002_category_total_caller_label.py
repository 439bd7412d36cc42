"""The statistics table reads the responsible caller's label from CategoryTotal itself instead
of joining the frame (a random 64-bit key into a table of every frame of the app), so the
table is one indexed read of one table."""

from django.db import migrations, models

BATCH = 5_000


def label(symbol: str, image: str, offset: int | None, address: int | None) -> str:
    # As memdash.allocations.logic.analysis.frame_label at the time of this migration.
    if symbol:
        return symbol
    if image and offset is not None:
        return f"{image} + 0x{offset:x}"
    if image and address is not None:
        return f"{image} + 0x{address:x}"
    return f"0x{address:x}" if address is not None else "<unknown>"


def fill_labels(apps, schema_editor):
    category_total = apps.get_model("snapshots", "CategoryTotal")
    frame = apps.get_model("snapshots", "Frame")
    pending = category_total.objects.exclude(responsible_frame_id=None).values_list(
        "pk", "responsible_frame_id"
    )
    batch: list[tuple[int, int]] = []
    for row in pending.iterator(chunk_size=BATCH):
        batch.append(row)
        if len(batch) == BATCH:
            _fill(category_total, frame, batch)
            batch = []
    _fill(category_total, frame, batch)


def _fill(category_total, frame, batch: list[tuple[int, int]]) -> None:
    frames = {
        fid: label(*rest)
        for fid, *rest in frame.objects.filter(pk__in={f for _, f in batch}).values_list(
            "pk", "symbol", "image", "offset", "address"
        )
    }
    rows = [category_total(pk=pk, responsible_caller=frames.get(fid, "")) for pk, fid in batch]
    category_total.objects.bulk_update(rows, ["responsible_caller"], batch_size=1_000)


class Migration(migrations.Migration):
    dependencies = [
        ("snapshots", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="categorytotal",
            name="responsible_caller",
            field=models.TextField(blank=True, default=""),
        ),
        migrations.RunPython(fill_labels, migrations.RunPython.noop),
        migrations.RemoveField(
            model_name="categorytotal",
            name="responsible_frame",
        ),
    ]
