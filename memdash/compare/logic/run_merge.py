"""The merge at the heart of the rank test on runs (`stats.runs_u_p`): for two samples given as
runs (distinct values ascending, with how often each occurs), twice the Mann-Whitney U of x and
the sum of ab(a + b) over the values both samples have (a, b: the two runs' lengths), from which
the tie correction follows. Pure: lists or arrays in, Python integers out.

Build compare tests every category of two builds: 2,000 categories of a build of 10,000
snapshots have a million runs, hundreds a category, and a merge per category cost 0.1 ms even
by arrays. `merged_by_category` merges all of them at once: every run keyed by (category,
value) as one 64-bit integer, one binary search of x's keys among y's, sums per category.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# A column of integers: a list, or an array over stored bytes (`summary.unpack_summary`)
IntColumn = Sequence[int] | np.ndarray
# (values, counts, starts) of the runs of several samples one after the other: sample i's
# runs are values[starts[i]:starts[i + 1]], counts likewise
Columns = tuple[IntColumn, IntColumn, IntColumn]

# Past this many runs in both samples one merge is done by arrays; below it by a loop, which
# costs less than the arrays' set-up (a diff tree tests thousands of nodes of a few runs each).
ARRAY_MERGE_RUNS = 64
_KEY_BITS = 62  # of a run's key: the category above, the value's offset below (no sign)


def merged(x_values: IntColumn, x_counts: IntColumn, y_values: IntColumn,
           y_counts: IntColumn) -> tuple[int, int]:  # fmt: skip
    """(twice U of x, the sum of ab(a + b) over the values both have) of two samples' runs."""
    if len(x_values) + len(y_values) > ARRAY_MERGE_RUNS:
        return merged_by_arrays(x_values, x_counts, y_values, y_counts)
    return merged_by_loop(x_values, x_counts, y_values, y_counts)


def merged_by_loop(x_values: IntColumn, x_counts: IntColumn, y_values: IntColumn,
                   y_counts: IntColumn) -> tuple[int, int]:  # fmt: skip
    """One merge of the runs. Per run of x (value v, length a), with the y values below v
    counted so far: those count 2a each towards twice U, and a run of y equal to v (length b)
    a each; pooled, the two runs make one tie group of a + b, whose (a + b)^3 = a^3 + b^3 +
    3ab(a + b)."""
    if isinstance(x_values, np.ndarray):  # a stored summary's columns: loop over Python ints
        x_values, x_counts = x_values.tolist(), np.asarray(x_counts).tolist()
    if isinstance(y_values, np.ndarray):
        y_values, y_counts = y_values.tolist(), np.asarray(y_counts).tolist()
    u2 = both = below = j = 0
    y_runs = len(y_values)
    for v, a in zip(x_values, x_counts, strict=True):
        while j < y_runs and y_values[j] < v:
            below += y_counts[j]
            j += 1
        if j < y_runs and y_values[j] == v:
            b = y_counts[j]
            u2 += a * (2 * below + b)
            both += a * b * (a + b)
        else:
            u2 += 2 * a * below
    return u2, both


def merged_by_arrays(x_values: IntColumn, x_counts: IntColumn, y_values: IntColumn,
                     y_counts: IntColumn) -> tuple[int, int]:  # fmt: skip
    """`merged_by_loop` by arrays: each run of x finds the y values below it and an equal run of
    y by a binary search. Counts are at most a build's snapshots, so the products fit."""
    zero = np.zeros(1, np.int64)
    u2, both = merged_by_category(
        (x_values, x_counts, [0, len(x_values)]), (y_values, y_counts, [0, len(y_values)]),
        zero, zero,
    )  # fmt: skip
    return int(u2[0]), int(both[0])


def merged_by_category(x: Columns, y: Columns, x_picks: np.ndarray,
                       y_picks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """`merged` of the pairs (sample x_picks[k] of x, sample y_picks[k] of y) for every k at
    once: (twice U, ab(a + b) summed) of each pair as int64 arrays. Every picked sample has at
    least one run. When the values of a pair do not fit the keys (a spread past 2^62 over the
    pairs' count), pair by pair by `merged`."""
    xv, xc, x_at = _picked(x, x_picks)
    yv, yc, y_at = _picked(y, y_picks)
    pairs = len(x_picks)
    low = min(int(xv.min(initial=0)), int(yv.min(initial=0)))
    spread = max(int(xv.max(initial=0)), int(yv.max(initial=0))) - low + 1
    shift = max(spread.bit_length(), 1)
    if shift + max(pairs.bit_length(), 1) > _KEY_BITS:
        return _pair_by_pair(xv, xc, x_at, yv, yc, y_at)
    x_pair = np.repeat(np.arange(pairs, dtype=np.int64), np.diff(x_at))
    x_keys = _keys(x_pair.copy(), xv, low, shift)
    y_keys = _keys(np.repeat(np.arange(pairs, dtype=np.int64), np.diff(y_at)), yv, low, shift)
    at = np.searchsorted(y_keys, x_keys)  # the first y run of the pair not below each x run
    y_below = np.concatenate((np.zeros(1, np.int64), np.cumsum(yc)))
    below = y_below[at]
    below -= y_below[y_at[x_pair]]  # the y values of the same pair below each x run
    u2 = 2 * np.add.reduceat(xc * below, x_at[:-1])
    # the x runs with an equal y run (few: byte totals are mostly distinct) add ab to twice U
    found = np.minimum(at, len(y_keys) - 1)
    hit = np.flatnonzero((at < len(y_keys)) & (y_keys[found] == x_keys))
    a, b, pair = xc[hit], yc[found[hit]], x_pair[hit]
    np.add.at(u2, pair, a * b)
    both = np.zeros(pairs, np.int64)
    np.add.at(both, pair, a * b * (a + b))
    return u2, both


def _keys(pair: np.ndarray, values: np.ndarray, low: int, shift: int) -> np.ndarray:
    """Each run's key, (pair << shift) | (value - low), made in place in `pair`."""
    pair <<= shift
    pair |= values - low if low else values
    return pair


def _picked(columns: Columns, picks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The runs of the picked samples one after the other (values, counts as int64) and where
    each starts (one more entry: the end)."""
    values = np.asarray(columns[0], np.int64)
    counts = np.asarray(columns[1], np.int64)
    starts = np.asarray(columns[2], np.int64)
    if len(picks) == len(starts) - 1 and (picks == np.arange(len(picks))).all():
        return values, counts, starts - starts[0]  # every sample in order: as they are
    first, lengths = starts[picks], starts[picks + 1] - starts[picks]
    at = np.concatenate((np.zeros(1, np.int64), np.cumsum(lengths)))
    index = np.repeat(first - at[:-1], lengths) + np.arange(at[-1], dtype=np.int64)
    return values[index], counts[index], at


def _pair_by_pair(xv: np.ndarray, xc: np.ndarray, x_at: np.ndarray, yv: np.ndarray,
                  yc: np.ndarray, y_at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    out = [
        merged_by_loop(
            xv[x_at[k] : x_at[k + 1]],
            xc[x_at[k] : x_at[k + 1]],
            yv[y_at[k] : y_at[k + 1]],
            yc[y_at[k] : y_at[k + 1]],
        )  # fmt: skip
        for k in range(len(x_at) - 1)
    ]
    return np.array([u for u, _ in out], np.int64), np.array([m for _, m in out], np.int64)
