"""Statistics over per-snapshot samples, and the growth limit of the CI gate (pure, no Django).

Builds are compared over their snapshots: each snapshot gives one value per category (its
persistent bytes, 0 when the category has nothing in it), and two builds differ when the values
of one tend to lie above those of the other beyond the spread between snapshots. The test for
that is the Mann-Whitney U rank test (Wilcoxon rank-sum): it assumes no distribution, so one
outlier device neither creates nor hides a difference.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache, lru_cache, partial
from itertools import combinations, repeat
from math import erfc, sqrt
from operator import sub
from typing import NamedTuple, cast

from memdash.compare.logic.run_merge import IntColumn, merged
from memdash.core.logic.samples import mean, sorted_quantile

# Both samples at most this large: the p-value is computed exactly by enumerating every way of
# splitting the pooled ranks (C(16, 8) = 12,870 splits at most), ties included.
EXACT_MAX_SIZE = 8
DEFAULT_ALPHA = 0.05
DEFAULT_MAX_GROWTH = "5%"  # the CI gate's limit when none is given
SQRT2 = sqrt(2.0)


class Spread(NamedTuple):
    """Immutable like a frozen dataclass, but a tuple: build compare makes four for each of
    thousands of categories, and a frozen dataclass sets each field through
    object.__setattr__, several times slower to make."""

    n: int
    mean: float | None
    median: float | None
    q1: float | None
    q3: float | None
    minimum: float | None
    maximum: float | None

    @property
    def iqr(self) -> float | None:
        return None if self.q1 is None or self.q3 is None else self.q3 - self.q1


def describe(values: Sequence[float]) -> Spread:
    """Mean, median, quartiles and range of a sample."""
    return _spread(sorted(values), mean(values))


def _spread(ordered: Sequence[float], average: float | None) -> Spread:
    """The Spread of a sample already in ascending order (sorted once, not once per quantile:
    build compare describes four samples for each of thousands of categories); the mean is
    given, summed in the sample's own order."""
    if not ordered:
        return Spread(n=0, mean=None, median=None, q1=None, q3=None, minimum=None, maximum=None)
    return Spread(
        n=len(ordered),
        mean=average,
        median=sorted_quantile(ordered, 0.5),
        q1=sorted_quantile(ordered, 0.25),
        q3=sorted_quantile(ordered, 0.75),
        minimum=ordered[0],
        maximum=ordered[-1],
    )


# ---- Mann-Whitney U -----------------------------------------------------------------------------


class RankTest(NamedTuple):
    u: float  # U of the first sample: pairs (x, y) with x > y, ties counting one half
    n1: int
    n2: int
    p_value: float | None  # two-sided; None when a sample is empty
    method: str  # "exact", "asymptotic" or "none"

    def significant(self, alpha: float = DEFAULT_ALPHA) -> bool:
        return self.p_value is not None and self.p_value < alpha


def doubled_midranks(values: Sequence[float]) -> tuple[list[int], list[int]]:
    """Twice the rank of each value (ties get the mean of their ranks, so twice it is an
    integer), and the sizes of the tie groups."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks2 = [0] * len(values)
    ties = []
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        # ranks start+1 .. end+1 (1-based); their mean, doubled: (start+1) + (end+1)
        for k in range(start, end + 1):
            ranks2[order[k]] = start + end + 2
        ties.append(end - start + 1)
        start = end + 1
    return ranks2, ties


def _exact_p_value(ranks2: Sequence[int], n1: int, u2_observed: int) -> float:
    """Two-sided exact p: the share of all splits of the pooled (doubled) ranks into samples of
    n1 and n2 whose U lies at least as far from its mean n1*n2/2 as the observed one. Working in
    doubled units keeps every comparison in integers. It depends on the ranks only as a multiset,
    so it is kept per sorted ranks: a diff tree tests every node of a level, and nodes of the
    same snapshots share their tie structure (8 against 8 is 12,870 splits, ~10 ms)."""
    return _exact_p_sorted(tuple(sorted(ranks2)), n1, u2_observed)


@lru_cache(maxsize=4096)
def _exact_p_sorted(ranks2: tuple[int, ...], n1: int, u2_observed: int) -> float:
    n2 = len(ranks2) - n1
    offset2 = n1 * (n1 + 1)  # twice n1(n1+1)/2
    mean2 = n1 * n2  # twice n1*n2/2
    observed = abs(u2_observed - mean2)
    extreme = total = 0
    for chosen in combinations(ranks2, n1):
        total += 1
        if abs(sum(chosen) - offset2 - mean2) >= observed:
            extreme += 1
    return extreme / total


def _asymptotic_p_value(u: float, n1: int, n2: int, ties: Sequence[int]) -> float:
    """Normal approximation with tie correction of the variance and continuity correction."""
    return _normal_p_value(u, n1, n2, sum(t**3 - t for t in ties))


def _normal_p_value(u: float, n1: int, n2: int, tie_sum: int) -> float:
    """The normal approximation given the sum over tie groups of t^3 - t."""
    pairs, variance_scale, n_plus_1, mean_u = _normal_constants(n1, n2)
    variance = variance_scale * (n_plus_1 - tie_sum / pairs)
    if variance <= 0:  # every value tied: no evidence of a difference
        return 1.0
    deviation = abs(u - mean_u) - 0.5
    z = (deviation if deviation > 0.0 else 0.0) / sqrt(variance)
    p = erfc(z / SQRT2)  # 2 * (1 - Phi(z))
    return p if p < 1.0 else 1.0


@cache
def _normal_constants(n1: int, n2: int) -> tuple[int, float, int, float]:
    """What the normal approximation's variance and mean of U take from the sample sizes
    alone: n(n - 1), n1 n2 / 12, n + 1, n1 n2 / 2 (build compare tests thousands of categories
    of the same two builds)."""
    n = n1 + n2
    return n * (n - 1), n1 * n2 / 12.0, n + 1, n1 * n2 / 2.0


def mann_whitney_u(x: Sequence[float], y: Sequence[float]) -> RankTest:
    """Two-sided Mann-Whitney U test of x against y."""
    return _mann_whitney_u(x, y, None, None)


def _mann_whitney_u(
    x: Sequence[float],
    y: Sequence[float],
    x_sorted: Sequence[float] | None,
    y_sorted: Sequence[float] | None,
) -> RankTest:
    """`mann_whitney_u`, reusing the samples sorted when the caller has them."""
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        return RankTest(u=0.0, n1=n1, n2=n2, p_value=None, method="none")
    if n1 > EXACT_MAX_SIZE or n2 > EXACT_MAX_SIZE:
        return _asymptotic_test(
            x,
            y,
            sorted(x) if x_sorted is None else x_sorted,
            sorted(y) if y_sorted is None else y_sorted,
        )
    ranks2, ties = doubled_midranks(list(x) + list(y))
    u2 = sum(ranks2[:n1]) - n1 * (n1 + 1)  # twice R1 - n1(n1+1)/2
    u = u2 / 2
    if n1 <= EXACT_MAX_SIZE and n2 <= EXACT_MAX_SIZE:
        return RankTest(u=u, n1=n1, n2=n2, p_value=_exact_p_value(ranks2, n1, u2), method="exact")
    p = _asymptotic_p_value(u, n1, n2, ties)
    return RankTest(u=u, n1=n1, n2=n2, p_value=p, method="asymptotic")


def _asymptotic_test(
    x: Sequence[float], y: Sequence[float], x_sorted: Sequence[float], y_sorted: Sequence[float]
) -> RankTest:
    """The large-sample test without ranking the pooled values one by one in Python (build
    compare runs thousands of these). In the pooled sorted values, a value's last position + 1
    and its first position are, added, twice its mid-rank minus 1; both come from dicts built
    in C (a later position overwrites an earlier one), and their difference is the size of the
    value's tie group."""
    n1, n2 = len(x), len(y)
    n = n1 + n2
    pooled = sorted([*x_sorted, *y_sorted])  # two sorted runs: merged, not sorted again
    last = dict(zip(pooled, range(1, n + 1), strict=True))  # value -> its last 1-based position
    if len(last) == n:  # no ties: every rank is its position, tie sum 0
        u2 = 2 * sum(map(last.__getitem__, x)) - n1 * (n1 + 1)
        tie_sum = 0
    else:
        # value -> its first 0-based position
        first = dict(zip(reversed(pooled), range(n - 1, -1, -1), strict=True))
        u2 = sum(map(last.__getitem__, x)) + sum(map(first.__getitem__, x)) + n1 - n1 * (n1 + 1)
        # sum of t^3 - t over the tie groups, as sum(t^3) - n (the group sizes add up to n);
        # `first` holds the values in descending order, `last` in ascending
        sizes = map(sub, last.values(), reversed(first.values()))
        tie_sum = sum(map(pow, sizes, repeat(3))) - n
    u = u2 / 2
    p = _normal_p_value(u, n1, n2, tie_sum)
    return RankTest(u=u, n1=n1, n2=n2, p_value=p, method="asymptotic")


class Runs(NamedTuple):
    """A sample of integers as its distinct values in ascending order and how often each occurs
    (runs of equal values: build compare's samples are mostly ties, above all the zeros of the
    snapshots without a category), with the sum of t^3 over the run lengths t (its ties' share
    of the rank test's variance). What the rank test needs of one sample, so it can be worked
    out once per build and stored; any sequence of these three works where Runs is read."""

    values: Sequence[int]
    counts: Sequence[int]
    cubes: int


def sorted_runs(ordered: Sequence[int]) -> Runs:
    """The runs of a sample in ascending order, counted in C: a Counter keeps its values in the
    order they first come, here ascending."""
    runs = Counter(ordered)
    counts = list(runs.values())
    return Runs(list(runs), counts, sum(map(pow, counts, repeat(3))))


# Runs, or any sequence of its three parts (values, counts, sum of cubed counts).
RunsLike = tuple[IntColumn, IntColumn, int]


def _expanded(values: IntColumn, counts: IntColumn) -> list[int]:
    return [v for v, c in zip(values, counts, strict=True) for _ in range(c)]


def runs_rank_test(x: RunsLike, n1: int, y: RunsLike, n2: int) -> RankTest:
    """`mann_whitney_u` of two samples of n1 and n2 values given as Runs: the same U, p-value
    and method, from `runs_u_p`."""
    return RankTest(*runs_u_p(x, n1, y, n2))


def runs_u_p(
    x: RunsLike, n1: int, y: RunsLike, n2: int
) -> tuple[float, int, int, float | None, str]:
    """(u, n1, n2, p-value, method) of `mann_whitney_u` of two samples of n1 and n2 values given
    as Runs, without making a RankTest (build compare runs thousands). The same U, tie sum and
    p as ranking them value by value, in one merge of the two runs (build compare's samples
    have a few distinct values each: a loop over them beats any call per value). Per run of x
    (value v, length a), with the y values below v counted so far: those count 2a each towards
    twice U, and a run of y equal to v (length b) a each; pooled, the two runs make one tie
    group of a + b, whose (a + b)^3 = a^3 + b^3 + 3ab(a + b)."""
    if n1 == 0 or n2 == 0:
        return 0.0, n1, n2, None, "none"
    x_values, x_counts, x_cubes = x
    y_values, y_counts, y_cubes = y
    if n1 <= EXACT_MAX_SIZE and n2 <= EXACT_MAX_SIZE:
        x_all, y_all = _expanded(x_values, x_counts), _expanded(y_values, y_counts)
        return cast(
            "tuple[float, int, int, float | None, str]",
            tuple(_mann_whitney_u(x_all, y_all, x_all, y_all)),
        )
    u, p = merged_u_p(*merged(x_values, x_counts, y_values, y_counts), x_cubes, y_cubes, n1, n2)
    return u, n1, n2, p, "asymptotic"


def merged_u_p(
    u2: int, both: int, x_cubes: int, y_cubes: int, n1: int, n2: int
) -> tuple[float, float]:
    """(U, asymptotic p-value) from a merge of two samples' runs (`run_merge`): twice U, and the
    sum of ab(a + b) over the values both have, which with each sample's sum of t^3 makes the
    tie sum."""
    u = u2 / 2
    return u, _normal_p_value(u, n1, n2, x_cubes + y_cubes + 3 * both - (n1 + n2))


def with_zeros(ordered: Sequence[int], zeros: int) -> Sequence[int]:
    """A sample in ascending order with `zeros` more zeros put in their place."""
    if not zeros:
        return ordered
    if not ordered or ordered[0] >= 0:
        return [*repeat(0, zeros), *ordered]
    at = bisect_left(ordered, 0)
    return [*ordered[:at], *repeat(0, zeros), *ordered[at:]]


class SampleSummary(NamedTuple):
    """What comparing a sample with another needs of it alone: its spread and its runs."""

    spread: Spread
    runs: Runs


def summarize_sorted(ordered: Sequence[int], zeros: int = 0) -> SampleSummary:
    """The summary of a sample of integers given as its values in ascending order plus a number
    of zeros left out of them. Integers: their sum, hence the mean, does not depend on the order
    in which they are added, so it is the same as `describe` gives."""
    full = with_zeros(ordered, zeros)
    return SampleSummary(
        spread=_spread(full, sum(ordered) / len(full) if full else None),
        runs=_with_zero_run(sorted_runs(ordered), zeros),
    )


def _with_zero_run(runs: Runs, zeros: int) -> Runs:
    """The runs of a sample with `zeros` more zeros: one run longer, or one more run (the zeros
    are most of build compare's samples: counted, not run through `sorted_runs`)."""
    if not zeros:
        return runs
    values, counts, cubes = list(runs.values), list(runs.counts), runs.cubes
    at = bisect_left(values, 0)
    if at < len(values) and values[at] == 0:
        cubes -= counts[at] ** 3
        counts[at] += zeros
    else:
        values.insert(at, 0)
        counts.insert(at, zeros)
    return Runs(values, counts, cubes + counts[at] ** 3)


# ---- comparing two samples (build compare) ------------------------------------------------------


@dataclass(slots=True, eq=False)
class SampleComparison:
    """Not frozen (nothing changes it after it is made): a frozen dataclass sets each field
    through object.__setattr__, and build compare makes two of these per category."""

    base: Spread
    target: Spread
    delta_mean: float | None
    delta_median: float | None
    # the rank test of target against base, run only when asked for (build compare shows the
    # test on bytes, never the one on counts), unless given as found already
    rank_test: Callable[[], RankTest] | None = field(default=None, repr=False)
    found: RankTest | None = field(default=None, repr=False)

    @property
    def test(self) -> RankTest:
        if self.found is None:
            assert self.rank_test is not None  # made with one of rank_test and found
            self.found = self.rank_test()
        return self.found

    @property
    def p_value(self) -> float | None:
        return self.test.p_value

    def significant(self, alpha: float = DEFAULT_ALPHA) -> bool:
        return self.test.significant(alpha)


def _comparison(
    b: Spread,
    t: Spread,
    rank_test: Callable[[], RankTest] | None = None,
    found: RankTest | None = None,
) -> SampleComparison:
    return SampleComparison(
        b,
        t,
        None if b.mean is None or t.mean is None else t.mean - b.mean,
        None if b.median is None or t.median is None else t.median - b.median,
        rank_test,
        found,
    )


def compare_samples(base: Sequence[float], target: Sequence[float]) -> SampleComparison:
    """Describe both samples, their deltas (target minus base) and the rank test between them."""
    base_sorted, target_sorted = sorted(base), sorted(target)
    return _comparison(
        _spread(base_sorted, mean(base)),
        _spread(target_sorted, mean(target)),
        partial(_mann_whitney_u, target, base, target_sorted, base_sorted),
    )


def compare_spreads(
    base: Spread, target: Spread, rank_test: RankTest | Callable[[], RankTest]
) -> SampleComparison:
    """`compare_samples` of two samples described already, with the rank test between them,
    or what runs it when asked for (`runs_rank_test` on their runs)."""
    if isinstance(rank_test, RankTest):
        return _comparison(base, target, found=rank_test)
    return _comparison(base, target, rank_test)


# ---- growth limit (CI gate) ---------------------------------------------------------------------

_UNITS = {
    "": 1,
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
}
_LIMIT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(%|[a-z]*)\s*$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class GrowthLimit:
    """How much a value may grow: a percentage of its base, or a number of bytes."""

    percent: float | None = None
    bytes: int | None = None

    def __str__(self) -> str:
        return f"{self.percent:g}%" if self.percent is not None else f"{self.bytes} bytes"

    def allowed(self, base: float) -> float:
        """The largest growth allowed over `base` (a percentage of nothing is nothing)."""
        if self.percent is not None:
            return base * self.percent / 100.0
        return float(self.bytes or 0)

    def exceeded(self, base: float, target: float) -> bool:
        return target - base > self.allowed(base)


def parse_alpha(text: str) -> float:
    """A significance level: a number strictly between 0 and 1 ('0.05', '0.01'). Raises
    ValueError with a readable message otherwise."""
    try:
        alpha = float(text)
    except (TypeError, ValueError):
        alpha = math.nan
    if not 0 < alpha < 1:  # NaN fails too
        raise ValueError(f"alpha {text!r} is not a significance level between 0 and 1 (0.05)")
    return alpha


def parse_growth_limit(text: str) -> GrowthLimit:
    """'5%', '2.5 %', '1048576', '512KiB', '1.5MiB', '10MB' (KB/MB/GB decimal, KiB/MiB/GiB
    binary). Raises ValueError with a readable message otherwise."""
    match = _LIMIT.match(text or "")
    if not match:
        raise ValueError(f"max growth {text!r} is neither a percentage ('5%') nor bytes ('1MiB')")
    # Any number of digits is read (a percentage past a float's range is inf, bytes past 2^63
    # are 2^63: limits every growth stays within, as no size reaches them).
    number, unit = Decimal(match.group(1)), match.group(2).lower()
    if unit == "%":
        return GrowthLimit(percent=float(number))
    if unit not in _UNITS:
        raise ValueError(f"max growth {text!r}: unknown unit {match.group(2)!r}")
    return GrowthLimit(bytes=min(round(number * _UNITS[unit]), 2**63))
