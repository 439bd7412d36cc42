"""Work made ahead for a build once uploads to it stop for a moment (its statistics tables, its
summary for build compare): queued once per burst, and paced by what it last cost.

The first snapshot stored after a making started queues the next one (`queue`); a queue that
can wait runs it `least` later, or longer when the last making was costly
(`pacing.wait_before_next`): over a build of ten thousand snapshots each making takes minutes,
and a stream of uploads to it would otherwise keep a worker remaking it. The embedded default
runs it at once. Uploads waiting go first (`MADE_AHEAD_PRIORITY`), and one worker at a time
makes a build's (`run`). Pages say how many snapshots what they show was made from."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.core.cache import cache
from django.tasks import default_task_backend
from django.utils import timezone

from memdash.core.logic.pacing import wait_before_next

PENDING_SECONDS = 3600  # a queued making whose task was lost does not block the next for long
RUNNING_SECONDS = 6 * 3600  # nor one whose worker died mid-way
# Below uploads (0): a worker takes the uploads waiting before it remakes a build's tables.
MADE_AHEAD_PRIORITY = -10
COST_SECONDS = 7 * 24 * 3600


@dataclass(frozen=True)
class MadeAhead:
    """One kind of work made ahead per build, named for its cache keys."""

    name: str
    least: timedelta = timedelta(seconds=30)  # uploads to a build within it are made at once
    share: float = 0.1  # of a worker's time, at most, for one build's stream of uploads

    def _pending_key(self, build_id: int) -> str:
        return f"{self.name}:pending:{build_id}"

    def _running_key(self, build_id: int) -> str:
        return f"{self.name}:running:{build_id}"

    def _cost_key(self, build_id: int) -> str:
        return f"{self.name}:cost:{build_id}"

    def wait(self, build_id: int) -> timedelta:
        """How long after now the next making of the build runs."""
        cost = float(cache.get(self._cost_key(build_id), 0.0))
        return timedelta(seconds=wait_before_next(cost, self.least.total_seconds(), self.share))

    def queue(self, task: Any, build_id: int) -> None:
        """Queue `task(build_id)`, unless one is queued and not yet started."""
        if not cache.add(self._pending_key(build_id), True, timeout=PENDING_SECONDS):
            return
        if default_task_backend.supports_defer:
            task.using(run_after=timezone.now() + self.wait(build_id)).enqueue(build_id)
        else:  # the embedded default runs it at once
            task.enqueue(build_id)

    def run(self, task: Any, build_id: int, work: Callable[[], str]) -> str:
        """The task's body: `work()`, its cost kept for the wait before the next; a snapshot
        stored from its start on queues another. Not while another worker makes the build's
        (two at once would each read every snapshot's totals or rows: minutes and gigabytes
        each, seen in bench/citus.py): then this one is queued again, to take in what was
        stored since that one started (the embedded default, which would run it again at
        once, leaves it to the next upload)."""
        cache.delete(self._pending_key(build_id))
        if not cache.add(self._running_key(build_id), True, timeout=RUNNING_SECONDS):
            if default_task_backend.supports_defer:
                self.queue(task, build_id)
            return "another worker is making it"
        started = time.monotonic()
        try:
            return work()
        finally:
            cache.set(self._cost_key(build_id), time.monotonic() - started, timeout=COST_SECONDS)
            cache.delete(self._running_key(build_id))
