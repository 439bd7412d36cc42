"""The uploads list as CSV rows (`core.export`): every upload the page lists, newest first."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from memdash.core.export import Cell
from memdash.ingest.models import Upload

UPLOAD_HEADERS = [
    "Upload",
    "App",
    "File",
    "Format",
    "From",
    "By",
    "Received",
    "Size (bytes)",
    "Status",
    "Result",
    "Error path",
    "Error",
]


def upload_rows(uploads: Iterable[Upload]) -> Iterator[list[Cell]]:
    for u in uploads:
        by = u.user.get_username() if u.user else (f"key {u.key.prefix}…" if u.key else None)
        yield [
            u.pk,
            u.app.display_name,
            u.filename,
            u.format,
            u.source,
            by,
            u.created_at,
            u.size,
            u.status,
            u.result_label if u.result_url else None,
            u.error_path,
            u.error,
        ]
