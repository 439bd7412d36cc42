"""Category and call-tree diffs, checked against diffs worked out by hand."""

from memdash.compare.diff import (
    DiffRow,
    TreeTotals,
    diff_categories,
    diff_status,
    diff_tree_nodes,
    inclusive_totals,
    summarize_diff,
    tree_level,
)


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


def test_inclusive_totals_and_levels():
    # root r -> a -> (b, c); allocations: 3 x 100 B at b, 1 x 10 B at c, 2 x 5 B at a itself
    parent_of = {"r": None, "a": "r", "b": "a", "c": "a"}
    totals = inclusive_totals({"b": (3, 300), "c": (1, 10), "a": (2, 10)}, parent_of)
    assert totals == {"r": (6, 320), "a": (6, 320), "b": (3, 300), "c": (1, 10)}
    assert tree_level(totals, parent_of, None) == {"r": TreeTotals(320, 6, True)}
    assert tree_level(totals, parent_of, "a") == {
        "b": TreeTotals(300, 3, False),
        "c": TreeTotals(10, 1, False),
    }


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
    assert (nodes[0].base_bytes, nodes[0].target_bytes, nodes[0].delta_count) == (
        50,
        250,
        2,
    )


def test_compare_build_tables_counts_missing_categories_as_zero():
    from memdash.compare.diff import check_growth, compare_build_tables
    from memdash.compare.stats import GrowthLimit

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
    assert leak.status == "grown"
    # fully separated 3 vs 3: p = 2 / C(6, 3) = 0.1, not significant with three snapshots each
    assert leak.bytes.p_value == 0.1
    fresh, steady = rows[1], rows[2]
    assert fresh.status == "new" and fresh.bytes.target.median == 0  # only in one of three
    assert steady.status == "same"  # means 1000 and 1000
    # Steady: base 1000, 1100, 900 vs 1000, 1000, 1000: ranks of target 3 x 3 (mid of 2..4 among
    # 900 | 1000 x 4 | 1100 -> ranks 1, 3.5 x 4, 6): U = 3 x 3.5 - 6 = 4.5 = mean -> p = 1
    assert steady.bytes.p_value == 1.0

    # gate: 5% of the median. Leak +500 over 100 fails (allowed 5); Fresh's median is 0 -> 0;
    # Steady's 1000 -> 1000
    failures = check_growth(rows, GrowthLimit(percent=5))
    assert [(f.category, f.delta_bytes, f.allowed_bytes) for f in failures] == [("Leak", 500, 5)]
    assert check_growth(rows, GrowthLimit(bytes=500)) == []  # exactly 500: allowed

    only = compare_build_tables(base, target, categories=["Steady", "Absent"])
    assert sorted(r.category for r in only) == ["Absent", "Steady"]
    assert next(r for r in only if r.category == "Absent").status == "same"


def test_check_growth_noise_floor():
    from memdash.compare.diff import check_growth, compare_build_tables
    from memdash.compare.stats import GrowthLimit

    # one 48-byte object more is +100% but below a 1 KiB floor; +2 KiB is above it
    base = {1: {"Tiny": (1, 48), "Big": (1, 1024)}, 2: {"Tiny": (1, 48), "Big": (1, 1024)}}
    target = {3: {"Tiny": (2, 96), "Big": (3, 3072)}, 4: {"Tiny": (2, 96), "Big": (3, 3072)}}
    rows = compare_build_tables(base, target)
    assert [f.category for f in check_growth(rows, GrowthLimit(percent=5))] == ["Big", "Tiny"]
    floored = check_growth(rows, GrowthLimit(percent=5), min_delta=1024)
    assert [(f.category, f.delta_bytes) for f in floored] == [("Big", 2048)]


def test_build_status_by_the_median_then_the_mean():
    from memdash.compare.diff import build_status

    # (base present, target present, delta median bytes, delta mean bytes, delta mean count)
    assert build_status(0, 2, 0, 10, 1) == "new"  # in no base snapshot
    assert build_status(3, 0, 0, -10, -1) == "gone"
    assert build_status(3, 3, -500, 300, 0) == "shrunk"  # the median decides over the mean
    assert build_status(3, 3, 500, -300, 0) == "grown"
    assert build_status(1, 1, 0, 20, 0) == "grown"  # medians equal: the mean decides
    assert build_status(3, 3, 0, 0, 2) == "grown"  # then the mean count
    assert build_status(3, 3, 0, 0, 0) == "same"
    assert build_status(0, 0, None, None, None) == "same"  # a build without snapshots
