"""The plain types that pass between the ingest doors and the domains that store uploads.

They live in core so that a domain's services never import ingest (ingest depends on domains,
not the other way round). `memdash.ingest.writes.parsers.registry` lists the handlers, and
`memdash.ingest.writes.formats` detects which one an upload is for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memdash.core.logic.errors import InvalidUpload, WrongApp
from memdash.core.models import App

Progress = Callable[[str, float], None]  # (phase, fraction done 0..1)


def no_progress(phase: str, fraction: float) -> None:
    pass


@dataclass(frozen=True)
class UploadMeta:
    """What comes with an upload besides its content: the key's app, and for formats that name
    no app or build, the upload's own fields or query parameters."""

    app: App
    received_at: datetime
    build_version: str = ""
    build_number: str = ""
    build_commit: str = ""
    device_id: str = ""
    device_model: str = ""
    os: str = ""
    session: str = ""
    # The device's offset from UTC (`+02:00`), for text that prints the device's local time
    # without one (`dumpsys activity exit-info`); "" is UTC.
    utc_offset: str = ""
    upload_id: int | None = None


@dataclass
class StoreResult:
    kind: str  # "snapshot", "sessions", "retain-cycles", "leaks", "churn"
    url: str = ""
    object_id: int | None = None
    counts: dict[str, int] = field(default_factory=dict)
    # Keys the content held that memdash does not read (JSON paths), kept with the upload.
    unread: list[str] = field(default_factory=list)


def check_app(doc_app: Any, meta: UploadMeta, path: str = "app") -> None:
    """An upload that names an app must name its key's app."""
    if not isinstance(doc_app, dict):
        raise InvalidUpload("must be an object with `id` and `platform`", path)
    bundle_id, platform = doc_app.get("id"), doc_app.get("platform")
    if not isinstance(bundle_id, str) or not bundle_id:
        raise InvalidUpload("must be a non-empty string", f"{path}.id")
    if platform is not None and not isinstance(platform, str):
        raise InvalidUpload("must be a string", f"{path}.platform")
    if bundle_id != meta.app.bundle_id or (platform and platform != meta.app.platform):
        raise WrongApp(
            f"this key belongs to {meta.app.bundle_id} ({meta.app.platform}), "
            f"the upload names {bundle_id} ({platform})",
            path,
        )


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
