"""Work that follows a stored upload (a build's statistics tables and summary, the app's alert
rules): each piece queues a task once the upload's transaction has committed.

The snapshot's own pages read what the upload's transaction stored; this work only serves the
build's pages and alerts. So a door that answers its user itself may hold it (`held`): the
pieces are kept as the transaction commits, the door answers (the command prints what it
stored), then lets them go as one batch. With the embedded task backend, which runs a task as
it is queued, that is where their time goes: after the answer, not before it. Without a door
holding them, each piece queues its task at the commit, as `transaction.on_commit` would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial

from django.db import transaction

Work = Callable[[], None]
_HELD: ContextVar[list[Work] | None] = ContextVar("follow_ups_held", default=None)


def after_commit(work: Work) -> None:
    """Run `work` once the current transaction commits (never, if it rolls back), or, while
    a door holds follow-ups, when it lets them go."""
    transaction.on_commit(partial(_run_or_hold, work))


def _run_or_hold(work: Work) -> None:
    held = _HELD.get()
    if held is None:
        work()
    else:
        held.append(work)


@contextmanager
def held() -> Iterator[Callable[[], int]]:
    """Hold the follow-ups of what commits inside; answers a function that runs those held so
    far, in the order they came, and says how many (what is still held at the end is run
    then, whatever happened)."""
    waiting: list[Work] = []
    token = _HELD.set(waiting)

    def release() -> int:
        done = 0
        while waiting:
            waiting.pop(0)()
            done += 1
        return done

    try:
        yield release
    finally:
        _HELD.reset(token)
        release()
