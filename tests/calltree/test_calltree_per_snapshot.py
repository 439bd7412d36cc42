"""A build's call tree per snapshot (`per_snapshot`): medians per node over per-snapshot trees.

Frames: main (1), load (2), malloc (3, a system frame). Stacks: 1 = main, 2 = main > load,
3 = main > malloc. The expected medians below are worked out by hand from the rows given.
"""

from __future__ import annotations

from memdash.allocations.logic.calltree.build import build_call_tree
from memdash.allocations.logic.calltree.flame import FunctionRow, flame_graph
from memdash.allocations.logic.calltree.per_snapshot import (
    PerSnapshotTree,
    median_functions,
    median_of,
)
from memdash.allocations.logic.calltree.products import TreeProduct, make_product
from memdash.allocations.logic.calltree.tree import FrameInfo, StackInfo, TreeOptions, TreeRow

FRAMES = {1: FrameInfo("main", "App"), 2: FrameInfo("load", "App"),
          3: FrameInfo("malloc", "libsystem_malloc.dylib", is_system=True)}  # fmt: skip
STACKS = {1: StackInfo(None, 1), 2: StackInfo(1, 2), 3: StackInfo(1, 3)}


PLAIN = TreeOptions()


def per_snapshot(*snapshots: list[TreeRow]):
    trees = [build_call_tree(rows, STACKS, FRAMES, PLAIN) for rows in snapshots]
    return PerSnapshotTree(trees, PLAIN)


def figures(tree, node_id=None):
    views, total = tree.children(node_id, 0, 100)
    return [(v.symbol, v.bytes, v.count, v.self_bytes, v.self_count) for v in views], total


# A: load 100 B in 1, malloc 10 B in 1 (main 110 B, 2); B: load 300 B in 3 (main 300 B, 3);
# C: malloc 50 B in 5 (main 50 B, 5).
A = [TreeRow(2, None, 100, 1), TreeRow(3, None, 10, 1)]
B = [TreeRow(2, None, 300, 3)]
C = [TreeRow(3, None, 50, 5)]


def test_each_node_is_its_median_per_snapshot_with_zero_where_a_snapshot_lacks_it():
    tree = per_snapshot(A, B, C)
    # main: bytes 110, 300, 50 -> 110; count 2, 3, 5 -> 3; self 0 everywhere
    assert figures(tree) == ([("main", 110, 3, 0, 0)], 1)
    main = tree.children(None, 0, 1)[0][0].id
    # load: 100, 300, 0 -> 100 B; 1, 3, 0 -> 1. malloc: 10, 0, 50 -> 10 B; 1, 0, 5 -> 1.
    assert figures(tree, main) == ([("load", 100, 1, 100, 1), ("malloc", 10, 1, 10, 1)], 2)
    # the totals: 110, 300, 50 B -> 110; 2, 3, 5 allocations -> 3; percentages of those
    assert (tree.total_bytes, tree.total_count) == (110, 3)
    assert tree.children(main, 0, 1)[0][0].percent == 90.91  # 100 / 110


def test_an_even_number_of_snapshots_rounds_the_half_up():
    # main: 110 and 300 B -> 205; 2 and 3 allocations -> 2.5 -> 3
    assert figures(per_snapshot(A, B)) == ([("main", 205, 3, 0, 0)], 1)
    assert median_of([1, 2], 2) == 2 and median_of([7], 3) == 0 and median_of([4, 6], 3) == 4


def test_a_node_in_fewer_than_half_of_the_snapshots_is_left_out_and_so_are_its_children():
    # malloc only in C: 0, 0, 50 -> 0 B, left out; main keeps only load, and a node whose only
    # children are left out is a leaf
    tree = per_snapshot(B, B, C)
    main = tree.children(None, 0, 1)[0][0]
    assert (main.bytes, main.has_children) == (300, True)
    assert figures(tree, main.id) == ([("load", 300, 3, 300, 3)], 1)
    only_malloc = per_snapshot([TreeRow(1, None, 8, 1)], [TreeRow(1, None, 8, 1)], C)
    root = only_malloc.children(None, 0, 1)[0][0]
    assert (root.symbol, root.bytes, root.self_bytes, root.has_children) == ("main", 8, 8, False)
    assert only_malloc.node(root.id + "0") is None  # an id in no snapshot's tree
    stack_3 = "3"  # malloc's node id (the plain tree names a node by its stack node)
    assert only_malloc.node(stack_3) is None  # in C only: its median is 0
    assert tree.node("2").bytes == 300


def test_medians_that_outweigh_their_parent_are_drawn_as_remainders():
    # X: load 100; Y: malloc 100; Z: both. main 100, 100, 200 -> 100; load 100, 0, 100 -> 100;
    # malloc 0, 100, 100 -> 100: the children (200) outweigh main (100).
    tree = per_snapshot([TreeRow(2, None, 100, 1)], [TreeRow(3, None, 100, 1)],
                        [TreeRow(2, None, 100, 1), TreeRow(3, None, 100, 1)])  # fmt: skip
    data = flame_graph(tree)
    assert data["labels"] == ["All allocations", "main", "load", "malloc"]
    assert data["sizes"] == [100, 100, 100, 100]
    # each node's width beyond its drawn children: the top 100 - 100, main max(0, 100 - 200)
    assert data["values"] == [0, 0, 100, 100]
    assert data["branchvalues"] == "remainder"
    # a tree of sums is drawn as before: values are the nodes' own, no remainders
    summed = flame_graph(build_call_tree(A + B + C, STACKS, FRAMES))
    assert "branchvalues" not in summed and summed["values"] == [460, 460, 400, 60]


def test_top_functions_are_each_functions_median_per_snapshot():
    rows = make_product(per_snapshot(A, B, C), TreeProduct("functions"))
    got = {r[0]: FunctionRow(*r) for r in rows}
    # self bytes: load 100, 300, 0 -> 100; malloc 10, 0, 50 -> 10; main 0 (total 110, count 3)
    assert [r[0] for r in rows] == ["load", "malloc", "main"]
    assert (got["load"].self_bytes, got["load"].bytes, got["load"].count) == (100, 100, 1)
    assert (got["malloc"].self_bytes, got["malloc"].self_count) == (10, 1)
    assert (got["main"].self_bytes, got["main"].bytes, got["main"].count) == (0, 110, 3)
    # focused on load: malloc is not below it in any snapshot
    main_id = "1"
    focused = make_product(per_snapshot(A, B, C), TreeProduct("functions", focus="2"))
    assert [(r[0], r[4]) for r in focused] == [("load", 100)]
    assert make_product(per_snapshot(A, B, C), TreeProduct("functions", focus=main_id))[0][0] == (
        "load"
    )


def test_median_functions_pads_the_snapshots_without_a_function():
    row = FunctionRow("f", "App", "frame", False, 8, 1, 8, 1)
    other = FunctionRow("g", "App", "frame", False, 2, 1, 2, 1)
    # f in 2 of 3 snapshots: 8, 8, 0 -> 8; g in 1 of 3: 2, 0, 0 -> 0, left out
    assert median_functions([[row], [row, other], []]) == [row]
