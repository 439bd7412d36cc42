"""memdash.snapshot v1: memdash's own snapshot format (see docs/formats.md)."""

from __future__ import annotations

from typing import Any

from memdash.ingest.formats import FormatHandler, Progress, StoreResult, UploadMeta
from memdash.snapshots.services import store_snapshot_document


def detect(raw: bytes, doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("format") == "memdash.snapshot"


def process(raw: bytes, doc: Any, meta: UploadMeta, progress: Progress) -> StoreResult:
    return store_snapshot_document(doc, meta, progress)


HANDLER = FormatHandler(
    name="memdash.snapshot",
    description="memdash allocation snapshot JSON",
    detect=detect,
    process=process,
)
