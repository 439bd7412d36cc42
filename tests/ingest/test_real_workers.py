"""Exactly once with real worker processes on the test run's database (SQLite, or PostgreSQL
with DATABASE_URL): two workers racing for one upload store it once, and a worker killed
mid-ingest leaves no rows; once its lease has run out the upload is queued again and stored
once."""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import UTC, datetime

import orjson
import pytest

from memdash.ingest import tasks
from memdash.ingest.models import Upload
from memdash.ingest.writes import uploads as services
from tests.ingest.live_database import ROOT, LiveDatabase, publish, wait_for
from tests.samples import spec_example

sys.path.insert(0, str(ROOT / "bench"))
from generate import Sizes, encode_gzip, snapshot_document  # noqa: E402

pytestmark = pytest.mark.slow  # worker processes

# A worker that claims the upload, says so, and waits for the word to process it.
RACER = """
import sys
from memdash.ingest.tasks import process_upload_task
print("ready", flush=True)
sys.stdin.readline()
print(process_upload_task.call({upload_id}))
"""
# Big enough that a worker is killed well inside its transaction, small enough to be quick:
# generated rows are unique by (category, stack, thread, generation), so each is one row.
ROWS = 150_000
LEASE = 4  # seconds


def upload_row(live: LiveDatabase, upload_id: int) -> tuple[str, int, int | None]:
    sql = 'SELECT status, attempts, result_id FROM "ingest_upload" WHERE id = %s'
    return live.query(sql, upload_id)[0]


def snapshots_of(live: LiveDatabase, upload_id: int) -> list[tuple[int, int]]:
    sql = 'SELECT id, row_count FROM "snapshots_snapshot" WHERE upload_id = %s'
    return live.query(sql, upload_id)


@pytest.mark.django_db(transaction=True)
def test_two_workers_racing_for_one_upload_store_it_once(app, tmp_path):
    upload, _ = services.receive_upload(app, [orjson.dumps(spec_example())], run=False)
    live = publish(tmp_path)
    racers = [
        live.manage("shell", "-c", RACER.format(upload_id=upload.pk), stdin=subprocess.PIPE)
        for _ in range(2)
    ]
    wait_for(lambda: all("ready" in r.out.read_text() for r in racers), 60, "both workers")
    for racer in racers:  # both at once: each reads the upload queued and tries to claim it
        assert racer.process.stdin is not None
        racer.process.stdin.write("go\n")
        racer.process.stdin.flush()
    for racer in racers:
        assert racer.process.wait(60) == 0, racer.err.read_text()
        # The loser did nothing: it did not store and then lose, nor fail on the constraint.
        assert "claimed it meanwhile" not in racer.err.read_text()
        assert "failed" not in racer.err.read_text()

    # One claim (attempts 1), one snapshot, and it is the upload's result.
    status, attempts, result_id = upload_row(live, upload.pk)
    [(snapshot_id, row_count)] = snapshots_of(live, upload.pk)
    assert (status, attempts, result_id) == ("done", 1, snapshot_id)
    assert row_count == 3  # spec_example's three allocation rows
    assert live.count("snapshots_allocationrow") == 3


def mid_ingest(live: LiveDatabase, upload_id: int) -> bool:
    """The worker is inside the transaction that stores the upload, with rows written: on
    PostgreSQL its connection has started a COPY; on SQLite its transaction has spilled
    megabytes into the write-ahead log."""
    if upload_row(live, upload_id)[0] != Upload.PROCESSING:
        return False
    if live.file is None:
        copying = """SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database()
                     AND pid <> pg_backend_pid() AND query LIKE 'COPY %%'"""
        return live.query(copying)[0][0] > 0
    wal = live.file.with_name(live.file.name + "-wal")
    return wal.exists() and wal.stat().st_size > 4 * 1024 * 1024  # its cache holds 2 MB


def lease_until(live: LiveDatabase, upload_id: int) -> datetime:
    sql = 'SELECT lease_until FROM "ingest_upload" WHERE id = %s'
    value = live.query(sql, upload_id)[0][0]
    if isinstance(value, str):  # SQLite keeps UTC as text
        value = datetime.fromisoformat(value).replace(tzinfo=UTC)
    return value


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_ingest_leaves_no_rows_and_the_upload_is_stored_once(
    database_tasks, app, tmp_path, settings
):
    doc = snapshot_document(Sizes(rows=ROWS, nodes=30_000, categories=2_000))
    upload, _ = services.receive_upload(app, [encode_gzip(doc)], run=False)
    tasks.process_upload_task.enqueue(upload.pk)  # queued for a worker, as the API door does
    # SQLite's own cache size (2 MB), so that its writes show in the log as they are made.
    live = publish(tmp_path, MEMDASH_UPLOAD_LEASE_SECONDS=str(LEASE), MEMDASH_SQLITE_CACHE_MB="2")

    worker = live.manage("db_worker", "--no-reload", "--no-startup-delay", "--interval", "0.1")
    wait_for(lambda: mid_ingest(live, upload.pk), 60, "the worker to write rows")
    worker.kill()

    # Nothing of the upload is stored: its transaction died with the worker.
    assert upload_row(live, upload.pk)[:2] == ("processing", 1)
    for table in (
        "snapshots_snapshot", "snapshots_allocationrow", "snapshots_stacknode",
        "snapshots_frame", "snapshots_category", "core_build", "core_device",
    ):  # fmt: skip
        assert live.count(table) == 0, table

    # Its lease runs out; then it is queued again (as every upload and worker pass would).
    expires = lease_until(live, upload.pk)
    time.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()) + 0.2)
    assert f"queued again: upload {upload.pk}\n" in live.run("requeue_uploads")
    assert upload_row(live, upload.pk)[:2] == ("queued", 1)

    # A worker stores it, once, whole.
    live.run("db_worker", "--batch", "--no-reload", "--no-startup-delay")
    status, attempts, result_id = upload_row(live, upload.pk)
    [(snapshot_id, row_count)] = snapshots_of(live, upload.pk)
    assert (status, attempts, result_id) == ("done", 2, snapshot_id)
    assert row_count == ROWS and live.count("snapshots_allocationrow") == ROWS
    assert live.count("snapshots_snapshot") == 1 and live.count("core_build") == 1
