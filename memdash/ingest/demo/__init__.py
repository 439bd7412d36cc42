"""Ingest's parts of the demo story, found by the site's loader (`memdash.site.demo`), which
runs them at their places in its `ORDER`: the Matrix report of a FOOM (after the snapshots), the
debug files that name its frames, the OS's own exit records (after the FOOM runs), and the
platforms' own leak tools (after the retain cycles and leaks they join)."""

from __future__ import annotations

from memdash.ingest.demo import (
    debug_files as demo_symbols,
)
from memdash.ingest.demo import (
    leak_tools as demo_leak_tools,
)
from memdash.ingest.demo import (
    matrix as demo_matrix,
)
from memdash.ingest.demo import (
    os_exits as demo_os,
)

PARTS = {
    "matrix report": demo_matrix.load,
    "debug files": demo_symbols.load,
    "os exits": demo_os.load,
    "leak tools": demo_leak_tools.load,
}
