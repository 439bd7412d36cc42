"""Receiving and processing: the upload row is `done` exactly when its data is stored, a repeat
is found by the INSERT itself (inside a transaction and outside one), and the command door
processes right there whatever the task backend."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from django.conf import settings
from django.core.management import call_command

from memdash.allocations.models import AllocationRow, Snapshot
from memdash.allocations.writes import snapshots as allocation_services
from memdash.core.models import Build, Device
from memdash.ingest.models import Upload
from tests.samples import spec_example


def stored_files() -> list[Path]:
    return [p for p in Path(settings.MEDIA_ROOT).rglob("*") if p.is_file()]


@pytest.mark.django_db
def test_a_failure_while_storing_leaves_the_upload_failed_and_nothing_stored(upload, monkeypatch):
    def broken(*args: object) -> None:  # a bug of ours, after the rows were written
        raise RuntimeError("boom")

    monkeypatch.setattr(allocation_services, "_store_aggregates", broken)
    response = upload(spec_example())
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "failed" and body["error"] == "internal error"
    failed = Upload.objects.get(pk=body["id"])
    assert (failed.status, failed.error_status, failed.counts, failed.result_id) == (
        Upload.FAILED, 500, {}, None,
    )  # fmt: skip
    assert failed.started_at is not None and failed.finished_at is not None
    for model in (Snapshot, AllocationRow, Build, Device):
        assert model.objects.count() == 0, model


@pytest.mark.django_db(transaction=True)
def test_a_repeat_outside_a_transaction_is_the_same_upload_and_keeps_one_file(upload):
    first = upload(spec_example())
    again = upload(spec_example())
    assert (first.status_code, again.status_code) == (202, 200)
    assert again.json()["id"] == first.json()["id"] and again.json()["duplicate"] is True
    assert again.json()["app"] == "com.example.chat"
    assert len(stored_files()) == 1
    assert Snapshot.objects.count() == 1


@pytest.mark.django_db
def test_a_repeat_inside_a_transaction_keeps_one_file(upload):
    upload(spec_example())
    assert upload(spec_example()).status_code == 200
    assert len(stored_files()) == 1


@pytest.mark.django_db
def test_the_api_with_a_queue_leaves_the_upload_queued(database_tasks, upload, settings):
    body = upload(spec_example()).json()
    queued = Upload.objects.get(pk=body["id"])
    assert (body["status"], queued.status, queued.started_at) == ("queued", Upload.QUEUED, None)
    assert Snapshot.objects.count() == 0


@pytest.mark.django_db
def test_the_command_processes_right_there_with_a_queue_too(
    database_tasks, tmp_path, app, settings
):
    path = tmp_path / "run.json"
    path.write_bytes(orjson.dumps(spec_example()))
    call_command("import_snapshot", str(path), app=app.bundle_id)
    done = Upload.objects.get()
    assert done.status == Upload.DONE and done.source == Upload.COMMAND
    assert Snapshot.objects.get().pk == done.result_id
    # Failed on our side, then the same file again: processed again, right there.
    allocation_services.delete_snapshot(Snapshot.objects.get())
    Upload.objects.update(status=Upload.FAILED, error="internal error", error_status=500)
    call_command("import_snapshot", str(path), app=app.bundle_id)
    again = Upload.objects.get()
    assert (again.status, again.error, again.error_status) == (Upload.DONE, "", None)
    assert Snapshot.objects.get().pk == again.result_id
