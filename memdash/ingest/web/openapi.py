"""What the upload doors answer, as JSON Schema for the OpenAPI document (`core.web.schema`)."""

from __future__ import annotations

from memdash.core.web.schema import BOOL, DATETIME, INT, OBJECT, STR, array, nullable, obj
from memdash.ingest.models import Upload

# Upload.as_json; a done upload adds what it made under its kind (`snapshot`: {id, url}).
_FIELDS = {
    "id": INT,
    "status": {"type": "string", "enum": [s for s, _ in Upload.STATUSES]},
    "url": STR,
    "app": STR,
    "format": STR,
    "size": INT,
    "sha256": STR,
    "created_at": DATETIME,
    "finished_at": nullable(DATETIME),
    "counts": OBJECT,
}
_UNREAD = {"unread": array(STR)}  # paths of keys memdash did not read
_WHY = {"error": STR, "path": STR}  # a rejected or failed upload: why, and where
UPLOAD = obj(_FIELDS, optional={**_UNREAD, **_WHY})
# The answer to an upload: the same, and whether these bytes (or this Idempotency-Key) came before.
UPLOADED = obj({**_FIELDS, "duplicate": BOOL}, optional={**_UNREAD, **_WHY})
# A refused upload: the upload made of it (status `rejected`), with why and where.
REFUSED = obj({**_FIELDS, "duplicate": BOOL, **_WHY}, optional=_UNREAD)
