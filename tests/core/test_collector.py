"""The collector pause of bulk ingest: one switch for the whole process, so overlapping pauses
(ingests in threads) turn it back on only when the last one ends, and only if it was on; and
never inside a web request (an upload the embedded tasks backend stores in its request), only
in the task worker and management commands."""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Callable

import pytest

from memdash.core.logic.collector import paused_gc, serving_request
from memdash.foom.writes.sessions import store_sessions
from memdash.foom.writes.storing import resolve_builds
from memdash.ingest.writes.parsers.sessions import parse_sessions_document
from tests.foom.helpers import ago, ended, run, sessions_doc


@pytest.fixture
def collector_on():
    was_enabled = gc.isenabled()
    gc.enable()
    yield
    if not was_enabled:
        gc.disable()


def test_the_collector_is_off_inside_and_on_again_after(collector_on):
    with paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_overlapping_pauses_in_threads_end_with_the_last(collector_on):
    first_in, second_in, first_out, second_may_leave = (threading.Event() for _ in range(4))
    seen: dict[str, bool] = {}

    def first() -> None:
        with paused_gc():
            first_in.set()
            second_in.wait(5)
        first_out.set()

    def second() -> None:
        first_in.wait(5)
        with paused_gc():
            second_in.set()
            first_out.wait(5)
            seen["after the first left"] = gc.isenabled()
            second_may_leave.wait(5)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    first_out.wait(5)
    second_may_leave.set()
    for thread in threads:
        thread.join(5)
    assert seen == {"after the first left": False}  # the second pause still holds it off
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off(collector_on):
    gc.disable()
    with paused_gc():
        pass
    assert not gc.isenabled()


def test_inside_a_request_the_collector_is_left_alone(collector_on):
    with serving_request(), paused_gc():
        assert gc.isenabled()
    with paused_gc():  # the request is over: a worker's pause again
        assert not gc.isenabled()
    assert gc.isenabled()


def collector_while_storing(store: Callable[[], object]) -> list[bool]:
    """Whether the collector was on each time a store of runs began (as it resolves builds)."""
    seen: list[bool] = []

    def profile(frame, event, arg) -> None:
        if event == "call" and frame.f_code is resolve_builds.__code__:
            seen.append(gc.isenabled())

    sys.setprofile(profile)
    try:
        store()
    finally:
        sys.setprofile(None)
    return seen


RUNS = sessions_doc(run("s-1", ago(hours=3), end=ended()), run("s-2", ago(hours=2)))


@pytest.mark.django_db
def test_an_upload_stored_in_its_request_leaves_the_collector_on(collector_on, upload):
    responses = []
    seen = collector_while_storing(lambda: responses.append(upload(RUNS)))
    assert responses[0].json()["status"] == "done"  # stored in the request (embedded backend)
    assert seen == [True]


@pytest.mark.django_db
def test_the_same_runs_stored_by_a_worker_pause_it(collector_on, app):
    reports = parse_sessions_document(RUNS).sessions
    assert collector_while_storing(lambda: store_sessions(app, reports)) == [False]
    assert gc.isenabled()
