"""Work a process does at most every so often (the look for dead workers' uploads, BRIN
summaries): when it last did each, in this process."""

from __future__ import annotations

import time

_done_at: dict[str, float] = {}  # name -> time.monotonic() of the last time


def due(name: str, every: float) -> bool:
    """Whether this process did `name` no sooner than `every` seconds ago (or never); if so, it
    counts as done now."""
    now, last = time.monotonic(), _done_at.get(name)
    if last is not None and now - last < every:
        return False
    _done_at[name] = now
    return True


def forget() -> None:
    """As a new process starts: nothing done yet (for tests)."""
    _done_at.clear()
