"""The statistics of build compare, checked against values worked out by hand."""

import math

import pytest

from memdash.compare.logic.stats import (
    GrowthLimit,
    compare_samples,
    describe,
    doubled_midranks,
    mann_whitney_u,
    parse_growth_limit,
)
from memdash.core.logic.samples import median, quantile


def test_mean_median_quartiles():
    spread = describe([4, 1, 3, 2])
    assert spread.mean == 2.5  # 10 / 4
    assert spread.median == 2.5  # between 2 and 3
    # q1: position 0.25 * 3 = 0.75 -> 1 + 0.75 * (2 - 1); q3: position 2.25 -> 3 + 0.25 * (4 - 3)
    assert spread.q1 == 1.75
    assert spread.q3 == 3.25
    assert spread.iqr == 1.5
    assert (spread.minimum, spread.maximum) == (1, 4)
    assert median([7]) == 7
    assert median([5, 1, 9]) == 5
    assert quantile([], 0.5) is None
    assert describe([]).mean is None


def test_midranks_average_the_tied_positions():
    # sorted: 1 (rank 1), 2 2 2 (ranks 2, 3, 4 -> 3 each), 3 (5); doubled: 2, 6, 6, 6, 10
    assert doubled_midranks([2, 1, 2, 3, 2]) == ([6, 2, 6, 10, 6], [1, 3, 1])


def test_exact_without_ties():
    # [1,2,3] vs [4,5,6]: U = 0; of the C(6,3) = 20 splits only {1,2,3} (U=0) and {4,5,6} (U=9)
    # are as far from the mean 4.5 -> p = 2/20
    result = mann_whitney_u([1, 2, 3], [4, 5, 6])
    assert (result.u, result.method) == (0.0, "exact")
    assert result.p_value == pytest.approx(0.1)
    assert not result.significant()
    # two against two: 2 of C(4,2) = 6 splits are extreme -> 1/3
    assert mann_whitney_u([1, 2], [3, 4]).p_value == pytest.approx(1 / 3)
    # the other direction gives U' = n1*n2 - U and the same p
    other = mann_whitney_u([4, 5, 6], [1, 2, 3])
    assert other.u == 9.0 and other.p_value == pytest.approx(0.1)


def test_exact_with_ties():
    # pooled 1 2 2 | 2 3 4 -> ranks 1, 3, 3 | 3, 5, 6; R1 = 7, U = 7 - 3*4/2 = 1, mean 4.5.
    # Splits with |R1 - 6 - 4.5| >= 3.5, i.e. R1 <= 7 or R1 >= 14: {1,3,3} in 3 ways (two of the
    # three 3s) and its complements {3,5,6} in 3 ways -> p = 6/20
    result = mann_whitney_u([1, 2, 2], [2, 3, 4])
    assert result.u == 1.0
    assert result.p_value == pytest.approx(0.3)


def test_exact_five_against_five_is_significant():
    # fully separated 5 vs 5: 2 extreme splits of C(10,5) = 252 -> p = 2/252 = 0.0079
    result = mann_whitney_u([10, 11, 12, 13, 14], [20, 21, 22, 23, 24])
    assert result.p_value == pytest.approx(2 / 252)
    assert result.significant()


def test_asymptotic_without_ties():
    # 1..9 vs 10..18: U = 0, mean 81/2 = 40.5, variance 81 * 19 / 12 = 128.25,
    # z = (40.5 - 0.5) / sqrt(128.25) = 3.53208, p = erfc(z / sqrt 2) = 0.000412
    result = mann_whitney_u(range(1, 10), range(10, 19))
    assert result.method == "asymptotic"
    assert result.u == 0.0
    assert result.p_value == pytest.approx(math.erfc(40 / math.sqrt(128.25) / math.sqrt(2)))
    assert result.p_value == pytest.approx(0.000412, abs=1e-6)


def test_asymptotic_with_ties():
    # x: nine 0s; y: four 0s, five 5s. 13 zeros share ranks 1..13 (mean 7), the 5s 14..18.
    # R1 = 9 * 7 = 63, U = 63 - 45 = 18, mean 40.5.
    # tie term: (13^3 - 13 + 5^3 - 5) / (18 * 17) = 2304 / 306 = 7.5294
    # variance: 81 / 12 * (19 - 7.5294) = 77.4265; z = (22.5 - 0.5) / 8.79923 = 2.50022
    result = mann_whitney_u([0] * 9, [0] * 4 + [5] * 5)
    assert result.u == 18.0
    variance = 81 / 12 * (19 - 2304 / 306)
    z = 22.0 / math.sqrt(variance)
    assert result.p_value == pytest.approx(math.erfc(z / math.sqrt(2)))
    assert result.p_value == pytest.approx(0.01241, abs=1e-5)


def test_all_tied_and_empty():
    assert mann_whitney_u([3] * 10, [3] * 10).p_value == 1.0  # no variance: no evidence
    assert mann_whitney_u([3, 3], [3, 3]).p_value == 1.0  # every split is as extreme
    empty = mann_whitney_u([], [1, 2])
    assert empty.p_value is None and not empty.significant()


def test_compare_samples():
    comparison = compare_samples([100, 110, 90], [200, 210, 190, 220])
    assert comparison.base.mean == 100
    assert comparison.target.median == 205  # (200 + 210) / 2
    assert comparison.delta_mean == 105  # 205 - 100
    assert comparison.delta_median == 105
    # separated 3 vs 4: 2 of C(7,3) = 35 splits -> p = 0.0571, not below 0.05
    assert comparison.p_value == pytest.approx(2 / 35)
    assert not comparison.significant()
    assert comparison.significant(alpha=0.06)


@pytest.mark.parametrize(
    "text, limit",
    [
        ("5%", GrowthLimit(percent=5)),
        (" 2.5 % ", GrowthLimit(percent=2.5)),
        ("1048576", GrowthLimit(bytes=1048576)),
        ("512KiB", GrowthLimit(bytes=512 * 1024)),
        ("1.5MiB", GrowthLimit(bytes=1572864)),
        ("10MB", GrowthLimit(bytes=10_000_000)),
        ("3 b", GrowthLimit(bytes=3)),
    ],
)
def test_parse_growth_limit(text, limit):
    assert parse_growth_limit(text) == limit


@pytest.mark.parametrize("text", ["", "five", "-5%", "5 parsecs", "5%%"])
def test_parse_growth_limit_refuses(text):
    with pytest.raises(ValueError):
        parse_growth_limit(text)


def test_growth_limit_exceeded():
    five = GrowthLimit(percent=5)
    assert not five.exceeded(1000, 1050)  # exactly 5%: allowed
    assert five.exceeded(1000, 1051)
    assert not five.exceeded(1000, 900)
    assert five.exceeded(0, 1)  # anything over nothing is more than 5%
    assert str(five) == "5%"
    kib = GrowthLimit(bytes=1024)
    assert not kib.exceeded(0, 1024)
    assert kib.exceeded(10, 1035)
    assert str(kib) == "1024 bytes"
