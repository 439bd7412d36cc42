"""Work that follows a stored upload (a build's statistics tables and summary, the app's alert
rules): each piece queues a task once the upload's transaction has committed.

The snapshot's own pages read what the upload's transaction stored; this work only serves the
build's pages and alerts. So a door that answers its user itself may hold it (`held`): the
pieces are kept as the transaction commits, the door answers (the command prints what it
stored), then lets them go as one batch. With the embedded task backend, which runs a task as
it is queued, that is where their time goes: after the answer, not before it. Without a door
holding them, each piece queues its task at the commit, as `transaction.on_commit` would.

A web request holds them until its answer has been sent (`core.middleware`); only there may
work too long for any door's wait follow (`after_the_answer`: a million-row snapshot's
Allocations List under the embedded default), as the page reads the rows meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial

from django.db import transaction

Work = Callable[[], None]
_HELD: ContextVar[list[Work] | None] = ContextVar("follow_ups_held", default=None)
# Whether the door holding the follow-ups has answered before it lets them go (a web request
# whose answer is sent): then work too long for the answer to wait may follow it too.
_ANSWERED_FIRST: ContextVar[bool] = ContextVar("follow_ups_answered_first", default=False)


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


def after_the_answer(work: Work) -> bool:
    """Hold `work` until the door's answer has been sent, if the door is one that answers
    first (a web request); False, and nothing held, otherwise (the caller leaves it to a
    worker or a command)."""
    waiting = _HELD.get()
    if waiting is None or not _ANSWERED_FIRST.get():
        return False
    waiting.append(work)
    return True


@contextmanager
def held_past_the_answer() -> Iterator[list[Work]]:
    """Hold the follow-ups of what commits inside, and let work too long for an answer
    (`after_the_answer`) join them; answers the list they are kept in, which nothing runs
    here: the door runs it (`run_all`) once its answer has been sent."""
    waiting: list[Work] = []
    held, answered_first = _HELD.set(waiting), _ANSWERED_FIRST.set(True)
    try:
        yield waiting
    finally:
        _HELD.reset(held)
        _ANSWERED_FIRST.reset(answered_first)


def run_all(waiting: list[Work]) -> int:
    """Run the works held, in the order they came; says how many."""
    done = 0
    while waiting:
        waiting.pop(0)()
        done += 1
    return done


@contextmanager
def held() -> Iterator[Callable[[], int]]:
    """Hold the follow-ups of what commits inside; answers a function that runs those held so
    far, in the order they came, and says how many (what is still held at the end is run
    then, whatever happened)."""
    waiting: list[Work] = []
    token = _HELD.set(waiting)

    def release() -> int:
        return run_all(waiting)

    try:
        yield release
    finally:
        _HELD.reset(token)
        release()
