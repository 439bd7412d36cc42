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
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import combinations, repeat
from operator import sub

# Both samples at most this large: the p-value is computed exactly by enumerating every way of
# splitting the pooled ranks (C(16, 8) = 12,870 splits at most), ties included.
EXACT_MAX_SIZE = 8
DEFAULT_ALPHA = 0.05
DEFAULT_MAX_GROWTH = "5%"  # the CI gate's limit when none is given


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def quantile(values: Sequence[float], q: float) -> float | None:
    """The q-quantile by linear interpolation between order statistics (numpy's default and
    R's type 7): position q * (n - 1) in the sorted values."""
    if not values:
        return None
    return _sorted_quantile(sorted(values), q)


def _sorted_quantile(ordered: Sequence[float], q: float) -> float:
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values: Sequence[float]) -> float | None:
    return quantile(values, 0.5)


@dataclass(frozen=True, slots=True)
class Spread:
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
        median=_sorted_quantile(ordered, 0.5),
        q1=_sorted_quantile(ordered, 0.25),
        q3=_sorted_quantile(ordered, 0.75),
        minimum=ordered[0],
        maximum=ordered[-1],
    )


# ---- Mann-Whitney U -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RankTest:
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
    doubled units keeps every comparison in integers."""
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
    n = n1 + n2
    tie_term = tie_sum / (n * (n - 1))
    variance = n1 * n2 / 12.0 * ((n + 1) - tie_term)
    if variance <= 0:  # every value tied: no evidence of a difference
        return 1.0
    z = max(abs(u - n1 * n2 / 2.0) - 0.5, 0.0) / math.sqrt(variance)
    return min(1.0, math.erfc(z / math.sqrt(2.0)))  # 2 * (1 - Phi(z))


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


# ---- comparing two samples (build compare) ------------------------------------------------------


@dataclass(frozen=True)
class SampleComparison:
    base: Spread
    target: Spread
    delta_mean: float | None
    delta_median: float | None
    # (target, base, each sorted): what the rank test needs, run only when asked for (build
    # compare shows the test on bytes, never the one on counts)
    samples: tuple[Sequence[float], Sequence[float], Sequence[float], Sequence[float]] = field(
        repr=False, compare=False
    )

    @cached_property
    def test(self) -> RankTest:
        return _mann_whitney_u(*self.samples)

    @property
    def p_value(self) -> float | None:
        return self.test.p_value

    def significant(self, alpha: float = DEFAULT_ALPHA) -> bool:
        return self.test.significant(alpha)


def compare_samples(base: Sequence[float], target: Sequence[float]) -> SampleComparison:
    """Describe both samples, their deltas (target minus base) and the rank test between them."""
    base_sorted, target_sorted = sorted(base), sorted(target)
    b, t = _spread(base_sorted, mean(base)), _spread(target_sorted, mean(target))
    return SampleComparison(
        base=b,
        target=t,
        delta_mean=None if b.mean is None or t.mean is None else t.mean - b.mean,
        delta_median=None if b.median is None or t.median is None else t.median - b.median,
        samples=(target, base, target_sorted, base_sorted),
    )


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


def parse_growth_limit(text: str) -> GrowthLimit:
    """'5%', '2.5 %', '1048576', '512KiB', '1.5MiB', '10MB' (KB/MB/GB decimal, KiB/MiB/GiB
    binary). Raises ValueError with a readable message otherwise."""
    match = _LIMIT.match(text or "")
    if not match:
        raise ValueError(f"max growth {text!r} is neither a percentage ('5%') nor bytes ('1MiB')")
    number, unit = float(match.group(1)), match.group(2).lower()
    if unit == "%":
        return GrowthLimit(percent=number)
    if unit not in _UNITS:
        raise ValueError(f"max growth {text!r}: unknown unit {match.group(2)!r}")
    return GrowthLimit(bytes=round(number * _UNITS[unit]))
