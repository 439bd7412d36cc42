"""Category and call-tree diffs, checked against diffs worked out by hand."""

from memdash.compare.logic.build_rows import build_status, compare_build_tables
from memdash.compare.logic.category_diff import (
    DiffRow,
    diff_categories,
    diff_status,
    summarize_diff,
)
from memdash.compare.logic.diff_tree import TreeTotals, diff_tree_nodes, diff_tree_samples
from memdash.compare.logic.gate import check_growth
from memdash.compare.logic.stats import GrowthLimit


def test_status():
    assert diff_status((0, 0), (1, 16)) == "new"
    assert diff_status((1, 16), (0, 0)) == "gone"
    assert diff_status((1, 16), (1, 32)) == "grown"
    assert diff_status((3, 32), (1, 16)) == "shrunk"
    assert diff_status((1, 16), (2, 16)) == "grown"  # bytes tied: decided by count
    assert diff_status((2, 16), (1, 16)) == "shrunk"
    assert diff_status((2, 16), (2, 16)) == "same"


def test_diff_categories_worked_by_hand():
    base = {"A": (10, 1000), "B": (5, 500), "C": (2, 64), "D": (1, 16), "Z": (0, 0)}
    target = {"A": (12, 1300), "B": (5, 400), "D": (1, 16), "E": (3, 96), "Z": (0, 0)}
    rows = diff_categories(base, target)
    # A +300 grown, E +96 new, D 0 same, C -64 gone, B -100 shrunk; Z empty on both sides: no row
    assert rows == [
        DiffRow("A", 1000, 1300, 300, 10, 12, 2, "grown"),
        DiffRow("E", 0, 96, 96, 0, 3, 3, "new"),
        DiffRow("D", 16, 16, 0, 1, 1, 0, "same"),
        DiffRow("C", 64, 0, -64, 2, 0, -2, "gone"),
        DiffRow("B", 500, 400, -100, 5, 5, 0, "shrunk"),
    ]
    summary = summarize_diff(rows)
    # base 1000 + 500 + 64 + 16 = 1580; target 1300 + 400 + 16 + 96 = 1812
    assert summary["base_bytes"] == 1580
    assert summary["target_bytes"] == 1812
    assert summary["delta_bytes"] == 232
    assert summary["delta_percent"] == 232 * 100 / 1580
    assert summary["base_count"] == 18 and summary["target_count"] == 21
    assert summary["delta_count"] == 3
    assert summary["statuses"] == {
        "new": 1,
        "gone": 1,
        "grown": 1,
        "shrunk": 1,
        "same": 1,
    }
    assert summary["top_grower"] == "A"
    assert summary["top_shrinker"] == "B"
    assert rows[0].as_dict()["status"] == "grown"


def test_empty_side():
    # a generation with no allocations against one with two categories: everything is new
    rows = diff_categories({}, {"X": (1, 48), "Y": (2, 64)})
    assert [(r.category, r.status, r.delta_bytes) for r in rows] == [
        ("Y", "new", 64),
        ("X", "new", 48),
    ]
    summary = summarize_diff(diff_categories({}, {}))
    assert summary["base_bytes"] == summary["target_bytes"] == 0
    assert summary["delta_percent"] is None
    assert summary["top_grower"] is None


def test_diff_tree_nodes_sorted_by_size_of_change():
    base = {
        1: TreeTotals(100, 1, True),
        2: TreeTotals(50, 5, False),
        3: TreeTotals(8, 1, False),
    }
    target = {
        1: TreeTotals(90, 1, True),
        2: TreeTotals(250, 7, True),
        4: TreeTotals(20, 2, False),
    }
    nodes = diff_tree_nodes(base, target)
    # |delta|: node 2 +200, node 4 +20 (new), node 1 -10, node 3 -8 (gone)
    assert [(n.key, n.delta_bytes, n.status, n.has_children) for n in nodes] == [
        (2, 200, "grown", True),
        (4, 20, "new", False),
        (1, -10, "shrunk", True),
        (3, -8, "gone", False),
    ]
    assert (nodes[0].base.bytes, nodes[0].target.bytes, nodes[0].delta_count) == (50, 250, 2)


def test_diff_tree_of_builds_by_the_median_per_snapshot():
    # one level of two builds, per snapshot (a snapshot without a node counts 0 for it)
    base = [
        {"main": TreeTotals(100, 1, True)},
        {"main": TreeTotals(100, 1, True)},
        {"main": TreeTotals(700, 7, True), "spike": TreeTotals(600, 6)},
    ]
    target = [
        {"main": TreeTotals(200, 2, True)},
        {"main": TreeTotals(300, 3, True)},
        {"main": TreeTotals(250, 2, True)},
    ]
    main, spike = diff_tree_samples(base, target)
    # main: base 100, 100, 700 -> median 100, mean 300; target 200, 300, 250 -> median 250,
    # mean 250. The median grew by 150 while the mean fell by 50: grown, by the median.
    assert (main.key, main.base.bytes, main.target.bytes) == ("main", 100, 250)
    assert main.delta_bytes == 150
    assert (main.base.mean_bytes, main.target.mean_bytes, main.delta_mean_bytes) == (300, 250, -50)
    # the rank test on the bytes: 100, 100, 700 against 200, 250, 300. Pooled ranks 1.5, 1.5,
    # 3, 4, 5, 6; the base's sum 9, 1.5 below its mean 10.5. Of the 20 ways to pick three of the
    # six, 12 sum to 9 or less or 12 or more (1.5 + 1.5 + 3, 4, 5 or 6; 1.5 + 3 + 4 twice;
    # 1.5 + 5 + 6 twice; 3 + 4 + 5, 3 + 4 + 6, 3 + 5 + 6, 4 + 5 + 6): p = 0.6, not
    # significant: "changed", not grown
    assert (main.delta_count, main.status, main.has_children) == (1, "changed", True)
    assert (round(main.p_value, 6), main.significant) == (0.6, False)
    # counts: 1, 1, 7 -> median 1; 2, 3, 2 -> median 2
    assert (main.base.count, main.target.count) == (1, 2)
    # spike: in one base snapshot of three: median 0 -> 0, mean 200 -> 0; gone in the target
    assert (spike.base.bytes, spike.base.mean_bytes, spike.base.present) == (0, 200, 1)
    assert (spike.delta_bytes, spike.delta_mean_bytes, spike.status) == (0, -200, "gone")
    # a side without snapshots (a filter kept none) has nothing
    (alone,) = diff_tree_samples([], [{"main": TreeTotals(10, 1)}])
    assert (alone.base.bytes, alone.target.bytes, alone.status) == (0, 10, "new")
    assert (alone.p_value, alone.significant) == (None, False)  # nothing to test against


def test_diff_tree_changes_are_significant_only_where_the_rank_test_says_so():
    # 8 snapshots a side, every base one below every target one: U = 0, the most extreme of
    # C(16, 8) = 12,870 splits, with U = 64 the other way: p = 2 / 12,870
    base = [{"main": TreeTotals(100 + i, 1)} for i in range(8)]
    target = [{"main": TreeTotals(200 + i, 1)} for i in range(8)]
    (main,) = diff_tree_samples(base, target)
    assert (main.status, main.significant) == ("grown", True)
    assert main.p_value == 2 / 12_870
    # at alpha 0.0001 it is not: changed
    (strict,) = diff_tree_samples(base, target, alpha=0.0001)
    assert (strict.status, strict.significant) == ("changed", False)
    # one snapshot against one (a snapshot or generation diff): grown as measured, never
    # significant (p = 1: one against one can be split only two ways, both as extreme)
    (one,) = diff_tree_samples([{"main": TreeTotals(100, 1)}], [{"main": TreeTotals(90, 1)}])
    assert (one.status, one.p_value, one.significant) == ("shrunk", 1.0, False)


def test_compare_build_tables_counts_missing_categories_as_zero():
    # three snapshots per build; "Leak" is missing from base snapshot 2 (counts as 0 there)
    base = {
        1: {"Leak": (1, 100), "Steady": (10, 1000)},
        2: {"Steady": (10, 1100)},
        3: {"Leak": (2, 200), "Steady": (10, 900)},
    }
    target = {
        4: {"Leak": (5, 500), "Steady": (10, 1000)},
        5: {"Leak": (6, 600), "Steady": (10, 1000), "Fresh": (1, 10)},
        6: {"Leak": (7, 700), "Steady": (10, 1000)},
    }
    rows = compare_build_tables(base, target)
    assert [r.category for r in rows] == ["Leak", "Fresh", "Steady"]
    leak = rows[0]
    # base bytes 100, 0, 200: mean 100, median 100; target 500, 600, 700: mean 600, median 600
    assert (leak.bytes.base.mean, leak.bytes.base.median) == (100, 100)
    assert (leak.bytes.target.mean, leak.bytes.target.median) == (600, 600)
    assert leak.delta_mean_bytes == 500 and leak.delta_median_bytes == 500
    assert leak.count.delta_mean == 5  # (1 + 0 + 2) / 3 = 1 -> (5 + 6 + 7) / 3 = 6
    assert (leak.base_present, leak.target_present) == (2, 3)
    # fully separated 3 vs 3: p = 2 / C(6, 3) = 0.1, not significant with three snapshots each:
    # the median grew, but the builds are not told apart (was "grown" before significance)
    assert leak.bytes.p_value == 0.1
    assert (leak.status, leak.status_label, leak.significant) == (
        "changed", "changed, not significant", False,
    )  # fmt: skip
    fresh, steady = rows[1], rows[2]
    assert fresh.status == "new" and fresh.bytes.target.median == 0  # only in one of three
    assert steady.status == "same"  # means 1000 and 1000
    # Steady: base 1000, 1100, 900 vs 1000, 1000, 1000: ranks of target 3 x 3 (mid of 2..4 among
    # 900 | 1000 x 4 | 1100 -> ranks 1, 3.5 x 4, 6): U = 3 x 3.5 - 6 = 4.5 = mean -> p = 1
    assert steady.bytes.p_value == 1.0

    # gate: 5% of the median, significant growth only. Leak +500 over 100 is past it (allowed 5)
    # but p = 0.1: not failed on at alpha 0.05, failed on at 0.2; Fresh's median is 0 -> 0;
    # Steady's 1000 -> 1000
    assert check_growth(rows, GrowthLimit(percent=5)) == []
    failures = check_growth(rows, GrowthLimit(percent=5), alpha=0.2)
    assert [(f.category, f.delta_bytes, f.allowed_bytes) for f in failures] == [("Leak", 500, 5)]
    assert check_growth(rows, GrowthLimit(bytes=500), alpha=0.2) == []  # exactly 500: allowed

    only = compare_build_tables(base, target, categories=["Steady", "Absent"])
    assert sorted(r.category for r in only) == ["Absent", "Steady"]
    assert next(r for r in only if r.category == "Absent").status == "same"


def test_check_growth_noise_floor():
    # one 48-byte object more is +100% but below a 1 KiB floor; +2 KiB is above it. Four
    # snapshots a build, all of the target above all of the base: p = 2/70, significant
    base = {i: {"Tiny": (1, 48), "Big": (1, 1024)} for i in (1, 2, 3, 4)}
    target = {i: {"Tiny": (2, 96), "Big": (3, 3072)} for i in (5, 6, 7, 8)}
    rows = compare_build_tables(base, target)
    assert [f.category for f in check_growth(rows, GrowthLimit(percent=5))] == ["Big", "Tiny"]
    floored = check_growth(rows, GrowthLimit(percent=5), min_delta=1024)
    assert [(f.category, f.delta_bytes) for f in floored] == [("Big", 2048)]


def test_build_status_by_significance_then_the_median():
    # (base present, target present, delta median bytes, delta mean bytes, delta mean count,
    # p-value of the rank test on bytes, alpha)
    assert build_status(0, 2, 0, 10, 1, 0.5) == "new"  # in no base snapshot
    assert build_status(3, 0, 0, -10, -1, 0.5) == "gone"
    # significant: the median's direction decides over the mean's
    assert build_status(4, 4, -500, 300, 0, 0.01) == "shrunk"
    assert build_status(4, 4, 500, -300, 0, 0.01) == "grown"
    assert build_status(4, 4, 0, 20, 0, 0.03) == "grown"  # medians equal: the mean decides
    assert build_status(4, 4, 0, 0, 2, 0.03) == "grown"  # then the mean count
    # not significant, however large: changed; the demo's VM: Stack 8.0.3 -> 8.0.4 has p = 0.84
    assert build_status(7, 11, 524288, -224695, 0, 0.84) == "changed"
    assert build_status(4, 4, 500, 500, 0, 0.05) == "changed"  # p must be below alpha
    assert build_status(4, 4, 500, 500, 0, 0.05, alpha=0.1) == "grown"
    assert build_status(4, 4, 500, 500, 0, None) == "changed"  # no test: nothing shown
    assert build_status(3, 3, 0, 0, 0, 1.0) == "same"
    assert build_status(0, 0, None, None, None, None) == "same"  # a build without snapshots
