"""Allocator churn, worked by hand: cost = Σ w(f) · log2(bytes); calls of 0 or 1 byte cost 0."""

import math

import pytest

from memdash.churn.logic.cost import (
    DEFAULT_WEIGHTS,
    FunctionSums,
    call_cost,
    churn_of_calls,
    churn_of_sums,
    compare_scenario,
    max_log2_bytes,
    rank_changes,
    spread_of,
    steadiness,
    sums_from_calls,
)

CALLS = [
    ("malloc", 64),  # 1 · log2 64 = 1 · 6 = 6
    ("free", 64),  # 1 · 6 = 6
    ("calloc", 16),  # 2 · log2 16 = 2 · 4 = 8
    ("realloc", 256),  # 3 · log2 256 = 3 · 8 = 24
    ("malloc", 0),  # zero bytes: 0
    ("malloc", 1),  # log2 1 = 0
    ("realloc", 0),  # realloc to 0 bytes (a free): 0
    ("posix_memalign", 4096),  # no weight by default: 0
]


def test_default_weights_are_the_papers():
    assert DEFAULT_WEIGHTS == {"calloc": 2, "free": 1, "malloc": 1, "realloc": 3}


def test_churn_of_calls_by_hand():
    # 6 + 6 + 8 + 24 + 0 + 0 + 0 + 0 = 44
    assert churn_of_calls(CALLS, DEFAULT_WEIGHTS) == 44


def test_zero_and_one_byte_calls_cost_nothing():
    for function in DEFAULT_WEIGHTS:
        assert call_cost(function, 0, DEFAULT_WEIGHTS) == 0
        assert call_cost(function, 1, DEFAULT_WEIGHTS) == 0
    assert call_cost("realloc", 2, DEFAULT_WEIGHTS) == 3  # 3 · log2 2 = 3


def test_edited_weights():
    weights = {**DEFAULT_WEIGHTS, "realloc": 1, "posix_memalign": 2}
    # 6 + 6 + 8 + 1 · 8 + 2 · log2 4096 = 6 + 6 + 8 + 8 + 24 = 52
    assert churn_of_calls(CALLS, weights) == 52


def test_function_sums_give_the_same_churn():
    sums = sums_from_calls(CALLS)
    # malloc: 3 calls, 64 + 0 + 1 = 65 bytes, log2 sum 6 + 0 + 0 = 6
    assert sums["malloc"] == FunctionSums(count=3, bytes=65, log2_bytes=6.0)
    assert sums["realloc"] == FunctionSums(count=2, bytes=256, log2_bytes=8.0)
    assert churn_of_sums(sums, DEFAULT_WEIGHTS) == 44


def test_uneven_sizes():
    # malloc 3 bytes and malloc 1000 bytes: log2 3 + log2 1000 = log2 3000 ≈ 11.5507
    calls = [("malloc", 3), ("malloc", 1000)]
    assert churn_of_calls(calls, DEFAULT_WEIGHTS) == pytest.approx(math.log2(3000))


def test_the_most_log2_bytes_calls_can_have():
    # 4 calls of 64 bytes in all: at most 4 · log2(16) = 16 (all 16 bytes)
    assert max_log2_bytes(4, 64) == 16
    assert max_log2_bytes(3, 2) == 0  # mean below 2 bytes: every call is 0 or 1 byte
    assert max_log2_bytes(0, 0) == 0


def test_spread_and_coefficient_of_variation():
    churn = spread_of([100.0, 102.0, 98.0])
    # median 100, range 98..102; sample sd = √((0² + 2² + 2²) / 2) = 2; cv = 2 / 100 = 0.02
    assert (churn.median, churn.low, churn.high, churn.runs) == (100, 98, 102, 3)
    assert churn.cv == pytest.approx(0.02)
    elapsed = spread_of([400.0, 500.0, 300.0])
    # sd = √((0 + 100² + 100²) / 2) = 100; cv = 100 / 400 = 0.25
    assert elapsed.cv == pytest.approx(0.25)
    # time is 0.25 / 0.02 = 12.5 times noisier than churn
    assert steadiness(churn.cv, elapsed.cv) == pytest.approx(12.5)
    assert spread_of([7.0]).cv is None  # one run has no variation to speak of
    assert spread_of([]) is None
    assert steadiness(0.0, 0.1) == math.inf


def test_regression_past_the_threshold():
    grew = compare_scenario("open_chat", previous=100, current=115, threshold_percent=10)
    assert grew.change_percent == pytest.approx(15) and grew.regressed
    small = compare_scenario("scroll", previous=100, current=105, threshold_percent=10)
    assert small.change_percent == pytest.approx(5) and not small.regressed
    at = compare_scenario("at", previous=100, current=110, threshold_percent=10)
    assert not at.regressed  # "past" the threshold: exactly 10 % is not past 10 %
    from_zero = compare_scenario("idle", previous=0, current=5, threshold_percent=10)
    assert from_zero.change_percent is None and from_zero.regressed
    new = compare_scenario("new", previous=None, current=50, threshold_percent=10)
    assert new.change_percent is None and not new.regressed
    fell = compare_scenario("send", previous=200, current=150, threshold_percent=10)
    assert fell.change_percent == pytest.approx(-25) and not fell.regressed


def test_ranking_by_change():
    changes = [
        compare_scenario("scroll", 100, 105, 10),
        compare_scenario("new", None, 50, 10),
        compare_scenario("open_chat", 100, 115, 10),
        compare_scenario("send", 200, 150, 10),
        compare_scenario("idle", 0, 5, 10),
    ]
    assert [c.scenario for c in rank_changes(changes)] == [
        "idle",  # from nothing
        "open_chat",  # +15 %
        "scroll",  # +5 %
        "send",  # -25 %
        "new",  # nothing to compare with
    ]
