"""The upload pages as CSV rows (`core.web.export`): every upload the list shows, newest first;
one upload's table."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from memdash.core.web.export import Cell
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


DETAIL_HEADERS = ["Field", "Value"]


def upload_detail_rows(u: Upload) -> list[list[Cell]]:
    """An upload's page as rows: what it was, when, what it made or why it was refused; each
    field it came with, each count, each key memdash did not read, a row apiece."""
    by = u.user.get_username() if u.user else (f"key {u.key.prefix}…" if u.key else None)
    rows: list[list[Cell]] = [
        ["Upload", u.pk],
        ["Status", u.status],
        ["File", u.filename],
        ["Format", u.format],
        ["Size (bytes)", u.size],
        ["SHA-256", u.sha256],
        ["From", u.source],
        ["By", by],
        ["Received", u.created_at],
        ["Finished", u.finished_at],
    ]
    rows += [[f"Field {key}", str(value)] for key, value in (u.fields or {}).items()]
    if u.error:
        rows += [["Error path", u.error_path], ["Error", u.error]]
    rows += [[f"Count {key}", value] for key, value in (u.counts or {}).items()]
    rows += [["Not read", path] for path in u.unread or []]
    if u.result_url:
        rows.append(["Result", u.result_label])
    return rows
