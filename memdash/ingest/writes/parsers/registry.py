"""The list of accepted formats. Each domain adds its handler here (one line)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memdash.allocations.logic.document.raw import read_snapshot
from memdash.core.writes.uploads import FormatHandler
from memdash.ingest.writes.parsers import churn as churn_format
from memdash.ingest.writes.parsers import cycles as cycles_format
from memdash.ingest.writes.parsers import exitinfo as exitinfo_format
from memdash.ingest.writes.parsers import exitinfo_text as exitinfo_text_format
from memdash.ingest.writes.parsers import fbat as fbat_format
from memdash.ingest.writes.parsers import heaptrack as heaptrack_format
from memdash.ingest.writes.parsers import leakcanary as leakcanary_format
from memdash.ingest.writes.parsers import leaks as leaks_format
from memdash.ingest.writes.parsers import massif as massif_format
from memdash.ingest.writes.parsers import matrix as matrix_format
from memdash.ingest.writes.parsers import metrickit as metrickit_format
from memdash.ingest.writes.parsers import pprof as pprof_format
from memdash.ingest.writes.parsers import sessions as sessions_format
from memdash.ingest.writes.parsers import snapshot
from memdash.ingest.writes.parsers import xcode_leaks as xcode_leaks_format

# Formats read straight from their bytes, before (and instead of) the generic JSON parse: the
# reader answers what its handler's `process` takes, or None for content it does not read so
# (a large snapshot's rows go into columns: `allocations.logic.document.raw`).
READERS: list[tuple[FormatHandler, Callable[[bytes], Any | None]]] = [
    (snapshot.HANDLER, read_snapshot),
]

HANDLERS: list[FormatHandler] = [
    snapshot.HANDLER,
    *cycles_format.HANDLERS,
    sessions_format.HANDLER,
    *metrickit_format.HANDLERS,
    *exitinfo_format.HANDLERS,
    matrix_format.HANDLER,
    fbat_format.HANDLER,
    pprof_format.HANDLER,
    heaptrack_format.HANDLER,
    massif_format.HANDLER,
    churn_format.HANDLER,
    # The platforms' own leak tools and exit records, as text: their markers are their own.
    xcode_leaks_format.HANDLER,
    leakcanary_format.HANDLER,
    exitinfo_text_format.HANDLER,
    *leaks_format.HANDLERS,
]
