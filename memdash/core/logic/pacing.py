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


def wait_before_next(last_cost: float, least: float, share: float) -> float:
    """Seconds to wait before work that last took `last_cost` seconds runs again, so that it
    takes at most `share` of a worker's time however costly it grows (a build's tables over
    ten thousand snapshots take minutes), and never less than `least` (a burst of uploads
    within it is made at once)."""
    return max(least, last_cost * (1 / share - 1))
