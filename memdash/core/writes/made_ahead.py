"""Work made ahead for a build once uploads to it stop for a moment (its statistics tables, its
summary for build compare): queued once per burst, and paced by what it last cost.

The first snapshot stored after a making started queues the next one (`queue`); a queue that
can wait runs it `least` later, or longer when the last making was costly
(`pacing.wait_before_next`): over a build of ten thousand snapshots each making takes minutes,
and a stream of uploads to it would otherwise keep a worker remaking it. The embedded default
runs it at once. Pages say how many snapshots what they show was made from."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.core.cache import cache
from django.tasks import default_task_backend
from django.utils import timezone

from memdash.core.logic.pacing import wait_before_next

PENDING_SECONDS = 3600  # a queued making whose task was lost does not block the next for long
COST_SECONDS = 7 * 24 * 3600


@dataclass(frozen=True)
class MadeAhead:
    """One kind of work made ahead per build, named for its cache keys."""

    name: str
    least: timedelta = timedelta(seconds=30)  # uploads to a build within it are made at once
    share: float = 0.1  # of a worker's time, at most, for one build's stream of uploads

    def _pending_key(self, build_id: int) -> str:
        return f"{self.name}:pending:{build_id}"

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

    @contextmanager
    def making(self, build_id: int) -> Iterator[None]:
        """Around the task's work: a snapshot stored from its start on queues another, and
        its cost sets the wait before that one."""
        cache.delete(self._pending_key(build_id))
        started = time.monotonic()
        yield
        cache.set(self._cost_key(build_id), time.monotonic() - started, timeout=COST_SECONDS)
