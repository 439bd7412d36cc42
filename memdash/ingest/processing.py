"""Processing one stored upload (run by a task): read it within the decompression cap, detect
its format, and let the format's handler validate and store inside one transaction, so that a
refused or failed upload leaves no rows behind.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memdash.core import uploads
from memdash.core.errors import UploadRefused
from memdash.ingest import formats
from memdash.ingest.models import Upload
from memdash.ingest.reading import read_content

log = logging.getLogger(__name__)

META_FIELDS = (
    "build_version", "build_number", "build_commit", "device_id", "device_model", "os", "session",
)  # fmt: skip


def meta_for(upload: Upload) -> uploads.UploadMeta:
    fields = upload.fields or {}
    return uploads.UploadMeta(
        app=upload.app,
        received_at=upload.created_at,
        upload_id=upload.pk,
        **{name: fields.get(name, "") for name in META_FIELDS},
    )


def parse_json(raw: bytes) -> Any:
    """The parsed document, or NOT_JSON for content that is not JSON (text reports)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return uploads.NOT_JSON


def process_upload(upload_id: int, progress: uploads.Progress = uploads.no_progress) -> Upload:
    """Parse, validate and store one upload; never raises for bad content."""
    upload = Upload.objects.select_related("app").get(pk=upload_id)
    if upload.is_finished:
        return upload
    Upload.objects.filter(pk=upload.pk).update(status=Upload.PROCESSING, started_at=timezone.now())
    try:
        progress("read", 0.0)
        with upload.file.open("rb") as stream:
            raw = read_content(stream, settings.MEMDASH_MAX_DECOMPRESSED_BYTES)
        progress("parse", 0.0)
        doc = parse_json(raw)
        handler = formats.detect(raw, doc)
        upload.format = handler.name
        with transaction.atomic():
            result = handler.process(raw, doc, meta_for(upload), progress)
    except UploadRefused as exc:
        upload.status, upload.error, upload.error_path = Upload.REJECTED, exc.message, exc.path
        upload.error_status = exc.status
    except Exception:  # a bug of ours, not the uploader's: keep the upload, say so, log it
        log.exception("upload %s failed", upload.pk)
        upload.status, upload.error, upload.error_status = Upload.FAILED, "internal error", 500
    else:
        upload.status, upload.counts = Upload.DONE, result.counts
        upload.result_kind, upload.result_id, upload.result_url = (
            result.kind, result.object_id, result.url,
        )  # fmt: skip
    upload.finished_at = timezone.now()
    upload.save()
    return upload
