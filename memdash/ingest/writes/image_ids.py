"""The images an upload named, with their ids (a UUID, an ELF build id), read back from the
upload as it is kept: how the snapshots stored before memdash recorded their images get the ids
a debug file is matched by (migration 0002 of this app; allocations' migration 0004 derives
their image rows from their frames first).

An upload of a monitor's format is converted again, as it was when stored; nothing is stored.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memdash.allocations.logic.document.parse import ImageInfo, parse_images
from memdash.core.writes.uploads import NOT_JSON, UploadMeta
from memdash.ingest.logic.monitor_common import meta_fields_from_upload
from memdash.ingest.writes import formats
from memdash.ingest.writes.formats import parse_json
from memdash.ingest.writes.parsers import fbat, matrix, pprof
from memdash.ingest.writes.parsers.snapshot import Converter

NATIVE = "memdash.snapshot"
CONVERTERS: dict[str, Converter] = {
    matrix.FORMAT_NAME: matrix.to_snapshot_document,
    fbat.FORMAT_NAME: fbat.to_snapshot_document,
    pprof.FORMAT_NAME: pprof.to_snapshot_document,
}


def images_of_upload(
    raw: bytes, source_format: str, app: Any, fields: dict[str, Any], received_at: datetime
) -> list[ImageInfo]:
    """The images of a snapshot upload (its content, gunzipped), converted from `source_format`
    as at ingest with the upload's fields and its app (a model instance, current or historical);
    none for a format that is not a snapshot's. Raises UploadRefused if it no longer reads."""
    doc = parse_json(raw)
    if source_format != NATIVE:
        convert = CONVERTERS.get(source_format)
        if convert is None:
            return []
        own = {name: str(fields.get(name) or "") for name in formats.META_FIELDS}
        meta = UploadMeta(
            app=app, received_at=received_at, build_version=own["build_version"],
            build_number=own["build_number"], build_commit=own["build_commit"],
            device_id=own["device_id"], device_model=own["device_model"], os=own["os"],
            session=own["session"],
        )  # fmt: skip
        doc = convert(raw, doc, meta_fields_from_upload(meta))
    if doc is NOT_JSON or not isinstance(doc, dict):
        return []
    return parse_images(doc.get("images") or [])
