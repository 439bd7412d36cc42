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
from dataclasses import dataclass
from itertools import combinations

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
    ordered = sorted(values)
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
    return Spread(
        n=len(values),
        mean=mean(values),
        median=median(values),
        q1=quantile(values, 0.25),
        q3=quantile(values, 0.75),
        minimum=min(values) if values else None,
        maximum=max(values) if values else None,
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
    n = n1 + n2
    tie_term = sum(t**3 - t for t in ties) / (n * (n - 1))
    variance = n1 * n2 / 12.0 * ((n + 1) - tie_term)
    if variance <= 0:  # every value tied: no evidence of a difference
        return 1.0
    z = max(abs(u - n1 * n2 / 2.0) - 0.5, 0.0) / math.sqrt(variance)
    return min(1.0, math.erfc(z / math.sqrt(2.0)))  # 2 * (1 - Phi(z))


def mann_whitney_u(x: Sequence[float], y: Sequence[float]) -> RankTest:
    """Two-sided Mann-Whitney U test of x against y."""
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        return RankTest(u=0.0, n1=n1, n2=n2, p_value=None, method="none")
    ranks2, ties = doubled_midranks(list(x) + list(y))
    u2 = sum(ranks2[:n1]) - n1 * (n1 + 1)  # twice R1 - n1(n1+1)/2
    u = u2 / 2
    if n1 <= EXACT_MAX_SIZE and n2 <= EXACT_MAX_SIZE:
        return RankTest(u=u, n1=n1, n2=n2, p_value=_exact_p_value(ranks2, n1, u2), method="exact")
    p = _asymptotic_p_value(u, n1, n2, ties)
    return RankTest(u=u, n1=n1, n2=n2, p_value=p, method="asymptotic")


# ---- comparing two samples (build compare) ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SampleComparison:
    base: Spread
    target: Spread
    delta_mean: float | None
    delta_median: float | None
    test: RankTest

    @property
    def p_value(self) -> float | None:
        return self.test.p_value

    def significant(self, alpha: float = DEFAULT_ALPHA) -> bool:
        return self.test.significant(alpha)


def compare_samples(base: Sequence[float], target: Sequence[float]) -> SampleComparison:
    """Describe both samples, their deltas (target minus base) and the rank test between them."""
    b, t = describe(base), describe(target)
    return SampleComparison(
        base=b,
        target=t,
        delta_mean=None if b.mean is None or t.mean is None else t.mean - b.mean,
        delta_median=None if b.median is None or t.median is None else t.median - b.median,
        test=mann_whitney_u(target, base),
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
