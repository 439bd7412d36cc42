"""The one receiving service behind the three doors (API, page, command).

`receive_upload` checks the upload's fields, streams the body to storage with a size cap while
hashing it, records the upload (the same content with the same fields, or the same client
`Idempotency-Key`, is the same upload: the existing one is answered), and has it processed by
`tasks.process_upload`: right here on the row just stored with the embedded immediate backend
or for the command, else by a worker.

The content's identity is its decompressed bytes (`reading.read_through`: a JSON document without
the whitespace around it), read back from the spooled body here, streaming: gunzipping costs a
fraction of the parse and no memory. A canonical form of the parsed document (sorted keys) would
also see through reordered keys, but needs the parse here (the web process would peak at the
worker's ~8× the content) or a duplicate found only once a worker has parsed it (after the 202):
not worth it for what a device resends, the same capture compressed again. The same pass gives the
content's size and first bytes: content whose parse would take a worker past
`MEMDASH_MAX_PARSE_MEMORY_BYTES` is refused there (413, its body not kept), as a body past the size
cap is (`formats.content_cap`).
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import orjson
from django.conf import settings
from django.core.files import File
from django.db import IntegrityError, connection, transaction
from django.tasks import task_backends
from django.tasks.backends.immediate import ImmediateBackend
from django.utils import timezone

from memdash.core.logic.errors import InvalidUpload, UploadRefused
from memdash.core.logic.reading import copy_limited, read_chunks, read_through
from memdash.core.models import App, IngestKey
from memdash.core.writes import transactions, uploads
from memdash.ingest import tasks
from memdash.ingest.models import Upload
from memdash.ingest.writes.formats import META_FIELDS, content_cap

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def clean_fields(raw: dict[str, Any]) -> dict[str, str]:
    """The upload's own fields (for formats that carry no app or build), as short strings."""
    fields = {k: str(raw[k])[:255] for k in META_FIELDS if raw.get(k) not in (None, "")}
    for name, value in fields.items():
        if "\x00" in value:  # the database cannot store it
            raise InvalidUpload("must not contain NUL characters", name)
    return fields


def clean_client_key(value: str) -> str:
    """The client's `Idempotency-Key`: 1 to 255 printable ASCII characters."""
    if not 0 < len(value) <= 255 or not all(" " <= c <= "~" for c in value):
        raise InvalidUpload("must be 1 to 255 printable ASCII characters", "Idempotency-Key")
    return value


def idempotency_key(content_sha256: str, fields: dict[str, str]) -> str:
    """The upload's identity: its content (see the module's docstring) and its fields."""
    return hashlib.sha256(
        orjson.dumps([content_sha256, fields], option=orjson.OPT_SORT_KEYS)
    ).hexdigest()


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
    client_key: str | None = None,
) -> tuple[Upload, bool]:
    """Store the body and have it processed. Returns (upload, created); the same content with
    the same fields, or the same `client_key` (the client's Idempotency-Key) of the app, give
    the existing upload back, never a second snapshot; one that failed or whose worker died is
    processed again (`Upload.take_back`).

    With `progress`, the upload is processed here and now, reporting to it (the command).
    Otherwise `run` queues it (the embedded immediate backend runs it here and now), and
    `run=False` leaves it queued for the caller's own `tasks.process_upload`."""
    immediate = isinstance(task_backends["default"], ImmediateBackend)
    here = progress is not None or (run and immediate)
    if progress is not None:
        progress("receive", 0.0)
    # Processed here: the content decompressed for its digest is the one parsed (one gunzip).
    pieces: list[bytes] | None = [] if here else None
    with tempfile.TemporaryFile() as spool:
        try:
            fields = clean_fields(fields or {})
            client_key = "" if client_key is None else clean_client_key(client_key)
            received = copy_limited(chunks, spool, settings.MEMDASH_MAX_BODY_BYTES)
        except UploadRefused as exc:
            refused = record_refused(app, exc, key=key, user=user, source=source, filename=filename)
            return refused, True
        spool.seek(0)
        # Unreadable content (corrupt gzip) is known by its bytes: the task refuses it. Content
        # past what its parse could afford is refused unstored: read no further than that
        # (`content_cap`, a digest stream; nothing of it is held).
        try:
            content = read_through(
                spool, settings.MEMDASH_MAX_DECOMPRESSED_BYTES, content_cap, pieces
            )
        except UploadRefused as exc:
            refused = record_refused(app, exc, key=key, user=user, source=source, filename=filename)
            return refused, True
        upload = Upload(
            app=app, key=key, user=user, source=source, filename=filename[:255],
            size=received.size, sha256=received.sha256, fields=fields, created_at=timezone.now(),
            idempotency_key=idempotency_key(content.sha256 if content else received.sha256, fields),
            client_key=client_key,
        )  # fmt: skip
        if here:  # claimed from its first write: no UPDATE to `processing` after
            upload.claim_unsaved()
        spool.seek(0)
        upload.file.save(f"{received.sha256}.bin", File(spool), save=False)
        # tried again when a deadlock cancelled it (on Citus the uploads are a reference table:
        # bench/citus.py's 8 clients met one in a quarter of their requests, answered 500)
        existing = transactions.retried_on_deadlock(lambda: _insert(upload), one_statement=True)
    if existing is not None:
        if pieces:
            pieces.clear()  # the existing upload is read from its own stored body
        upload.file.delete(save=False)
        if (run or here) and transactions.retried_on_deadlock(
            lambda: existing.take_back(here), one_statement=True
        ):
            _process(existing, here, progress)  # its own content (a client key may name it)
        created = False
    else:
        if run or here:
            _process(upload, here, progress, pieces if content is not None else None)
        created = True
    if run or here:
        tasks.requeue_stale_in_passing()  # an upload is a pass: finds uploads of dead workers
    return existing or upload, created


def _insert(upload: Upload) -> Upload | None:
    """INSERT the upload, or answer the one already stored with its identity or client key
    (checked by the INSERT itself: a first upload, the common case, costs no lookup). A single
    INSERT is its own transaction; only within a caller's transaction is a savepoint needed, so
    that the failed INSERT leaves that transaction usable."""
    guard: AbstractContextManager[Any] = (
        transaction.atomic() if connection.in_atomic_block else nullcontext()
    )
    try:
        with guard:
            upload.save(force_insert=True)
    except IntegrityError:
        mine = Upload.objects.filter(app=upload.app)
        existing = None
        if upload.client_key:  # first: the client's key names the upload the client means
            existing = mine.filter(client_key=upload.client_key).first()
        if existing is None:
            existing = mine.filter(idempotency_key=upload.idempotency_key).first()
        if existing is None:  # another constraint than the upload's uniqueness
            raise
        existing.app = upload.app
        return existing
    return None


def _process(
    upload: Upload,
    here: bool,
    progress: uploads.Progress | None,
    content: list[bytes] | None = None,
) -> None:
    """Run the task here, on this very row (with the pieces of its `content` when they were
    read already: taken), or queue it once the row is committed (a worker on another machine
    must see it)."""
    if here:
        tasks.process_upload(upload, progress or uploads.no_progress, content)
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


def prune_rejected_bodies(now: datetime | None = None) -> int:
    """Delete the stored bodies of uploads rejected more than `MEMDASH_REJECTED_BODY_DAYS` ago
    (a gzip bomb, a document refused): kept that long to be looked into, not for ever. The
    upload stays, with its error; only its file goes. Returns how many were deleted."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.MEMDASH_REJECTED_BODY_DAYS)
    expired = Upload.objects.filter(status=Upload.REJECTED, finished_at__lt=cutoff).exclude(file="")
    deleted = 0
    for upload in expired.only("pk", "file").iterator(chunk_size=500):
        name = str(upload.file.name)
        # The row forgets the file first: a crash in between leaves a stray file, never a row
        # naming a file that is gone.
        if Upload.objects.filter(pk=upload.pk, file=name).update(file=""):
            upload.file.storage.delete(name)
            deleted += 1
    return deleted
