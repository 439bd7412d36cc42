"""The collector pause of bulk ingest: one switch for the whole process, so overlapping pauses
(ingests in threads) turn it back on only when the last one ends, and only if it was on."""

from __future__ import annotations

import gc
import threading

import pytest

from memdash.core.bulk import paused_gc


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
