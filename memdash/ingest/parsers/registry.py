"""The list of accepted formats. Each domain adds its handler here (one line)."""

from __future__ import annotations

from memdash.ingest.formats import FormatHandler
from memdash.ingest.parsers import snapshot

HANDLERS: list[FormatHandler] = [
    snapshot.HANDLER,
]
