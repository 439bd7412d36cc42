"""The task of an upload: read the stored body within the decompression cap, detect its format,
and let the format's handler validate and store it, in one transaction with the upload's own
outcome, so that an upload is `done` exactly when its data is stored and a refused or failed
one leaves no rows behind.

The embedded (immediate) backend has the door call `process_upload` with the upload it has just
stored; a worker of a real queue runs `process_upload_task` with the upload's id.
"""

from __future__ import annotations

import logging
from typing import Any, BinaryIO, cast

import orjson
from django.conf import settings
from django.db import transaction
from django.tasks import task
from django.utils import timezone

from memdash.core import uploads
from memdash.core.errors import UploadRefused
from memdash.ingest import formats
from memdash.ingest.models import Upload
from memdash.ingest.reading import read_content

log = logging.getLogger(__name__)

# What `process_upload` writes of the upload once it ends (one UPDATE).
OUTCOME_FIELDS = [
    "status", "format", "error", "error_path", "error_status", "counts", "unread",
    "result_kind", "result_id", "result_url", "finished_at",
]  # fmt: skip


@task()
def process_upload_task(upload_id: int) -> str:
    return process_upload(Upload.objects.select_related("app").get(pk=upload_id)).status


def process_upload(upload: Upload, progress: uploads.Progress = uploads.no_progress) -> Upload:
    """Parse, validate and store one upload; never raises for bad content.

    A queued upload is marked `processing` first (pages show it while a long one runs). One
    already `processing` was marked so by the door that runs it right here, or was left so by a
    worker that died, and is run from the start; a finished one is returned as it is."""
    if upload.is_finished:
        return upload
    if upload.status == Upload.QUEUED:
        upload.status, upload.started_at = Upload.PROCESSING, timezone.now()
        Upload.objects.filter(pk=upload.pk).update(
            status=upload.status, started_at=upload.started_at
        )
    try:
        progress("read", 0.0)
        with upload.file.open("rb") as stream:  # a FieldFile: its file's read and seek
            raw = read_content(cast("BinaryIO", stream), settings.MEMDASH_MAX_DECOMPRESSED_BYTES)
        progress("parse", 0.0)
        doc = parse_json(raw)
        handler = formats.detect(raw, doc)
        upload.format = handler.name
        with transaction.atomic():
            result = handler.process(raw, doc, meta_for(upload), progress)
            _record_outcome(
                upload, Upload.DONE, counts=result.counts, unread=result.unread,
                result_kind=result.kind, result_id=result.object_id, result_url=result.url,
            )  # fmt: skip
    except UploadRefused as exc:
        _record_outcome(
            upload, Upload.REJECTED, error=exc.message, error_path=exc.path,
            error_status=exc.status,
        )  # fmt: skip
    except Exception:  # a bug of ours, not the uploader's: keep the upload, say so, log it
        log.exception("upload %s failed", upload.pk)
        _record_outcome(upload, Upload.FAILED, error="internal error", error_status=500)
    return upload


def _record_outcome(upload: Upload, status: str, **outcome: Any) -> None:
    """Set how the upload ended (what `outcome` does not name is cleared) and write it."""
    values = {
        "error": "", "error_path": "", "error_status": None, "counts": {}, "unread": [],
        "result_kind": "",
        "result_id": None, "result_url": "", **outcome,
    }  # fmt: skip
    upload.status, upload.finished_at = status, timezone.now()
    for name, value in values.items():
        setattr(upload, name, value)
    upload.save(update_fields=OUTCOME_FIELDS)


def meta_for(upload: Upload) -> uploads.UploadMeta:
    fields = upload.fields or {}
    return uploads.UploadMeta(
        app=upload.app,
        received_at=upload.created_at,
        upload_id=upload.pk,
        **{name: fields.get(name, "") for name in formats.META_FIELDS},
    )


def parse_json(raw: bytes) -> Any:
    """The parsed document, or NOT_JSON for content that is not JSON (text reports)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return uploads.NOT_JSON
