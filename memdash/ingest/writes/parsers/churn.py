"""`memdash.churn` v1: allocator calls per scenario run (see docs/formats.md).

The document is validated whole into plain data (memdash.churn.logic.document) before anything is
written; then memdash.churn.writes stores it.
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from memdash.churn.logic.contract import FORMAT
from memdash.churn.logic.document import validate_churn_document
from memdash.churn.writes import store_churn
from memdash.core.logic.errors import InvalidUpload
from memdash.core.writes.apps import get_or_create_build, get_or_create_device
from memdash.core.writes.uploads import FormatHandler, Progress, StoreResult, UploadMeta, check_app

MAX_BUILD_FIELD = 64
MAX_DEVICE_FIELD = 255


def detect(raw: bytes, doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("format") == FORMAT


def bounded(value: str, path: str, max_length: int) -> str:
    if len(value) > max_length:
        raise InvalidUpload(f"must be at most {max_length} characters", path)
    return value


def process(raw: bytes, doc: Any, meta: UploadMeta, progress: Progress) -> StoreResult:
    progress("validate", 0.0)
    document = validate_churn_document(doc)
    check_app(document.app, meta)
    # The document's build wins; without one, the build given beside the upload.
    in_document = bool(document.build_version)
    version = document.build_version or meta.build_version
    number = document.build_number if in_document else meta.build_number
    commit = document.build_commit if in_document else meta.build_commit
    if not version:
        raise InvalidUpload("is required (or give build_version with the upload)", "build.version")
    bounded(version, "build.version", MAX_BUILD_FIELD)
    bounded(number, "build.number", MAX_BUILD_FIELD)
    bounded(commit, "build.commit", MAX_BUILD_FIELD)
    device_id = document.device_id or meta.device_id
    bounded(device_id, "device.id", MAX_DEVICE_FIELD)
    progress("store", 0.5)
    app = meta.app
    build = get_or_create_build(app, version, number, commit)
    device = (
        get_or_create_device(
            app,
            device_id,
            (document.device_model or meta.device_model)[:128],
            (document.device_os or meta.os)[:128],
        )
        if device_id
        else None
    )
    stored = store_churn(
        app, build, device, document, received_at=meta.received_at, upload_id=meta.upload_id
    )
    progress("done", 1.0)
    return StoreResult(
        kind="churn",
        url=reverse("churn:app_churn", args=[app.pk]) + f"?build={build.pk}",
        counts=stored.counts(),
    )


HANDLER = FormatHandler(
    name=FORMAT,
    description="memdash allocator churn JSON",
    detect=detect,
    process=process,
)
