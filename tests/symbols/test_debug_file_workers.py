"""Exactly once for debug files, with real worker processes on the test run's database (SQLite,
or PostgreSQL with DATABASE_URL), as for uploads (tests/ingest/test_real_workers.py): a worker
killed while it keeps an upload's objects leaves none of them stored and the upload
`processing`; once its lease has run out the upload is queued again and processed once.

The upload is a zip of Breakpad files made here from the hand-written
tests/data/symbols/chat_cache.handwritten.sym, each with a MODULE id of its own (so each is an
object of its own): enough of them that keeping them takes the worker a while.
"""

from __future__ import annotations

import io
import time
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memdash.symbols.models import DebugFileUpload
from memdash.symbols.tasks import process_debug_files_task
from memdash.symbols.writes import receive_debug_files
from tests.ingest.live_database import LiveDatabase, publish, wait_for
from tests.symbols.helpers import BREAKPAD

pytestmark = pytest.mark.slow  # worker processes

OBJECTS = 600
LEASE = 4  # seconds


def breakpad_zip(count: int) -> bytes:
    text = BREAKPAD.read_text()
    module_id = "8FB83F1EB03EBA1D1F81CDF2F040A42C0"
    assert module_id in text
    body = io.BytesIO()
    with zipfile.ZipFile(body, "w", zipfile.ZIP_DEFLATED) as archive:
        for i in range(count):
            own = f"{i:08X}" + module_id[8:]
            archive.writestr(f"chat_cache_{i}.sym", text.replace(module_id, own))
    return body.getvalue()


def upload_row(live: LiveDatabase, upload_id: int) -> tuple[str, int]:
    sql = 'SELECT status, attempts FROM "symbols_debugfileupload" WHERE id = %s'
    return live.query(sql, upload_id)[0]


def lease_until(live: LiveDatabase, upload_id: int) -> datetime:
    sql = 'SELECT lease_until FROM "symbols_debugfileupload" WHERE id = %s'
    value = live.query(sql, upload_id)[0][0]
    if isinstance(value, str):  # SQLite keeps UTC as text
        value = datetime.fromisoformat(value).replace(tzinfo=UTC)
    return value


def keeping(live: LiveDatabase, upload_id: int, store: Path) -> bool:
    """The worker is inside the transaction that keeps the objects: it has moved files into
    the app's store (which it does in that transaction, before each object's row)."""
    if upload_row(live, upload_id)[0] != DebugFileUpload.PROCESSING:
        return False
    return store.is_dir() and any(store.iterdir())


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_job_keeps_nothing_and_the_upload_is_processed_once(
    database_tasks, app, tmp_path, settings
):
    upload = receive_debug_files(app, [breakpad_zip(OBJECTS)], filename="symbols.zip")
    process_debug_files_task.enqueue(upload.pk)  # queued for a worker, as the door does
    live = publish(tmp_path, MEMDASH_UPLOAD_LEASE_SECONDS=str(LEASE))
    store = Path(settings.MEDIA_ROOT) / "debug-files" / str(app.pk)

    worker = live.manage("db_worker", "--no-reload", "--no-startup-delay", "--interval", "0.1")
    wait_for(lambda: keeping(live, upload.pk, store), 60, "the worker to keep objects")
    worker.kill()

    # Nothing of the upload is stored: its transaction died with the worker.
    assert upload_row(live, upload.pk) == ("processing", 1)
    assert live.count("symbols_debugfile") == 0
    assert live.count("symbols_symbolicationjob") == 0

    # Its lease runs out; then it is queued again (as every upload and worker pass would).
    expires = lease_until(live, upload.pk)
    time.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()) + 0.2)
    assert f"queued again: debug files upload {upload.pk}\n" in live.run("requeue_uploads")
    assert upload_row(live, upload.pk) == ("queued", 1)

    # A worker processes it, once, whole: every object kept once, one symbolication job.
    live.run("db_worker", "--batch", "--no-reload", "--no-startup-delay", timeout=240)
    assert upload_row(live, upload.pk) == ("done", 2)
    assert live.count("symbols_debugfile") == OBJECTS
    assert live.count("symbols_symbolicationjob") == 1
    assert "0 debug-file uploads queued again" in live.run("requeue_uploads")
