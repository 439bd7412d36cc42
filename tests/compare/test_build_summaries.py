"""Build compare from per-build summaries (spreads and runs): the same figures as ranking every
snapshot's value, worked out by hand, with ties and with categories missing from snapshots
(zeros) or from a whole build."""

from __future__ import annotations

import math
import struct
import zlib

import numpy as np
import orjson
import pytest
import zstandard

from memdash.compare.logic.build_rows import (
    ROW_FIELDS,
    build_compare_row,
    compare_build_summaries,
    compare_build_tables,
)
from memdash.compare.logic.gate import check_growth, check_growth_of, gate_items
from memdash.compare.logic.run_merge import ARRAY_MERGE_RUNS
from memdash.compare.logic.stats import (
    GrowthLimit,
    Runs,
    mann_whitney_u,
    runs_rank_test,
    sorted_runs,
    summarize_sorted,
    with_zeros,
)
from memdash.compare.logic.summary import (
    pack_summary,
    summarize_build,
    unpack_count_columns,
    unpack_summary,
)


def test_runs_of_a_sorted_sample():
    # 0 0 0 5 5 7: runs 0 x3, 5 x2, 7 x1; sum of t^3 = 27 + 8 + 1
    assert sorted_runs([0, 0, 0, 5, 5, 7]) == Runs([0, 5, 7], [3, 2, 1], 36)
    assert sorted_runs([]) == Runs([], [], 0)


def test_zeros_go_in_their_place():
    assert with_zeros([5, 7], 2) == [0, 0, 5, 7]
    assert with_zeros([-3, 2], 2) == [-3, 0, 0, 2]
    assert with_zeros([-3, 0], 1) == [-3, 0, 0]
    spread, runs = summarize_sorted([-3, 2], 2)  # -3 0 0 2
    assert (spread.n, spread.mean, spread.median, spread.minimum, spread.maximum) == (
        4,
        -0.25,  # -1 / 4
        0.0,
        -3,
        2,
    )
    # q1 at position 0.75: -3 + 0.75 * 3; q3 at 2.25: 0 + 0.25 * 2
    assert (spread.q1, spread.q3) == (-0.75, 0.5)
    assert runs == Runs([-3, 0, 2], [1, 2, 1], 10)


def test_rank_test_on_runs_with_zeros_left_out():
    # test_stats' asymptotic example: x nine 0s; y four 0s and five 5s, the 0s left out of the
    # values and counted. U = 18, tie sum 13^3 - 13 + 5^3 - 5 = 2304, p = 0.01241
    _, x = summarize_sorted([], 9)
    _, y = summarize_sorted([5] * 5, 4)
    assert (x, y) == (Runs([0], [9], 729), Runs([0, 5], [4, 5], 64 + 125))
    result = runs_rank_test(x, 9, y, 9)
    assert result == mann_whitney_u([0] * 9, [0] * 4 + [5] * 5)
    assert (result.u, result.method) == (18.0, "asymptotic")
    variance = 81 / 12 * (19 - 2304 / 306)
    assert result.p_value == pytest.approx(math.erfc(22.0 / math.sqrt(variance) / math.sqrt(2)))


def test_rank_test_on_runs_with_runs_in_both_samples():
    # x: 100 x4, 200 x5; y: 0 x5, 100 x4. Each x 100 is above five 0s and tied with four 100s
    # (5 + 4/2 = 7), each 200 above all nine: U = 4 * 7 + 5 * 9 = 73, mean 40.5.
    # Ties: 0 x5, 100 x8, 200 x5: 120 + 504 + 120 = 744; variance 81/12 * (19 - 744/306)
    x, y = sorted_runs([100] * 4 + [200] * 5), sorted_runs([0] * 5 + [100] * 4)
    result = runs_rank_test(x, 9, y, 9)
    assert result == mann_whitney_u([200, 100] * 4 + [200], [100, 0] * 4 + [0])
    assert result.u == 73.0
    variance = 81 / 12 * (19 - 744 / 306)
    assert result.p_value == pytest.approx(math.erfc(32 / math.sqrt(variance) / math.sqrt(2)))
    assert result.p_value == pytest.approx(0.002479, abs=1e-6)


def test_rank_test_on_many_runs_by_arrays_is_the_test_value_by_value():
    """Past ARRAY_MERGE_RUNS runs the merge is done by arrays (a build of thousands of snapshots,
    hundreds of distinct values a category): the same U and p as ranking every value, with
    ties inside each sample, values both samples have, and values below and above the other's."""
    x = [v // 3 for v in range(0, 600)] + [7] * 40  # 200 values three times each, 7 x43
    y = [v // 2 for v in range(100, 500)] + [1000] * 5  # 50..249 twice each, 1000 x5
    x.sort()
    y.sort()
    runs_x, runs_y = sorted_runs(x), sorted_runs(y)
    assert len(runs_x.values) + len(runs_y.values) > ARRAY_MERGE_RUNS
    result = runs_rank_test(runs_x, len(x), runs_y, len(y))
    assert result == mann_whitney_u(x, y)
    # the same from a stored summary's columns (arrays): slices of int64 and int32 arrays
    as_arrays = (np.array(runs_x.values, np.int64), np.array(runs_x.counts, np.int32), runs_x.cubes)
    assert runs_rank_test(as_arrays, len(x), runs_y, len(y)) == result
    assert runs_rank_test(runs_y, len(y), as_arrays, len(x)).u == len(x) * len(y) - result.u


def test_rank_test_on_runs_small_samples_is_exact():
    # test_stats' exact example with ties: [1, 2, 2] against [2, 3, 4]: U = 1, p = 6/20
    result = runs_rank_test(sorted_runs([1, 2, 2]), 3, sorted_runs([2, 3, 4]), 3)
    assert (result.u, result.method) == (1.0, "exact")
    assert result.p_value == pytest.approx(0.3)
    assert runs_rank_test(sorted_runs([]), 0, sorted_runs([1]), 1).method == "none"


# Nine snapshots of each build, as per-snapshot tables {category: (count, bytes)}: a snapshot
# without a category has nothing of it (0). Cache: base 100 B in 4 snapshots; target 100 B in
# 4 and 200 B in 5. Gone: only in 3 base snapshots. Steady: 1000 B everywhere.
BASE = {
    i: {"Steady": (10, 1000), **({"Cache": (1, 100)} if i < 4 else {}),
        **({"Gone": (1, 50)} if i in (0, 4, 8) else {})}
    for i in range(9)
}  # fmt: skip
TARGET = {
    i: {"Steady": (10, 1000), "Cache": (1, 100) if i < 13 else (2, 200)} for i in range(9, 18)
}


def _summary(tables: dict) -> object:
    """The summary of a build from its per-snapshot tables, as the database would group them:
    each category's sorted (count, bytes) over the snapshots that have it."""
    present: dict[str, tuple[list[int], list[int]]] = {}
    for table in tables.values():
        for name, (count, size) in table.items():
            counts, sizes = present.setdefault(name, ([], []))
            counts.append(count)
            sizes.append(size)
    for counts, sizes in present.values():
        counts.sort()
        sizes.sort()
    return summarize_build(sorted(tables), present)


def _rows(values: list[tuple]) -> dict[str, dict]:
    return {v[0]: dict(zip(ROW_FIELDS, v, strict=False)) for v in values}


def test_compare_summaries_worked_out_by_hand():
    rows = compare_build_summaries(_summary(BASE), _summary(TARGET))
    # the significant change first (Cache, p = 0.0025), then the others by the size of their
    # change: Gone's median stays 0 but its mean falls by 50 * 3/9; Steady's does not move
    assert [v[0] for v in rows] == ["Cache", "Gone", "Steady"]
    cache = _rows(rows)["Cache"]
    # base 0 x5, 100 x4: mean 400/9, median (5th of 9) 0, q1 (3rd) 0, q3 (7th) 100;
    # target 100 x4, 200 x5: mean 1400/9, median 200, q1 100, q3 200
    assert cache["base_bytes_mean"] == pytest.approx(400 / 9)
    assert (cache["base_bytes_median"], cache["base_bytes_q1"], cache["base_bytes_q3"]) == (
        0.0,
        0.0,
        100.0,
    )
    assert (cache["base_bytes_min"], cache["base_bytes_max"]) == (0, 100)
    assert cache["target_bytes_mean"] == pytest.approx(1400 / 9)
    assert (cache["target_bytes_median"], cache["target_bytes_q1"]) == (200.0, 100.0)
    assert cache["delta_mean_bytes"] == pytest.approx(1000 / 9)
    assert cache["delta_median_bytes"] == 200.0
    # counts: base 0 x5, 1 x4 (mean 4/9); target 1 x4, 2 x5 (mean 14/9, median 2)
    assert cache["delta_mean_count"] == pytest.approx(10 / 9)
    assert cache["target_count_median"] == 2.0
    assert (cache["base_present"], cache["target_present"]) == (4, 9)
    assert (cache["base_snapshots"], cache["target_snapshots"]) == (9, 9)
    assert (cache["u"], cache["test"], cache["status"]) == (73.0, "asymptotic", "grown")
    assert cache["p_value"] == pytest.approx(0.002479, abs=1e-6) and cache["significant"]
    gone = _rows(rows)["Gone"]
    # target: nine 0s; base: six 0s, three 50s. Each target 0 ties with six base 0s: U = 27.
    # Ties: fifteen 0s, three 50s: 3360 + 24; variance 81/12 * (19 - 3384/306)
    assert (gone["status"], gone["u"], gone["target_present"]) == ("gone", 27.0, 0)
    variance = 81 / 12 * (19 - 3384 / 306)
    assert gone["p_value"] == pytest.approx(math.erfc(13 / math.sqrt(variance) / math.sqrt(2)))
    assert (gone["target_bytes_mean"], gone["target_bytes_max"]) == (0.0, 0)
    steady = _rows(rows)["Steady"]
    # all eighteen values tied: no variance, p = 1
    assert (steady["status"], steady["u"], steady["p_value"]) == ("same", 40.5, 1.0)


def _reference_json(row) -> dict:
    """A row of `compare_build_tables` (every snapshot's value ranked) as the API shows it."""
    sizes, counts = row.bytes, row.count
    return {
        "category": row.category, "status": row.status,
        **{f"{side}_bytes_{key}": getattr(getattr(sizes, side), attr)
           for side in ("base", "target")
           for key, attr in (("mean", "mean"), ("median", "median"), ("q1", "q1"),
                             ("q3", "q3"), ("min", "minimum"), ("max", "maximum"))},
        "delta_mean_bytes": sizes.delta_mean, "delta_median_bytes": sizes.delta_median,
        "base_count_mean": counts.base.mean, "base_count_median": counts.base.median,
        "target_count_mean": counts.target.mean, "target_count_median": counts.target.median,
        "delta_mean_count": counts.delta_mean, "delta_median_count": counts.delta_median,
        "base_snapshots": sizes.base.n, "target_snapshots": sizes.target.n,
        "base_present": row.base_present, "target_present": row.target_present,
        "u": sizes.test.u, "p_value": sizes.p_value, "test": sizes.test.method,
        "significant": sizes.significant(),
    }  # fmt: skip


@pytest.mark.parametrize(
    "base, target",
    [
        (BASE, TARGET),
        # three snapshots against two: the exact test
        ({k: BASE[k] for k in (0, 1, 4)}, {k: TARGET[k] for k in (9, 13)}),
        # a build without snapshots: no test, no deltas
        ({}, TARGET),
    ],
)
def test_summaries_give_what_ranking_every_snapshot_gives(base, target):
    base_summary, target_summary = _summary(base), _summary(target)
    values = compare_build_summaries(base_summary, target_summary)
    reference = compare_build_tables(base, target)
    assert [v[0] for v in values] == [r.category for r in reference]
    for v, row in zip(values, reference, strict=True):
        # same values and the same types (an integer minimum stays an integer)
        shown = dict(zip(ROW_FIELDS, v, strict=False))
        expected = _reference_json(row)
        assert [(k, type(x)) for k, x in shown.items()] == [
            (k, type(x)) for k, x in expected.items()
        ]
        assert shown == expected
        # the row objects made from the values: the same figures, the counts' test too
        made = build_compare_row(v, base_summary, target_summary)
        assert (made.bytes.base, made.bytes.target, made.count.base, made.count.target) == (
            row.bytes.base,
            row.bytes.target,
            row.count.base,
            row.count.target,
        )
        assert made.count.test == row.count.test and made.bytes.test == row.bytes.test
        assert made.status == row.status
    limit = GrowthLimit(percent=5)
    assert check_growth_of(gate_items(values), limit) == check_growth(reference, limit)


def test_categories_asked_for_include_absent_ones():
    values = compare_build_summaries(_summary(BASE), _summary(TARGET), ["Steady", "Absent"])
    rows = _rows(values)
    assert sorted(rows) == ["Absent", "Steady"]
    assert (rows["Absent"]["status"], rows["Absent"]["p_value"]) == ("same", 1.0)


def test_stored_summary_reads_back_the_same():
    summary = _summary(BASE)
    data, counts = pack_summary(summary)
    stored = unpack_summary(data, list(range(9)))
    assert stored is not None
    assert (stored.names, stored.records) == (summary.names, summary.records)
    for name in summary.names:  # the stored runs are arrays over the stored bytes
        record, (values, numbers, cubes) = stored.category(name)
        assert (record, (list(values), list(numbers), cubes)) == summary.category(name)
    assert unpack_count_columns(counts, list(range(9))) == summary.count_columns
    # made from other snapshots (one stored or deleted since): not used
    assert unpack_summary(data, list(range(10))) is None
    assert unpack_count_columns(counts, list(range(8))) is None
    stored.count_source = lambda: unpack_count_columns(counts, list(range(9)))
    assert stored.count_runs("Cache") == summary.count_runs("Cache") == ([0, 1], [5, 4], 189)
    assert stored.count_runs("Nothing") == ([0], [9], 729)  # all nine snapshots without it


def test_a_summary_stored_in_the_former_format_is_made_again():
    """Format 1 was compressed by zlib: still read (its header says it is of another format), so
    it is not used and the comparison makes and stores the summary again."""
    summary = _summary(BASE)
    data, _ = pack_summary(summary)
    body = zstandard.ZstdDecompressor().decompress(data)
    (length,) = struct.unpack_from("<I", body)
    header = {**orjson.loads(body[4 : 4 + length]), "format": 1}
    encoded = orjson.dumps(header)
    former = zlib.compress(struct.pack("<I", len(encoded)) + encoded + body[4 + length :], 1)
    assert unpack_summary(former, list(range(9))) is None
    assert unpack_summary(data, list(range(9))) is not None
