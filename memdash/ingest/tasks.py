"""The task of an upload: read the stored body within the decompression cap, check that parsing
it fits a worker's memory (`MEMDASH_MAX_PARSE_MEMORY_BYTES`: `formats.check_parse`), detect its
format, and let the format's handler validate and store it, in one transaction with the upload's
own outcome, so that an upload is `done` exactly when its data is stored and a refused or failed
one leaves no rows behind.

The embedded (immediate) backend has the door call `process_upload` with the upload it has just
stored; a worker of a real queue runs `process_upload_task` with the upload's id.

Exactly once: an upload is processed by whoever claims it (`Upload.claim`: one UPDATE from
`queued` to `processing` that only one worker wins, with a lease of
`MEMDASH_UPLOAD_LEASE_SECONDS`; the loser does nothing), and its outcome is written only by the
claim's holder (`Upload.finish`, `reject`, `fail`), in the transaction of its data: a worker
that lost its claim rolls back and stores nothing. A worker killed
mid-ingest leaves no rows (its transaction dies with it) and a lease that runs out;
`requeue_stale` queues such uploads again, on worker passes and uploads (a look every few
seconds in a process: `requeue_stale_in_passing`) and by `manage.py requeue_uploads`. So does a
database that fails under a live worker (a node of a Citus cluster restarted mid-ingest): the
upload is left to its lease, not marked failed. The result tables say it too: an upload makes
one snapshot.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from functools import partial
from typing import BinaryIO, cast

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.tasks import task
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from memdash.alerts.tasks import queue_evaluation
from memdash.allocations.writes.partitions import ensure_partitions
from memdash.core.logic import pacing
from memdash.core.logic.errors import UploadRefused
from memdash.core.logic.json_keys import refuse_duplicate_keys
from memdash.core.logic.reading import JSON_WHITESPACE, read_content
from memdash.core.writes import table_statistics, transactions, uploads
from memdash.ingest.models import Upload
from memdash.ingest.writes import formats
from memdash.symbols import tasks as symbols_tasks

log = logging.getLogger(__name__)


class ClaimLost(Exception):
    """Another worker claimed the upload meanwhile (this one's lease had run out)."""


def requeue_stale(limit: int = 100) -> list[int]:
    """Queue again (`Upload.requeue_stale`) and enqueue, once committed, the uploads of workers
    taken for dead. Returns their ids."""
    requeued = Upload.requeue_stale(limit)
    for pk in requeued:
        log.warning("upload %s: its worker's lease ran out; queued again", pk)
        transaction.on_commit(partial(process_upload_task.enqueue, pk))
    return requeued


# A pass looks for uploads of dead workers at most this often in a process: a lease runs for
# minutes (`MEMDASH_UPLOAD_LEASE_SECONDS`), so a look seconds later finds the same ones, and at
# a hundred uploads a second the look on each took a tenth of a web process's time.
REQUEUE_EVERY_SECONDS = 5.0
# A claim the database cancelled to break a deadlock, tried again at once.
CLAIM_TRIES = transactions.DEADLOCK_TRIES
CLAIM_AGAIN_SECONDS = 5.0  # a claim the database could not take, its task queued again after
TASK_TABLE = DBTaskResult._meta.db_table  # the database queue's (MEMDASH_TASKS=database)


def requeue_stale_in_passing() -> None:
    """`requeue_stale`, as a pass (an upload received, a worker's task) does it: unless this
    process looked within `REQUEUE_EVERY_SECONDS`."""
    if pacing.due("requeue_stale", REQUEUE_EVERY_SECONDS):
        requeue_stale()
    symbols_tasks.requeue_stale_in_passing()  # and debug files' (paced alike)


@task()
def process_upload_task(upload_id: int) -> str:
    """A worker's pass: the upload is processed if this worker wins its claim (one that does not,
    or finds it finished, does nothing), then uploads of dead workers are queued again."""
    upload = Upload.objects.select_related("app").get(pk=upload_id)
    if upload.status == Upload.QUEUED:
        try:
            process_upload(upload)
        except (OperationalError, InterfaceError):
            # Its claim could not be written (a node of a Citus cluster down): still queued,
            # so no lease would bring it back. Its task is queued again, a moment later, by a
            # queue that can wait (a worker's; the embedded one answers the error).
            if not process_upload_task.get_backend().supports_defer:
                raise
            log.warning("upload %s: could not claim it; tried again in %s s", upload.pk,
                        CLAIM_AGAIN_SECONDS, exc_info=True)  # fmt: skip
            later = timezone.now() + timedelta(seconds=CLAIM_AGAIN_SECONDS)
            process_upload_task.using(run_after=later).enqueue(upload.pk)
            return upload.status
    requeue_stale_in_passing()
    # the queue's statistics, or the next claim of every worker sorts every queued task
    table_statistics.analyze_when_changed(TASK_TABLE)
    return upload.status


def _claim(upload: Upload) -> bool:
    """`Upload.claim`, tried again when the database broke a deadlock by cancelling it: on Citus
    writes of reference tables (the uploads, builds, apps) lock each table's shard in the order
    a transaction writes them, so a claim can meet an upload being stored the other way round."""
    return transactions.retried_on_deadlock(upload.claim, CLAIM_TRIES)


def _release(upload: Upload) -> bool:
    """`Upload.release` after a deadlock cancelled the upload's store, tried again when its
    own write meets one too (on Citus the store's writes of reference tables and the release's
    of the upload can lock their copies in the other order): else the upload would wait for
    its lease to run out (seen in bench/citus.py: two uploads of 310, half an hour)."""
    return transactions.retried_on_deadlock(upload.release, CLAIM_TRIES)


def process_upload(
    upload: Upload,
    progress: uploads.Progress = uploads.no_progress,
    content: list[bytes] | None = None,
) -> Upload:
    """Parse, validate and store one upload; never raises for bad content. `content`: the
    pieces of its decompressed content, when the door that runs it here has read them already
    (else it is read from the stored body); taken (the list is emptied), so that nothing else
    holds them once the parse is done.

    A queued upload is claimed first (pages show it `processing` while a long one runs); when
    another worker wins the claim, nothing is done and the upload is returned as it now is. One
    already `processing` was claimed by the caller (the door that runs it right here marks it
    so when it stores it or takes it back); a finished one is returned as it is."""
    if upload.is_finished:
        return upload
    if upload.status == Upload.QUEUED and not _claim(upload):
        upload.refresh_from_db()
        return upload
    try:
        progress("read", 0.0)
        raw = b"".join(content) if content else _read(upload)
        if content:
            content.clear()
        formats.check_parse(raw)  # what parsing it would cost, told before parsing (413)
        progress("parse", 0.0)
        # A reader takes no document that names a key twice in one object (it checks as it
        # reads, a part at a time); the generic way refuses such a document, with its path.
        found = formats.read_directly(raw)
        if found is None:
            if raw.lstrip(JSON_WHITESPACE)[:1] in (b"{", b"["):
                refuse_duplicate_keys(raw)
            doc = formats.parse_json(raw)
            handler = formats.detect(raw, doc)
        else:  # read whole into `doc`, which is all its handler takes: free the bytes now
            (handler, doc), raw = found, b""
        upload.format = handler.name
        ensure_partitions()  # before the upload's transaction: making one locks its table
        with transaction.atomic():
            # Lost in a crash, the upload is still `processing`, its lease runs out and it is
            # processed again: its data need not wait for the disk (the receipt did).
            transactions.commit_without_waiting_for_the_disk()
            result = handler.process(raw, doc, meta_for(upload), progress)
            if not upload.finish(result):
                raise ClaimLost
            queue_evaluation(upload.app_id)  # the app's alert rules, once this commits
            progress("commit", 0.0)  # and what runs once it commits (immediate tasks)
        progress("commit", 1.0)
    except ClaimLost:
        _lost(upload)
    except UploadRefused as exc:
        if not upload.reject(exc):
            _lost(upload)
    except (OperationalError, InterfaceError) as error:
        # The database cancelled the transaction (a deadlock), or it or a node of a Citus
        # cluster could not be reached or gave up midway (a restart, a failover): nothing of
        # it is stored, and the upload is not at fault. After a deadlock it is queued again at
        # once; otherwise it stays `processing` and is queued again when its lease runs out
        # (the database may not even take a `failed` now).
        if transactions.is_deadlock(error) and _release(upload):
            log.warning("upload %s: a deadlock cancelled it; queued again", upload.pk)
            transaction.on_commit(partial(process_upload_task.enqueue, upload.pk))
        else:
            log.warning("upload %s: the database failed under it; queued again after its lease",
                        upload.pk, exc_info=True)  # fmt: skip
    except Exception:  # a bug of ours, not the uploader's: keep the upload, say so, log it
        if upload.fail():
            log.exception("upload %s failed", upload.pk)
        else:  # the worker that took it over stored it (this one then broke a constraint)
            _lost(upload)
    return upload


def _read(upload: Upload) -> bytes:
    with upload.file.open("rb") as stream:  # a FieldFile: its file's read and seek
        return read_content(
            cast("BinaryIO", stream), settings.MEMDASH_MAX_DECOMPRESSED_BYTES,
            formats.content_cap,  # the budget, counted while reading, before any parser
        )  # fmt: skip


def _lost(upload: Upload) -> None:
    log.warning("upload %s: another worker claimed it meanwhile; stored nothing", upload.pk)
    upload.refresh_from_db()


def meta_for(upload: Upload) -> uploads.UploadMeta:
    fields = upload.fields or {}
    return uploads.UploadMeta(
        app=upload.app,
        received_at=upload.created_at,
        upload_id=upload.pk,
        **{name: fields.get(name, "") for name in formats.META_FIELDS},
    )
