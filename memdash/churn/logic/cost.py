"""Allocator churn: how much allocator work a scenario does, and how it changes between builds.

Pure (no Django). After Kudrjavets et al., "Quantifying daily evolution of mobile software based
on memory allocator churn" (MobileSoft '22): counting allocator calls between two markers on one
thread varies far less from run to run than the scenario's elapsed time, so a change in it is
a change in the code, not noise. The cost of one call is

    w(f) · log2(b)        f: the allocator function, b: the bytes it was asked for

with weights calloc 2, free 1, malloc 1, realloc 3 by default (editable per app), and a call of
0 or 1 byte costs nothing (log2 1 = 0, and log2 0 is taken as 0). Functions without a weight cost
nothing until the app gives them one; they are still counted.

The churn of a scenario is the sum over its calls. Since the sum is linear, it can be computed
from the calls themselves or from per-function sums (count, bytes, log2_bytes = Σ log2 b), which
is what memdash stores: changing the weights then recomputes every build's churn.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

DEFAULT_WEIGHTS: dict[str, float] = {"calloc": 2.0, "free": 1.0, "malloc": 1.0, "realloc": 3.0}


@dataclass(frozen=True)
class FunctionSums:
    """One allocator function's calls in one scenario run."""

    count: int
    bytes: int
    log2_bytes: float  # Σ log2(b) over the calls, with calls of 0 or 1 byte adding 0

    def __add__(self, other: FunctionSums) -> FunctionSums:
        return FunctionSums(
            self.count + other.count, self.bytes + other.bytes, self.log2_bytes + other.log2_bytes
        )


def call_log2(size: int) -> float:
    """log2 of a call's size; a call of 0 or 1 byte adds nothing (log2 1 = 0; log2 0 would be
    -inf, and a zero-byte call does no allocator work worth counting)."""
    return math.log2(size) if size > 1 else 0.0


def call_cost(function: str, size: int, weights: Mapping[str, float]) -> float:
    return weights.get(function, 0.0) * call_log2(size)


def sums_from_calls(calls: Iterable[tuple[str, int]]) -> dict[str, FunctionSums]:
    """Raw `[fn, bytes]` pairs reduced to what is stored."""
    counts: dict[str, int] = {}
    sizes: dict[str, int] = {}
    logs: dict[str, float] = {}
    for function, size in calls:
        counts[function] = counts.get(function, 0) + 1
        sizes[function] = sizes.get(function, 0) + size
        logs[function] = logs.get(function, 0.0) + call_log2(size)
    return {f: FunctionSums(counts[f], sizes[f], logs[f]) for f in counts}


def churn_of_calls(calls: Iterable[tuple[str, int]], weights: Mapping[str, float]) -> float:
    return math.fsum(call_cost(function, size, weights) for function, size in calls)


def churn_of_sums(functions: Mapping[str, FunctionSums], weights: Mapping[str, float]) -> float:
    return math.fsum(weights.get(f, 0.0) * sums.log2_bytes for f, sums in functions.items())


def max_log2_bytes(count: int, total_bytes: int) -> float:
    """The largest Σ log2 b that `count` calls of `total_bytes` bytes can have: log2 is concave,
    so the sum is largest when all calls are the same size (Jensen), count · log2(bytes/count).
    Used to refuse per-function sums that cannot come from real calls."""
    if count <= 0:
        return 0.0
    mean = total_bytes / count
    return count * math.log2(mean) if mean > 1 else 0.0


# --- statistics over runs ---------------------------------------------------------------------


@dataclass(frozen=True)
class Spread:
    """A sample of runs: its median, range, and coefficient of variation."""

    runs: int
    median: float
    low: float
    high: float
    cv: float | None  # sample standard deviation / mean; None below two runs or for a zero mean

    @property
    def range(self) -> float:
        return self.high - self.low


def coefficient_of_variation(values: Sequence[float]) -> float | None:
    """Sample standard deviation over mean: how noisy a measure is, comparable across measures
    of different units (churn against milliseconds)."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    if mean == 0:
        return None
    return statistics.stdev(values) / mean


def spread_of(values: Sequence[float]) -> Spread | None:
    if not values:
        return None
    return Spread(
        runs=len(values),
        median=statistics.median(values),
        low=min(values),
        high=max(values),
        cv=coefficient_of_variation(values),
    )


def steadiness(churn_cv: float | None, elapsed_cv: float | None) -> float | None:
    """How many times steadier churn is than elapsed time (elapsed CV / churn CV); the method's
    whole argument is that this is well above 1. None when either is unknown; infinite when
    churn did not vary at all while time did."""
    if churn_cv is None or elapsed_cv is None:
        return None
    if churn_cv == 0:
        return math.inf if elapsed_cv > 0 else None
    return elapsed_cv / churn_cv


# --- change between builds --------------------------------------------------------------------


@dataclass(frozen=True)
class ScenarioChange:
    scenario: str
    previous: float | None  # median churn in the build compared against; None: not measured
    current: float
    change_percent: float | None  # None when there is nothing to compare against
    regressed: bool


def change_percent(previous: float, current: float) -> float | None:
    """Relative change in percent; None when the previous value is 0 (any growth from nothing is
    infinite, no growth is no change and returns 0)."""
    if previous == 0:
        return 0.0 if current == 0 else None
    return (current - previous) / previous * 100.0


def is_regression(previous: float | None, current: float, threshold_percent: float) -> bool:
    """Churn grew past the threshold. Growth from zero churn counts as past any threshold; a
    scenario not measured before is new, not a regression."""
    if previous is None:
        return False
    change = change_percent(previous, current)
    if change is None:
        return current > 0
    return change > threshold_percent


def compare_scenario(
    scenario: str, previous: float | None, current: float, threshold_percent: float
) -> ScenarioChange:
    return ScenarioChange(
        scenario=scenario,
        previous=previous,
        current=current,
        change_percent=None if previous is None else change_percent(previous, current),
        regressed=is_regression(previous, current, threshold_percent),
    )


def rank_changes(changes: Iterable[ScenarioChange]) -> list[ScenarioChange]:
    """Largest growth first: growth from zero, then by change (percent) descending; scenarios
    with nothing to compare against last; ties by name so the order is stable."""

    def order(change: ScenarioChange) -> tuple[int, float, str]:
        if change.previous is None:
            return (2, 0.0, change.scenario)
        if change.change_percent is None:
            return (0, 0.0, change.scenario)
        return (1, -change.change_percent, change.scenario)

    return sorted(changes, key=order)
