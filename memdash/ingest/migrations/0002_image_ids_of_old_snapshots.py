"""The ids of the images of snapshots stored before memdash kept them, read back from their kept
uploads (`memdash.ingest.writes.image_ids`): allocations' migration 0004 derived their image rows from
their frames, by name only; here each gets the UUID or build id (and architecture) its upload
gave that image, so that a debug file arriving now finds and names these snapshots.

A snapshot whose upload is gone, no longer reads, or gave its images no id keeps its rows by
name: shown on its missing-debug-files page, not found by a debug file.
"""

from django.conf import settings
from django.db import migrations

from memdash.core.logic.errors import UploadRefused
from memdash.ingest.writes.image_ids import images_of_upload
from memdash.core.logic.reading import read_content
from memdash.symbols.logic.lookup import normalize_debug_id


def recorded_images(upload, source_format):
    with upload.file.open("rb") as stream:
        raw = read_content(stream, settings.MEMDASH_MAX_DECOMPRESSED_BYTES)
    images = images_of_upload(raw, source_format, upload.app, upload.fields or {},
                              upload.created_at)  # fmt: skip
    found = {}
    for image in images:
        if image.uuid and image.name not in found:
            found[image.name] = image
    return found


def fill_image_ids(apps, schema_editor):
    image_model = apps.get_model("allocations", "SnapshotImage")
    snapshot_model = apps.get_model("allocations", "Snapshot")
    upload_model = apps.get_model("ingest", "Upload")
    pending = image_model.objects.filter(debug_id="").values_list("snapshot_id", flat=True)
    snapshots = snapshot_model.objects.filter(
        pk__in=pending.distinct(), upload_id__isnull=False
    ).only("id", "upload_id", "source_format")
    for snapshot in snapshots.iterator():
        upload = upload_model.objects.select_related("app").filter(pk=snapshot.upload_id).first()
        if upload is None or not upload.file:
            continue
        try:
            found = recorded_images(upload, snapshot.source_format)
        except (OSError, UploadRefused):
            continue
        for row in image_model.objects.filter(snapshot_id=snapshot.pk, debug_id=""):
            image = found.get(row.name)
            if image is not None:
                row.debug_id = (normalize_debug_id(image.uuid) or image.uuid)[:64]
                row.arch = row.arch or image.arch
                row.save(update_fields=["debug_id", "arch"])


class Migration(migrations.Migration):
    dependencies = [
        ("ingest", "0001_initial"),
        ("allocations", "0004_images_of_old_snapshots"),
    ]

    operations = [
        migrations.RunPython(fill_image_ids, migrations.RunPython.noop, elidable=True),
    ]
