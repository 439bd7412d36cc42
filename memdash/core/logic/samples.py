"""The mean, quantiles and median of a sample of numbers (pure: no Django).

One definition for every floor: build compare's spreads (`compare.logic.stats`) and a build's
statistics per snapshot (`allocations.logic.per_snapshot`) read the same median.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def quantile(values: Sequence[float], q: float) -> float | None:
    """The q-quantile by linear interpolation between order statistics (numpy's default and
    R's type 7): position q * (n - 1) in the sorted values."""
    if not values:
        return None
    return sorted_quantile(sorted(values), q)


def sorted_quantile(ordered: Sequence[float], q: float) -> float:
    """`quantile` of a sample already in ascending order (and not empty)."""
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values: Sequence[float]) -> float | None:
    """The middle value; the mean of the two middle ones for an even number of values."""
    return quantile(values, 0.5)
