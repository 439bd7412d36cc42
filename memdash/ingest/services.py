"""The one receiving service behind the three doors (API, page, command).

`receive_upload` streams the body to storage with a size cap while hashing it, answers a repeat
of the same bytes with the same upload, and queues the work for `processing.process_upload`.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from collections.abc import Iterable
from typing import Any

import orjson
from django.conf import settings
from django.core.files import File
from django.db import IntegrityError, transaction
from django.tasks import task_backends
from django.tasks.backends.immediate import ImmediateBackend
from django.utils import timezone

from memdash.core import uploads
from memdash.core.errors import InvalidUpload, UploadRefused
from memdash.core.models import App, IngestKey
from memdash.ingest.models import Upload
from memdash.ingest.processing import META_FIELDS, process_upload
from memdash.ingest.reading import copy_limited
from memdash.ingest.tasks import process_upload_task

log = logging.getLogger(__name__)


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
    app: App, error: UploadRefused, *, key=None, user=None, source=Upload.API, filename=""
) -> Upload:
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
    user=None,
    source: str = Upload.API,
    filename: str = "",
    run: bool = True,
) -> tuple[Upload, bool]:
    """Store the body and queue its processing. Returns (upload, created); the same bytes with
    the same fields give the existing upload back, never a second snapshot."""
    with tempfile.TemporaryFile() as spool:
        try:
            fields = clean_fields(fields or {})
            received = copy_limited(chunks, spool, settings.MEMDASH_MAX_BODY_BYTES)
        except UploadRefused as exc:
            return record_refused(
                app, exc, key=key, user=user, source=source, filename=filename
            ), True
        ikey = idempotency_key(received.sha256, fields)
        existing = Upload.objects.filter(app=app, idempotency_key=ikey).first()
        if existing is not None:
            if run and take_back_failed(existing):
                enqueue(existing)
            return existing, False
        spool.seek(0)
        upload = Upload(
            app=app, key=key, user=user, source=source, filename=filename[:255],
            size=received.size, sha256=received.sha256, idempotency_key=ikey, fields=fields,
        )  # fmt: skip
        upload.file.save(f"{received.sha256}.bin", File(spool), save=False)
        try:
            with transaction.atomic():
                upload.save()
        except IntegrityError:  # the same bytes arrived at the same moment through another door
            upload.file.delete(save=False)
            return Upload.objects.get(app=app, idempotency_key=ikey), False
    if run:
        enqueue(upload)
    return upload, True


def take_back_failed(upload: Upload) -> bool:
    """Queue a failed upload again. It failed on our side (a bug since fixed, a lost database),
    not for its content, so sending the same bytes again is how a device retries. Only a
    failed one is taken back, so two doors retrying at once process it once."""
    taken = Upload.objects.filter(pk=upload.pk, status=Upload.FAILED).update(
        status=Upload.QUEUED, error="", error_path="", error_status=None, finished_at=None
    )
    if taken:
        upload.refresh_from_db()
    return bool(taken)


def enqueue(upload: Upload) -> None:
    """Queue the processing. The embedded default runs it right away in this process; a real
    queue gets it once the upload row is committed, so a worker on another machine sees it."""
    if isinstance(task_backends["default"], ImmediateBackend):
        process_upload_task.enqueue(upload.pk)
        upload.refresh_from_db()
    else:
        transaction.on_commit(lambda: process_upload_task.enqueue(upload.pk))


def import_file(
    app: App, path: str, *, fields: dict | None = None, key=None, user=None,
    progress: uploads.Progress = uploads.no_progress,
) -> tuple[Upload, bool]:  # fmt: skip
    """The command's door: the same receive and process, run here with progress shown."""
    with open(path, "rb") as stream:
        upload, created = receive_upload(
            app, iter(lambda: stream.read(1024 * 1024), b""), fields=fields, key=key,
            user=user, source=Upload.COMMAND, filename=path.rsplit("/", 1)[-1], run=False,
        )  # fmt: skip
    if (created and not upload.is_finished) or (not created and take_back_failed(upload)):
        upload = process_upload(upload.pk, progress)
    return upload, created
