"""The formats memdash accepts, and how an upload finds its own.

Every door (API, page, command) hands the bytes to `services.receive_upload`; the task,
`tasks.process_upload`, detects the format here and calls its handler inside one transaction.
A handler parses and validates first (raising `InvalidUpload` with the path of the first bad
value) and only then stores.
"""

from __future__ import annotations

from typing import Any

import orjson

from memdash.core.errors import InvalidUpload
from memdash.core.uploads import NOT_JSON, FormatHandler, json_format_of
from memdash.ingest.parsers import registry

# The upload's own fields, for formats that carry no app or build (query parameters, form
# fields, the command's options): the optional fields of `core.uploads.UploadMeta`.
META_FIELDS = (
    "build_version", "build_number", "build_commit", "device_id", "device_model", "os", "session",
)  # fmt: skip


def detect(raw: bytes, doc: Any) -> FormatHandler:
    """The handler of the upload's format (`registry.HANDLERS` is most specific first)."""
    handlers = registry.HANDLERS
    fmt = json_format_of(doc)
    for handler in handlers:
        if fmt is not None:
            if handler.name == fmt[0]:
                return handler
        elif handler.detect(raw, doc):
            return handler
    if fmt is not None:
        known = ", ".join(h.name for h in handlers if h.name.startswith("memdash."))
        raise InvalidUpload(f"unknown format {fmt[0]!r}; expected one of {known}", "format")
    expected = "; ".join(f"{h.name} ({h.description})" for h in handlers)
    if doc is NOT_JSON:
        if raw.lstrip()[:1] in (b"{", b"["):  # meant as JSON: say where it breaks
            raise InvalidUpload(f"not valid JSON: {_json_error(raw)}")
        raise InvalidUpload(f"not JSON and not a recognised report; expected one of: {expected}")
    raise InvalidUpload(f"unrecognised document; expected one of: {expected}")


def _json_error(raw: bytes) -> str:
    """orjson's own account of what breaks the document (what, line, column); parsed again
    only on this error path, so that a good upload is parsed once."""
    try:
        orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return str(exc)
    return "unreadable"
