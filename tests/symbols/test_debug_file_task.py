"""Debug files are processed by a task, as uploads are: with a worker queue the request only
stores the body and answers 202 with its status URL; the worker unpacks, checks and keeps the
objects, and the status URL then answers them. Claimed once: a second run does nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memdash.core.writes import apps as core_services
from memdash.symbols.models import DebugFile, DebugFileUpload, SymbolicationJob
from memdash.symbols.tasks import process_debug_files_task, requeue_stale
from memdash.symbols.writes import (
    ClaimLost,
    process_debug_files,
    receive_debug_files,
    store_debug_files,
)
from tests.symbols.helpers import DSYM_ZIP

pytestmark = pytest.mark.django_db


def test_the_request_stores_the_body_and_the_worker_does_the_rest(
    database_tasks,
    client,
    app,
    ingest_secret,
    settings,
    django_capture_on_commit_callbacks,
    api_client,
):
    with django_capture_on_commit_callbacks(execute=True) as queued:
        answer = client.post(
            f"/api/v1/apps/{app.pk}/debug-files?filename=Chat.dSYM.zip",
            data=DSYM_ZIP.read_bytes(),
            content_type="application/octet-stream",
            HTTP_AUTHORIZATION=f"Bearer {ingest_secret}",
        )
    assert answer.status_code == 202, answer.content
    body = answer.json()
    assert body["status"] == "queued" and answer["Location"] == body["url"]
    assert body["url"] == f"/api/v1/apps/{app.pk}/debug-files/uploads/{body['id']}"
    assert len(queued) == 1  # the task, once the upload is committed
    assert not DebugFile.objects.exists()  # nothing unpacked or read in the request
    upload = DebugFileUpload.objects.get(pk=body["id"])
    assert upload.size == DSYM_ZIP.stat().st_size and upload.file

    status = client.get(body["url"], HTTP_AUTHORIZATION=f"Bearer {ingest_secret}")
    assert status.json()["status"] == "queued"

    with django_capture_on_commit_callbacks(execute=True):
        assert process_debug_files_task.call(upload.pk) == "done"
    done = api_client.get(body["url"]).json()  # a member's token or session reads it too
    assert done["status"] == "done"
    assert sorted(o["arch"] for o in done["objects"]) == ["arm64", "x86_64"]
    assert DebugFile.objects.filter(app=app).count() == 2
    upload.refresh_from_db()
    assert not upload.file  # the body goes once its objects are kept

    # Run again (a task enqueued twice): it finds the upload finished and writes nothing.
    with CaptureQueriesContext(connection) as queries:
        assert process_debug_files(upload).status == "done"
    assert not [q for q in queries.captured_queries if q["sql"].startswith("UPDATE")]


def test_another_keys_upload_is_not_found(client, app, ingest_secret):
    answer = client.post(
        f"/api/v1/apps/{app.pk}/debug-files?filename=Chat.dSYM.zip",
        data=DSYM_ZIP.read_bytes(),
        content_type="application/octet-stream",
        HTTP_AUTHORIZATION=f"Bearer {ingest_secret}",
    )
    other = core_services.create_ingest_key(app, "other")[1]
    status = client.get(answer.json()["url"], HTTP_AUTHORIZATION=f"Bearer {other}")
    assert status.status_code == 404


def test_a_claim_holds_a_lease_and_a_dead_workers_upload_is_queued_again_once(
    database_tasks, app, settings
):
    settings.MEMDASH_UPLOAD_LEASE_SECONDS = 90
    upload = receive_debug_files(app, [DSYM_ZIP.read_bytes()], filename="Chat.dSYM.zip")
    assert upload.claim()
    stored = DebugFileUpload.objects.get(pk=upload.pk)
    assert stored.lease_until - stored.started_at == timedelta(seconds=90)
    assert requeue_stale() == []  # its lease still runs
    past = timezone.now() - timedelta(seconds=1)
    DebugFileUpload.objects.filter(pk=upload.pk).update(lease_until=past)  # the worker died
    assert requeue_stale() == [upload.pk]
    assert requeue_stale() == []  # once
    again = DebugFileUpload.objects.get(pk=upload.pk)
    assert (again.status, again.lease_until, again.attempts) == ("queued", None, 1)
    # The dead worker's claim is no longer its own: it can write no outcome.
    assert not upload.finish({"objects": []})
    assert process_debug_files(again).status == "done"
    assert (again.attempts, again.lease_until) == (2, None)


def test_a_worker_whose_claim_was_lost_keeps_nothing(app):
    with pytest.raises(ClaimLost):
        store_debug_files(app, DSYM_ZIP, outcome=lambda result: False)
    assert not DebugFile.objects.exists()
    assert not SymbolicationJob.objects.exists()


@pytest.mark.parametrize("app_id, upload_id", [(2**63, 1), (1, 2**63), (2**64, 2**64)])
def test_ids_past_the_widest_column_are_not_found(client, ingest_secret, app_id, upload_id):
    answer = client.get(
        f"/api/v1/apps/{app_id}/debug-files/uploads/{upload_id}",
        HTTP_AUTHORIZATION=f"Bearer {ingest_secret}",
    )
    assert answer.status_code == 404, answer.content
