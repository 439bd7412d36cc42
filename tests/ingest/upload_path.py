"""The path of one upload through memdash, measured: which files it crosses on its way from the
API view to the bulk load (COPY) of its allocation rows, and how many SQL statements it costs.

`trace_upload(send)` runs `send()` (a POST through Django's test client) under `sys.setprofile`
and `CaptureQueriesContext`:

- a *hop* is a call into a memdash function whose nearest memdash caller on the stack is in
  another file (calls through Django, such as a tasks backend running the task, count as a hop
  between the two memdash files on either side). Each (caller, callee) pair is listed once: a
  loop calling a helper per frame is one hop, not one per frame. The progress callback handed
  down the path (the command door's display, a no-op here) is not counted;
- a file is *entered* once per function of another file that calls into it;
- hops are recorded from the view (the middleware before it is left out) until
  `core.writes.bulk.copy_rows` is first entered: the COPY of the allocation rows;
- SQL statements are counted for the whole request; those the bulk loads make (inside
  `core.writes.bulk.copy_rows` and `insert_ignore`: the COPY itself, or SQLite's executemany) are
  counted apart.

`.venv/bin/pytest -q -s -p no:randomly tests/ingest/test_upload_path.py` prints the chain (with
DATABASE_URL=postgres://… for PostgreSQL).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

import memdash
from memdash.core.writes.uploads import no_progress

PACKAGE = Path(memdash.__file__).resolve().parent
ROOT = PACKAGE.parent
START = "memdash/ingest/web/views.py"  # the door; the middleware before it is not counted
BULK = "memdash/core/writes/bulk.py"
END = (BULK, "copy_rows")  # the COPY of the allocation rows
BULK_LOADS = {"copy_rows", "insert_ignore"}
# The progress callback: the command door's display, handed down the path (a no-op here).
CALLBACKS = {no_progress.__code__}
TRANSACTION_CONTROL = {"BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE"}


@dataclass(frozen=True)
class Hop:
    depth: int  # memdash frames below the callee
    caller: str  # "file:function", or "" when entered from outside memdash
    callee: str  # "file:function"

    @property
    def callee_file(self) -> str:
        return self.callee.split(":")[0]


@dataclass
class UploadPath:
    hops: list[Hop] = field(default_factory=list)  # each (caller, callee) once, in call order
    queries: list[str] = field(default_factory=list)  # all but the bulk loads'
    bulk_queries: list[str] = field(default_factory=list)
    result: Any = None

    @property
    def files(self) -> set[str]:
        return {hop.callee_file for hop in self.hops}

    @property
    def entries(self) -> Counter[str]:
        """How many places (functions of other files) enter each file."""
        places = {(hop.caller, hop.callee_file) for hop in self.hops}
        return Counter(callee_file for _, callee_file in places)

    @property
    def transaction_statements(self) -> list[str]:
        return [sql for sql in self.queries if sql.split()[0].upper() in TRANSACTION_CONTROL]

    def report(self) -> str:
        lines = [f"{len(self.hops)} calls between files, {len(self.files)} files:"]
        lines.extend(
            f"{'  ' * hop.depth}{hop.callee}  <- {hop.caller.removeprefix('memdash/')}"
            for hop in self.hops
        )
        lines.append("entries per file: " + ", ".join(
            f"{name} {count}" for name, count in self.entries.most_common()
        ))  # fmt: skip
        lines.append(
            f"{len(self.queries)} SQL statements besides the bulk loads "
            f"({len(self.transaction_statements)} of them BEGIN, COMMIT or savepoints), "
            f"on {connection.vendor}:"
        )
        lines.extend(f"  {sql[:110]}" for sql in self.queries)
        lines.append(f"{len(self.bulk_queries)} statements of the bulk loads:")
        lines.extend(f"  {sql[:110]}" for sql in self.bulk_queries)
        return "\n".join(lines)


def _memdash_file(code: CodeType) -> str | None:
    if not code.co_filename.startswith(str(PACKAGE)):
        return None
    return str(Path(code.co_filename).relative_to(ROOT))


def _caller(frame: FrameType) -> tuple[str, int]:
    """The nearest memdash function below `frame` ("" if none), and how many there are."""
    caller, depth = "", 0
    below = frame.f_back
    while below is not None:
        name = _memdash_file(below.f_code)
        if name is not None:
            caller = caller or f"{name}:{below.f_code.co_name}"
            depth += 1
        below = below.f_back
    return caller, depth


def trace_upload(send: Callable[[], Any]) -> UploadPath:
    """Run `send()` and record its path (see the module's docstring)."""
    path = UploadPath()
    seen: set[tuple[str, str]] = set()
    bulk_frames: dict[FrameType, int] = {}  # a bulk load running: its first statement's index
    bulk_spans: list[range] = []
    started = done = False
    captured = CaptureQueriesContext(connection)

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal started, done
        if event == "return" and frame in bulk_frames:
            bulk_spans.append(range(bulk_frames.pop(frame), len(captured.captured_queries)))
            return
        code = frame.f_code
        if event != "call" or code.co_name == "<module>" or code in CALLBACKS:
            return
        callee = _memdash_file(code)
        if callee is None:
            return
        started = started or callee == START
        if not started:
            return
        caller, depth = _caller(frame)
        if caller.split(":")[0] == callee:
            return
        if callee == BULK and code.co_name in BULK_LOADS:
            bulk_frames[frame] = len(captured.captured_queries)
        if done:
            return
        hop = Hop(depth=depth, caller=caller, callee=f"{callee}:{code.co_name}")
        if (hop.caller, hop.callee) not in seen:
            seen.add((hop.caller, hop.callee))
            path.hops.append(hop)
        done = (callee, code.co_name) == END

    with captured:
        sys.setprofile(profile)
        try:
            path.result = send()
        finally:
            sys.setprofile(None)
    in_bulk = {i for span in bulk_spans for i in span}
    for i, query in enumerate(captured.captured_queries):
        (path.bulk_queries if i in in_bulk else path.queries).append(query["sql"])
    return path
