"""The formats memdash accepts, and how an upload finds its own.

Every door (API, page, command) hands the bytes to `services.process_upload`, which detects the
format here and calls its handler inside one transaction. A handler parses and validates first
(raising `InvalidUpload` with the path of the first bad value) and only then stores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from memdash.core.errors import InvalidUpload
from memdash.core.uploads import Progress, StoreResult, UploadMeta, check_app, no_progress

__all__ = [
    "NOT_JSON",
    "FormatHandler",
    "Progress",
    "StoreResult",
    "UploadMeta",
    "check_app",
    "no_progress",
]


NOT_JSON = object()  # what `doc` is for content that did not parse as JSON


@dataclass(frozen=True)
class FormatHandler:
    name: str  # e.g. "memdash.snapshot"
    description: str
    detect: Callable[[bytes, Any], bool]  # (raw bytes, parsed JSON or NOT_JSON)
    process: Callable[[bytes, Any, UploadMeta, Progress], StoreResult]


def json_format_of(doc: Any) -> tuple[str, Any] | None:
    """(format, version) of a memdash JSON document, or None."""
    if isinstance(doc, dict) and isinstance(doc.get("format"), str):
        return doc["format"], doc.get("version")
    return None


def handlers() -> list[FormatHandler]:
    """All formats, most specific first. Imported lazily: each handler pulls in its domain."""
    from memdash.ingest.parsers import registry

    return registry.HANDLERS


def detect(raw: bytes, doc: Any) -> FormatHandler:
    fmt = json_format_of(doc)
    for handler in handlers():
        if fmt is not None:
            if handler.name == fmt[0]:
                return handler
        elif handler.detect(raw, doc):
            return handler
    if fmt is not None:
        known = ", ".join(h.name for h in handlers() if h.name.startswith("memdash."))
        raise InvalidUpload(f"unknown format {fmt[0]!r}; expected one of {known}", "format")
    expected = "; ".join(f"{h.name} ({h.description})" for h in handlers())
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
