"""The cyclic garbage collector, paused while a bulk write builds its rows (`paused_gc`), but
never inside a web request (`serving_request`)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_pause_lock = threading.Lock()
_pauses = 0  # threads inside `paused_gc` right now
_collector_was_enabled = False  # before the first of them entered
# True while a web request is being answered (`serving_request`, around every request).
_serving_request: ContextVar[bool] = ContextVar("memdash_serving_request", default=False)


@contextmanager
def serving_request() -> Iterator[None]:
    """Mark what runs inside as answering a web request (the `requests_keep_the_collector`
    middleware wraps every request in it), so that `paused_gc` leaves the collector alone
    there: an upload processed in the request (the embedded tasks backend) must not switch it
    off for the other requests the process is answering."""
    token = _serving_request.set(True)
    try:
        yield
    finally:
        _serving_request.reset(token)


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while an ingest builds its rows, in the task worker and
    management commands only: inside a web request (`serving_request`) it does nothing. A batch
    allocates hundreds of thousands of short-lived containers, none of them in cycles, and each
    such burst makes Python scan the whole heap several times (a quarter of a sessions upload's
    time, measured); reference counting
    frees them all the same, and cycles made meanwhile wait for the next collection. The
    collector is one switch for the process: pauses are counted under a lock, so overlapping
    ingests in threads turn it back on only when the last one ends, and only if it was on."""
    global _pauses, _collector_was_enabled
    if _serving_request.get():
        yield
        return
    with _pause_lock:
        if _pauses == 0:
            _collector_was_enabled = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _collector_was_enabled:
                gc.enable()
