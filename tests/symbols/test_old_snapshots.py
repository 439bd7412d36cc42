"""A snapshot stored before memdash kept its images (no SnapshotImage rows: the images were not
recorded, only the frames' image names) gets them on migrating: allocations 0004 derives the
rows from its frames, ingest 0002 reads each image's id back from the kept upload. The rows are
those ingest writes today, and a debug file arriving afterwards names the snapshot.

The migrations' functions run here on the current models (the schema is the same: both only
write data), after the snapshot was stored and its image rows removed, as they were before."""

from __future__ import annotations

import gzip
import importlib
import json

import pytest
from django.apps import apps

from memdash.allocations.models import Snapshot, SnapshotImage
from memdash.symbols.models import SymbolicationJob
from tests.symbols.documents import DECODE, by_address
from tests.symbols.helpers import DATA, ELF, ELF_DEBUG_ID
from tests.symbols.test_symbolication import post_debug_file, stored, tree

DERIVE = importlib.import_module("memdash.allocations.migrations.0004_images_of_old_snapshots")
FILL = importlib.import_module("memdash.ingest.migrations.0002_image_ids_of_old_snapshots")
REPORT = json.loads((DATA.parents[1] / "importers" / "matrix_foom_report.json").read_text())
FIELDS = ("name", "debug_id", "arch", "system", "unsymbolicated_frames", "unsymbolicated_bytes")


def migrate() -> None:
    DERIVE.derive_images(apps, None)
    FILL.fill_image_ids(apps, None)


def images(snapshot: Snapshot) -> list[tuple]:
    return sorted(SnapshotImage.objects.filter(snapshot=snapshot).values_list(*FIELDS))


@pytest.mark.django_db
def test_an_old_snapshot_gets_its_images_and_is_named(
    client, app, ingest_secret, upload, django_capture_on_commit_callbacks
):
    snapshot = stored(upload, by_address())
    as_ingest_writes = images(snapshot)
    assert ("chat_cache.elf", ELF_DEBUG_ID, "x86_64", False, 4, 704) in as_ingest_writes
    # Stored the old way: no image rows, nothing counted unnamed.
    SnapshotImage.objects.filter(snapshot=snapshot).delete()
    Snapshot.objects.filter(pk=snapshot.pk).update(unsymbolicated_bytes=0)

    migrate()
    assert images(snapshot) == as_ingest_writes
    assert Snapshot.objects.get(pk=snapshot.pk).unsymbolicated_bytes == 704

    response = post_debug_file(client, app, ingest_secret, ELF, django_capture_on_commit_callbacks)
    job = SymbolicationJob.objects.get(pk=response.json()["symbolication"]["id"])
    assert (job.state, job.snapshots_done, job.frames_named) == ("done", 1, 4)
    named = tree(snapshot)
    assert named[("main", "store_image", DECODE, "scaled_size")] == (640, True)
    assert Snapshot.objects.get(pk=snapshot.pk).unsymbolicated_bytes == 0


@pytest.mark.django_db
def test_without_its_upload_an_old_snapshot_is_listed_by_name(app, upload):
    snapshot = stored(upload, by_address())
    SnapshotImage.objects.filter(snapshot=snapshot).delete()
    Snapshot.objects.filter(pk=snapshot.pk).update(upload_id=None)

    migrate()
    # Named frames (libc's) and unnamed ones: every image a frame is in, no id to match by.
    assert images(snapshot) == [
        ("chat_cache.elf", "", "", False, 4, 704),
        ("libc.so.6", "", "", True, 0, 0),
    ]


@pytest.mark.django_db
def test_a_monitors_upload_is_converted_again_for_its_ids(app, upload):
    """A Matrix report (gzipped, as apps send it): its images are those of the document it is
    converted to, with the uuids Matrix gives."""
    body = gzip.compress(json.dumps(REPORT).encode())
    response = upload(body, query="build_version=8.0.4&build_number=1")
    snapshot = Snapshot.objects.get(pk=response.json()["snapshot"]["id"])
    as_ingest_writes = images(snapshot)
    assert any(debug_id for _, debug_id, *_ in as_ingest_writes)  # ids the format carried
    SnapshotImage.objects.filter(snapshot=snapshot).delete()
    migrate()
    assert images(snapshot) == as_ingest_writes
