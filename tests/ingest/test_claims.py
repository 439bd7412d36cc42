"""Claims and leases, step by step in one process: the worker that loses the claim does nothing,
a worker whose lease ran out and was taken over stores nothing, stale leases are queued again by
every pass (an upload, a worker's task, the command, a re-send), and the result tables refuse a
second result of one upload. tests/ingest/test_real_workers.py does it with real processes."""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

import orjson
import psycopg
import pytest
from django.core.management import call_command
from django.db import IntegrityError, OperationalError, transaction
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from memdash.allocations.models import AllocationRow, Snapshot
from memdash.allocations.writes import snapshots as allocation_services
from memdash.cycles.models import CycleReport
from memdash.ingest import tasks
from memdash.ingest.models import Upload
from memdash.ingest.writes import uploads as services
from memdash.leaks.models import LeakReport
from tests.samples import retain_cycles_example, spec_example

LEAKS = Path(__file__).resolve().parents[1] / "data" / "leaks"
LOST = "another worker claimed it meanwhile"


def queued(app, doc=None) -> Upload:
    upload, created = services.receive_upload(app, [orjson.dumps(doc or spec_example())], run=False)
    assert created and upload.status == Upload.QUEUED
    return upload


def as_read(upload: Upload) -> Upload:
    """The upload as a worker reads it from the database."""
    return Upload.objects.select_related("app").get(pk=upload.pk)


def die(upload: Upload) -> None:
    """The worker holding the upload is killed: its lease runs out with nothing written."""
    Upload.objects.filter(pk=upload.pk).update(lease_until=timezone.now() - timedelta(seconds=1))


@pytest.mark.django_db
def test_the_worker_that_loses_the_claim_does_nothing(app, caplog):
    upload = queued(app)
    first, second = as_read(upload), as_read(upload)  # both read it queued
    assert tasks.process_upload(first).status == Upload.DONE
    with caplog.at_level(logging.WARNING, "memdash.ingest.tasks"):
        answer = tasks.process_upload(second)
    # The second's claim failed: it parsed and stored nothing, and answers the upload as it is.
    assert (answer.status, answer.attempts, answer.result_id) == (
        Upload.DONE, 1, Snapshot.objects.get().pk,
    )  # fmt: skip
    assert caplog.records == []
    assert AllocationRow.objects.count() == 3  # spec_example's three rows, once


@pytest.mark.django_db
def test_a_claim_holds_a_lease_of_the_setting(app, settings):
    settings.MEMDASH_UPLOAD_LEASE_SECONDS = 90
    upload = as_read(queued(app))
    assert upload.claim() is True
    stored = as_read(upload)
    assert (stored.status, stored.attempts) == (Upload.PROCESSING, 1)
    assert stored.lease_until - stored.started_at == timedelta(seconds=90)
    assert as_read(upload).claim() is False  # processing: nobody else claims it


@pytest.mark.django_db
def test_a_live_lease_is_left_alone_and_a_stale_one_queued_again(app, settings):
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    live, dead = queued(app), queued(app, spec_example(captured_at="2026-11-20T11:12:03+00:00"))
    assert live.claim() and dead.claim()
    die(dead)
    assert tasks.requeue_stale() == [dead.pk]
    assert as_read(live).status == Upload.PROCESSING
    again = as_read(dead)
    assert (again.status, again.lease_until, again.attempts) == (Upload.QUEUED, None, 1)
    assert tasks.requeue_stale() == []  # once


@pytest.mark.django_db
def test_a_worker_taken_over_after_its_lease_stores_nothing(app, caplog):
    upload = queued(app)
    slow = as_read(upload)
    assert slow.claim()  # a slow worker claims it ...
    die(upload)  # ... and outlives its lease: the upload is queued again and claimed anew
    assert tasks.requeue_stale() == [upload.pk]
    second = as_read(upload)
    assert second.claim() and second.attempts == 2

    # The slow worker ends first: its outcome is refused, its rows rolled back with it.
    with caplog.at_level(logging.WARNING, "memdash.ingest.tasks"):
        answer = tasks.process_upload(slow)
    assert (answer.status, answer.attempts) == (Upload.PROCESSING, 2)
    assert LOST in caplog.text
    assert Snapshot.objects.count() == 0 and AllocationRow.objects.count() == 0

    assert tasks.process_upload(second).status == Upload.DONE
    assert Snapshot.objects.get().upload_id == upload.pk


@pytest.mark.django_db
def test_a_database_failing_under_the_worker_leaves_the_upload_to_its_lease(
    app, caplog, monkeypatch
):
    """A node of the database lost mid-ingest (on Citus, a worker node restarted) surfaces as
    an OperationalError: the upload is not at fault, so it is not marked failed; it stays
    claimed, nothing of it stored, and its lease queues it again, to be stored once."""
    upload = queued(app)

    def node_lost(*args: object) -> None:  # after the rows were written, as a COPY's end
        raise OperationalError("connection to the remote node 127.0.0.1:9801 failed")

    with monkeypatch.context() as patched, caplog.at_level(logging.WARNING):
        patched.setattr(allocation_services, "_store_aggregates", node_lost)
        answer = tasks.process_upload(as_read(upload))
    held = as_read(upload)
    assert (answer.status, held.status, held.attempts, held.error) == (
        Upload.PROCESSING, Upload.PROCESSING, 1, "",
    )  # fmt: skip
    assert "the database failed under it" in caplog.text
    assert Snapshot.objects.count() == 0 and AllocationRow.objects.count() == 0

    die(upload)
    assert tasks.requeue_stale() == [upload.pk]
    assert tasks.process_upload(as_read(upload)).status == Upload.DONE
    assert Snapshot.objects.get().upload_id == upload.pk
    assert AllocationRow.objects.count() == 3  # spec_example's three rows, once


def deadlock() -> OperationalError:
    """As Django raises PostgreSQL's cancelling of a transaction to break a deadlock."""
    error = OperationalError("deadlock detected")
    error.__cause__ = psycopg.errors.DeadlockDetected("deadlock detected")
    return error


@pytest.mark.django_db
def test_an_upload_whose_store_a_deadlock_cancelled_is_queued_again_at_once(
    database_tasks, app, caplog, monkeypatch, settings, django_capture_on_commit_callbacks
):
    upload = queued(app)

    def cancelled(*args: object) -> None:
        raise deadlock()

    with monkeypatch.context() as patched, caplog.at_level(logging.WARNING):
        patched.setattr(allocation_services, "_store_aggregates", cancelled)
        with django_capture_on_commit_callbacks(execute=True):
            answer = tasks.process_upload(as_read(upload))
    assert "a deadlock cancelled it; queued again" in caplog.text
    again = as_read(upload)
    assert (answer.status, again.status, again.lease_until) == (Upload.QUEUED, Upload.QUEUED, None)
    (task,) = DBTaskResult.objects.filter(args_kwargs__args=[upload.pk])
    assert task.run_after.year == 9999  # django-tasks-db's "no time set": for the next worker
    assert Snapshot.objects.count() == 0
    assert tasks.process_upload(again).status == Upload.DONE  # the next claim stores it
    assert (as_read(upload).attempts, AllocationRow.objects.count()) == (2, 3)


@pytest.mark.django_db
def test_a_release_a_deadlock_cancelled_too_is_tried_again(
    database_tasks, app, monkeypatch, settings, django_capture_on_commit_callbacks
):
    """On Citus the release after a deadlock met one too (bench/citus.py): tried again, the
    upload is queued at once instead of waiting for its lease."""
    upload = queued(app)
    release, releases = Upload.release, []

    def cancelled(*args: object) -> None:
        raise deadlock()

    def release_cancelled_once(self: Upload) -> bool:
        releases.append(self.pk)
        if len(releases) == 1:
            raise deadlock()
        return release(self)

    monkeypatch.setattr(allocation_services, "_store_aggregates", cancelled)
    monkeypatch.setattr(Upload, "release", release_cancelled_once)
    with django_capture_on_commit_callbacks(execute=True):
        answer = tasks.process_upload(as_read(upload))
    assert releases == [upload.pk, upload.pk]
    again = as_read(upload)
    assert (answer.status, again.status, again.lease_until) == (Upload.QUEUED, Upload.QUEUED, None)
    assert DBTaskResult.objects.filter(args_kwargs__args=[upload.pk]).count() == 1


@pytest.mark.django_db
def test_a_claim_a_deadlock_cancelled_is_tried_again(app, monkeypatch):
    upload = queued(app)
    claim, tries = Upload.claim, []

    def cancelled_once(self: Upload) -> bool:
        tries.append(self.pk)
        if len(tries) == 1:
            raise deadlock()
        return claim(self)

    monkeypatch.setattr(Upload, "claim", cancelled_once)
    assert tasks.process_upload(as_read(upload)).status == Upload.DONE
    assert tries == [upload.pk, upload.pk] and as_read(upload).attempts == 1


@pytest.mark.django_db
def test_a_claim_the_database_could_not_take_is_tried_again_later(
    database_tasks, app, settings, monkeypatch
):
    """A node down: the claim fails, the upload is still queued (no lease would bring it back),
    so its task is queued again a few seconds later."""
    upload = queued(app)

    def node_down(self: Upload) -> bool:
        raise OperationalError("connection to the remote node 127.0.0.1:9801 failed")

    monkeypatch.setattr(Upload, "claim", node_down)
    before = timezone.now()
    assert tasks.process_upload_task.call(upload.pk) == Upload.QUEUED
    (later,) = DBTaskResult.objects.filter(args_kwargs__args=[upload.pk])
    assert later.run_after >= before + timedelta(seconds=tasks.CLAIM_AGAIN_SECONDS)


@pytest.mark.django_db
def test_a_worker_taken_over_that_ends_last_breaks_the_constraint_and_writes_nothing(app, caplog):
    upload = queued(app)
    slow = as_read(upload)
    assert slow.claim()
    die(upload)
    tasks.requeue_stale()
    second = as_read(upload)
    assert tasks.process_upload(second).status == Upload.DONE  # the new claim ends first

    with caplog.at_level(logging.WARNING, "memdash.ingest.tasks"):
        answer = tasks.process_upload(slow)  # its snapshot breaks snapshot_one_per_upload
    assert LOST in caplog.text and "failed" not in caplog.text
    done = as_read(upload)
    assert (answer.status, done.status, done.error, done.attempts) == ("done", "done", "", 2)
    assert Snapshot.objects.get().pk == done.result_id


@pytest.mark.django_db
def test_a_worker_pass_queues_stale_uploads_again(app, django_capture_on_commit_callbacks):
    stuck = queued(app, spec_example(captured_at="2026-11-20T11:12:03+00:00"))
    assert stuck.claim()
    die(stuck)
    other = queued(app)
    # The embedded backend runs the task of the upload queued again as soon as it is enqueued.
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.process_upload_task.call(other.pk) == Upload.DONE
    again = as_read(stuck)
    assert (again.status, again.attempts) == (Upload.DONE, 2)
    assert Snapshot.objects.count() == 2


@pytest.mark.django_db
def test_the_next_upload_queues_stale_uploads_again(
    app, upload, django_capture_on_commit_callbacks
):
    stuck = queued(app, spec_example(captured_at="2026-11-20T11:12:03+00:00"))
    assert stuck.claim()
    die(stuck)
    with django_capture_on_commit_callbacks(execute=True):
        assert upload(spec_example()).json()["status"] == "done"
    assert as_read(stuck).status == Upload.DONE
    assert Snapshot.objects.count() == 2


@pytest.mark.django_db
def test_passes_look_for_stale_uploads_every_few_seconds_in_a_process(app, monkeypatch):
    """A lease runs for minutes: a pass within `REQUEUE_EVERY_SECONDS` of the process's last
    look does not look again; the next one after it does."""
    tasks.requeue_stale_in_passing()  # this process's look: nothing stale yet
    stuck = queued(app)
    assert stuck.claim()
    die(stuck)
    tasks.requeue_stale_in_passing()
    assert as_read(stuck).status == Upload.PROCESSING  # looked a moment ago
    monkeypatch.setattr(tasks, "REQUEUE_EVERY_SECONDS", 0.0)
    tasks.requeue_stale_in_passing()
    assert as_read(stuck).status == Upload.QUEUED


@pytest.mark.django_db
def test_the_command_queues_stale_uploads_again(app, settings, capsys):
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    stuck = queued(app)
    assert stuck.claim()
    call_command("requeue_uploads")
    none = "0 debug-file uploads queued again\n"  # (tests/symbols/test_debug_file_workers.py)
    assert capsys.readouterr().out == "0 uploads queued again\n" + none  # its lease still runs
    die(stuck)
    call_command("requeue_uploads")
    expected = f"queued again: upload {stuck.pk}\n1 uploads queued again\n" + none
    assert capsys.readouterr().out == expected
    assert as_read(stuck).status == Upload.QUEUED


@pytest.mark.django_db
def test_a_resend_of_a_stuck_upload_processes_it_again_and_of_a_live_one_waits(app, upload):
    stuck = queued(app)
    assert stuck.claim()
    waiting = upload(spec_example())  # its worker still holds the lease: answered as it is
    assert (waiting.status_code, waiting.json()["status"]) == (200, "processing")
    assert Snapshot.objects.count() == 0
    die(stuck)
    again = upload(spec_example())
    assert (again.status_code, again.json()["id"], again.json()["status"]) == (
        200, stuck.pk, "done",
    )  # fmt: skip
    assert again.json()["duplicate"] is True
    assert as_read(stuck).attempts == 2 and Snapshot.objects.count() == 1


@pytest.mark.django_db
def test_the_result_tables_refuse_a_second_result_of_one_upload(upload):
    first = upload(spec_example()).json()
    second = upload(spec_example(captured_at="2026-11-20T11:12:03+00:00")).json()
    with pytest.raises(IntegrityError), transaction.atomic():
        Snapshot.objects.filter(pk=second["snapshot"]["id"]).update(upload_id=first["id"])

    cycles = [upload(retain_cycles_example(session=s)).json() for s in ("s-1", "s-2")]
    with pytest.raises(IntegrityError), transaction.atomic():
        CycleReport.objects.filter(upload_id=cycles[1]["id"]).update(upload_id=cycles[0]["id"])

    # A leak log holds several reports: one per position of the upload.
    text = (LEAKS / "lsan_multiple_leaks.txt").read_bytes()
    logs = [
        upload(text, content_type="text/plain", query=f"build_version={build}").json()
        for build in ("1.0", "2.0")  # other fields: another upload
    ]
    assert logs[0]["id"] != logs[1]["id"]
    report = LeakReport.objects.filter(upload_id=logs[1]["id"]).order_by("position").first()
    with pytest.raises(IntegrityError), transaction.atomic():
        LeakReport.objects.filter(pk=report.pk).update(upload_id=logs[0]["id"])


@pytest.mark.django_db
def test_the_doors_insert_a_deadlock_cancelled_is_tried_again(app, upload, monkeypatch):
    """On Citus the uploads are a reference table: the door's INSERT can meet a worker's claim
    or outcome the other way round (bench/citus.py: a quarter of 8 clients' requests answered
    500). Tried again, the upload is received once."""
    save, tries = Upload.save, []

    def cancelled_once(self: Upload, *args: object, **kwargs: object) -> None:
        tries.append(self.pk)
        if len(tries) == 1:
            raise deadlock()
        save(self, *args, **kwargs)

    monkeypatch.setattr(Upload, "save", cancelled_once)
    response = upload(spec_example())
    assert response.status_code in (200, 201, 202), response.content
    assert response.json()["status"] == "done"
    assert len(tries) >= 2 and tries[0] is None  # the first INSERT cancelled, then made
    assert Upload.objects.filter(app=app).count() == 1
