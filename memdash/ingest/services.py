"""The one receiving service behind the three doors (API, page, command).

`receive_upload` checks the upload's fields, streams the body to storage with a size cap while
hashing it, records the upload (the same bytes with the same fields are the same upload: the
existing one is answered), and has it processed by `tasks.process_upload`: right here on the
row just stored with the embedded immediate backend or for the command, else by a worker.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

import orjson
from django.conf import settings
from django.core.files import File
from django.db import IntegrityError, connection, transaction
from django.tasks import task_backends
from django.tasks.backends.immediate import ImmediateBackend
from django.utils import timezone

from memdash.core import uploads
from memdash.core.errors import InvalidUpload, UploadRefused
from memdash.core.models import App, IngestKey
from memdash.ingest import tasks
from memdash.ingest.formats import META_FIELDS
from memdash.ingest.models import Upload
from memdash.ingest.reading import copy_limited, read_chunks

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def clean_fields(raw: dict[str, Any]) -> dict[str, str]:
    """The upload's own fields (for formats that carry no app or build), as short strings."""
    fields = {k: str(raw[k])[:255] for k in META_FIELDS if raw.get(k) not in (None, "")}
    for name, value in fields.items():
        if "\x00" in value:  # the database cannot store it
            raise InvalidUpload("must not contain NUL characters", name)
    return fields


def idempotency_key(sha256: str, fields: dict[str, str]) -> str:
    return hashlib.sha256(orjson.dumps([sha256, fields], option=orjson.OPT_SORT_KEYS)).hexdigest()


def record_refused(
    app: App, error: UploadRefused, *, key: IngestKey | None = None, user: User | None = None,
    source: str = Upload.API, filename: str = "",
) -> Upload:  # fmt: skip
    """An upload refused before it was stored (too large): kept as rejected, without its body."""
    now = timezone.now()
    return Upload.objects.create(
        app=app, key=key, user=user, source=source, filename=filename[:255],
        status=Upload.REJECTED, error=error.message, error_path=error.path,
        error_status=error.status, started_at=now, finished_at=now,
    )  # fmt: skip


def receive_upload(
    app: App,
    chunks: Iterable[bytes],
    *,
    fields: dict[str, Any] | None = None,
    key: IngestKey | None = None,
    user: User | None = None,
    source: str = Upload.API,
    filename: str = "",
    run: bool = True,
    progress: uploads.Progress | None = None,
) -> tuple[Upload, bool]:
    """Store the body and have it processed. Returns (upload, created); the same bytes with
    the same fields give the existing upload back, never a second snapshot.

    With `progress`, the upload is processed here and now, reporting to it (the command).
    Otherwise `run` queues it (the embedded immediate backend runs it here and now), and
    `run=False` leaves it queued for the caller's own `tasks.process_upload`."""
    immediate = isinstance(task_backends["default"], ImmediateBackend)
    here = progress is not None or (run and immediate)
    with tempfile.TemporaryFile() as spool:
        try:
            fields = clean_fields(fields or {})
            received = copy_limited(chunks, spool, settings.MEMDASH_MAX_BODY_BYTES)
        except UploadRefused as exc:
            refused = record_refused(app, exc, key=key, user=user, source=source, filename=filename)
            return refused, True
        now = timezone.now()
        upload = Upload(
            app=app, key=key, user=user, source=source, filename=filename[:255],
            size=received.size, sha256=received.sha256, fields=fields, created_at=now,
            idempotency_key=idempotency_key(received.sha256, fields),
        )  # fmt: skip
        if here:  # marked as running from its first write: no UPDATE to `processing` after
            upload.status, upload.started_at = Upload.PROCESSING, now
        spool.seek(0)
        upload.file.save(f"{received.sha256}.bin", File(spool), save=False)
        existing = _insert(upload)
    if existing is not None:
        upload.file.delete(save=False)
        if (run or here) and take_back_failed(existing, here):
            _process(existing, here, progress)
        return existing, False
    if run or here:
        _process(upload, here, progress)
    return upload, True


def _insert(upload: Upload) -> Upload | None:
    """INSERT the upload, or answer the one already stored with its idempotency key (checked
    by the INSERT itself: a first upload, the common case, costs no lookup). A single INSERT
    is its own transaction; only within a caller's transaction is a savepoint needed, so that
    the failed INSERT leaves that transaction usable."""
    guard: AbstractContextManager[Any] = (
        transaction.atomic() if connection.in_atomic_block else nullcontext()
    )
    try:
        with guard:
            upload.save(force_insert=True)
    except IntegrityError:
        existing = Upload.objects.filter(
            app=upload.app, idempotency_key=upload.idempotency_key
        ).first()
        if existing is None:  # another constraint than the upload's uniqueness
            raise
        existing.app = upload.app
        return existing
    return None


def take_back_failed(upload: Upload, here: bool) -> bool:
    """Have a failed upload processed again (`here`: marked as running at once, else queued).
    It failed on our side (a bug since fixed, a lost database), not for its content, so sending
    the same bytes again is how a device retries. Only a failed one is taken back, so two doors
    retrying at once process it once."""
    again: dict[str, Any] = {
        "status": Upload.QUEUED, "error": "", "error_path": "", "error_status": None,
        "finished_at": None,
    }  # fmt: skip
    if here:
        again.update(status=Upload.PROCESSING, started_at=timezone.now())
    if not Upload.objects.filter(pk=upload.pk, status=Upload.FAILED).update(**again):
        return False
    for name, value in again.items():
        setattr(upload, name, value)
    return True


def _process(upload: Upload, here: bool, progress: uploads.Progress | None) -> None:
    """Run the task here, on this very row, or queue it once the row is committed (a worker
    on another machine must see it)."""
    if here:
        tasks.process_upload(upload, progress or uploads.no_progress)
    else:
        transaction.on_commit(lambda: tasks.process_upload_task.enqueue(upload.pk))


def import_file(
    app: App, path: str, *, fields: dict[str, Any] | None = None, key: IngestKey | None = None,
    user: User | None = None, progress: uploads.Progress = uploads.no_progress,
) -> tuple[Upload, bool]:  # fmt: skip
    """The command's door: the same receive, processed here with progress shown."""
    with open(path, "rb") as stream:
        return receive_upload(
            app, read_chunks(stream), fields=fields, key=key, user=user, source=Upload.COMMAND,
            filename=path.rsplit("/", 1)[-1], progress=progress,
        )  # fmt: skip
