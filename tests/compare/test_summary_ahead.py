"""A build's summary is made once its snapshot is stored, so the first comparison reads it
instead of making it in its request; a burst of uploads queues it once (issue 19)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django_tasks_db.models import DBTaskResult

from memdash.allocations.models import Snapshot
from memdash.allocations.writes.snapshots import store_snapshot_document
from memdash.compare.models import BuildSamples
from memdash.compare.reads.builds import stored_summary
from memdash.compare.tasks import refresh_build_summary
from memdash.core.models import Build
from memdash.core.writes.uploads import UploadMeta
from tests.compare.helpers import document, row, store

pytestmark = pytest.mark.django_db


def snapshot_ids(build: Build) -> list[int]:
    return sorted(Snapshot.objects.filter(build=build).values_list("pk", flat=True))


def test_the_summary_follows_each_stored_snapshot(upload, app, django_capture_on_commit_callbacks):
    for i, size in enumerate((100, 300)):
        with django_capture_on_commit_callbacks(execute=True):
            store(upload, document([row("Cache", 2, None, 1, size)], device=f"D-{i}"))
        build = Build.objects.get(app=app)
        # made from exactly the snapshots stored so far (the embedded default runs it at once)
        summary = stored_summary(build, snapshot_ids(build))
        assert summary is not None and summary.names == ["Cache"]
    assert BuildSamples.objects.count() == 1


def stored_directly(app, doc: dict) -> None:
    """Stored as a worker stores it (through the database backend an upload is only queued)."""
    store_snapshot_document(doc, UploadMeta(app=app, received_at=datetime.now(UTC)))


def test_a_burst_of_uploads_queues_one_deferred_summary(
    app, database_tasks, django_capture_on_commit_callbacks
):
    for i in range(3):
        with django_capture_on_commit_callbacks(execute=True):
            stored_directly(
                app, document([row("Cache", 2, None, 1, 100 * (i + 1))], device=f"D-{i}")
            )
    queued = DBTaskResult.objects.filter(task_path__endswith="refresh_build_summary")
    assert queued.count() == 1
    assert queued.get().run_after is not None  # later, so the burst is in it
    assert not BuildSamples.objects.exists()
    build = Build.objects.get(app=app)
    refresh_build_summary.call(build.pk)
    assert stored_summary(build, snapshot_ids(build)) is not None
    # once it started, the next stored snapshot queues another
    with django_capture_on_commit_callbacks(execute=True):
        stored_directly(app, document([row("Cache", 2, None, 1, 900)], device="D-9"))
    assert queued.count() == 2
