"""All categories' rank-test merges at once (`compare.logic.run_merge.merged_by_category`): for
random samples with ties, values both samples share, negatives, categories a build lacks and
values too far apart for one key, each pair's twice U is twice the U of ranking every value
(`stats.mann_whitney_u`), and its sum of ab(a + b) the loop's merge of the same runs."""

from __future__ import annotations

import random

import numpy as np
import pytest

from memdash.compare.logic.run_merge import merged_by_category, merged_by_loop
from memdash.compare.logic.stats import mann_whitney_u, sorted_runs


def columns(samples: list[list[int]]) -> tuple[list[int], list[int], list[int]]:
    """The runs of each sample one after the other, as a stored summary lays them out."""
    values: list[int] = []
    counts: list[int] = []
    starts = [0]
    for sample in samples:
        runs = sorted_runs(sorted(sample))
        values += runs.values
        counts += runs.counts
        starts.append(len(values))
    return values, counts, starts


@pytest.mark.parametrize(("seed", "spread"), [(1, 50), (2, 5), (3, 10**6), (4, 2**62)])
def test_every_pair_merged_at_once_is_each_merged_alone(seed, spread):
    rng = random.Random(seed)
    xs = [[rng.randint(-spread, spread) for _ in range(rng.randint(1, 60))] for _ in range(25)]
    ys = [[rng.randint(-spread, spread) for _ in range(rng.randint(1, 60))] for _ in range(20)]
    # pairs as build compare makes them: some samples picked twice, some never
    x_picks = np.array([rng.randrange(len(xs)) for _ in range(40)], np.int64)
    y_picks = np.array([rng.randrange(len(ys)) for _ in range(40)], np.int64)
    x, y = columns(xs), columns(ys)
    u2s, boths = merged_by_category(x, y, x_picks, y_picks)
    for k, (i, j) in enumerate(zip(x_picks.tolist(), y_picks.tolist(), strict=True)):
        sx, sy = sorted_runs(sorted(xs[i])), sorted_runs(sorted(ys[j]))
        assert int(u2s[k]) == 2 * mann_whitney_u(xs[i], ys[j]).u
        assert (int(u2s[k]), int(boths[k])) == merged_by_loop(
            sx.values, sx.counts, sy.values, sy.counts
        )


def test_a_pair_with_every_value_shared_and_one_alone():
    # x: 0 x3, 5 x2; y: 0 x1, 5 x1. x's 0s: 1 y value tied each (a = 3, b = 1: 3 towards 2U);
    # x's 5s: 1 y below and 1 tied (a = 2: 2 * (2 * 1 + 1) = 6). 2U = 9; ab(a + b): 12 + 6.
    # Beside it, x 7 x1 against y 1 x1: 2U = 2, nothing shared.
    x = ([0, 5, 7], [3, 2, 1], [0, 2, 3])
    y = ([0, 5, 1], [1, 1, 1], [0, 2, 3])
    u2s, boths = merged_by_category(x, y, np.array([0, 1]), np.array([0, 1]))
    assert (u2s.tolist(), boths.tolist()) == ([9, 2], [18, 0])
