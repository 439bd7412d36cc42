"""Rows as columns and the grouped sums over them (memdash.allocations.logic.columns and .totals):
pure functions, checked against totals worked out by hand."""

from __future__ import annotations

import numpy as np

from memdash.allocations.logic.columns import (
    NONE,
    RowColumns,
    by_depth,
    depths,
    grouped_sums,
    heaviest_rows,
    inclusive_sums,
    leaves,
    stack_arrays,
)
from memdash.allocations.logic.totals import generation_growth, nodes_of, snapshot_totals

A = np.array

# Stacks: 0 root (frame 0), 1 under 0 (frame 1), 2 under 1 (frame 2), 3 under 0 (frame 1).
PARENTS = [None, 0, 1, 0]
FRAMES = [0, 1, 2, 1]
ROWS = {
    ("Malloc 16 Bytes", 2, 0, None): [1, 16, 2, 32],
    ("NSString", 3, None, 0): [4, 100, 0, 0],
    ("Malloc 16 Bytes", 3, 1, 1): [0, 0, 1, 16],
    ("NSString", None, None, 1): [2, 50, 1, 25],
    ("NSArray", 1, 0, 0): [1, 40, 0, 0],
}


def test_rows_go_to_columns_and_back():
    columns = RowColumns.from_dict(ROWS)
    assert columns.names == ["Malloc 16 Bytes", "NSString", "NSArray"]
    assert columns.category.tolist() == [0, 1, 0, 1, 2]
    assert columns.stack.tolist() == [2, 3, 3, NONE, 1]
    assert columns.generation.tolist() == [NONE, 0, 1, 1, 0]
    assert columns.to_dict() == ROWS
    assert list(columns.to_dict()) == list(ROWS)  # in the same order


def test_rows_with_one_key_add_up_where_the_key_first_appears():
    rows = {
        ("A", 2, None, None): [1, 10, 0, 0],
        ("B", 1, None, None): [5, 50, 0, 0],
        ("A", 3, None, None): [2, 20, 1, 4],
    }
    # Node 3 merged into node 2 (symbolicate's restack): the two A rows become one, where the
    # first of them was.
    moved = RowColumns.from_dict(rows).with_stacks([0, 1, 2, 2])
    assert list(moved.to_dict().items()) == [
        (("A", 2, None, None), [3, 30, 1, 4]),
        (("B", 1, None, None), [5, 50, 0, 0]),
    ]
    # A category left without rows is dropped from the names.
    only_a = RowColumns(
        ["A", "B"], A([0, 0]), A([1, 1]), A([NONE, NONE]), A([0, 0]), A([[1, 2, 3, 4]] * 2)
    ).aggregated()
    assert only_a.names == ["A"] and only_a.to_dict() == {("A", 1, None, 0): [2, 4, 6, 8]}


def test_grouped_sums_in_order_of_first_appearance_small_and_large_keys():
    values = A([[1, 2], [3, 4], [5, 6], [7, 8]])
    keys, sums = grouped_sums(A([5, 2, 5, 9]), values)
    assert keys.tolist() == [5, 2, 9] and sums.tolist() == [[6, 8], [3, 4], [7, 8]]
    big = A([2**60, -3, 2**60, 7])  # not small indexes: summed by sorting
    keys, sums = grouped_sums(big, values)
    assert keys.tolist() == [2**60, -3, 7] and sums.tolist() == [[6, 8], [3, 4], [7, 8]]


def test_heaviest_row_per_category_first_on_a_tie():
    category = A([0, 1, 0, 0, 1])
    size = A([10, 5, 30, 30, 7])
    candidates = A([True, True, True, True, False])
    cats, rows = heaviest_rows(category, size, candidates)
    assert dict(zip(cats.tolist(), rows.tolist(), strict=True)) == {0: 2, 1: 1}


def test_depths_levels_and_inclusive_sums():
    parents = A([NONE, 0, 1, 0, NONE])
    depth = depths(parents)
    assert depth.tolist() == [0, 1, 2, 1, 0]
    assert [level.tolist() for level in by_depth(depth)] == [[2], [1, 3], [0, 4]]
    own = A([[0, 0, 0, 0], [1, 10, 0, 0], [2, 20, 1, 5], [0, 0, 0, 0], [0, 0, 0, 0]])
    touched = A([False, True, True, False, False])
    total, reached = inclusive_sums(parents, by_depth(depth), own, touched)
    assert total.tolist()[:3] == [[3, 30, 1, 5], [3, 30, 1, 5], [2, 20, 1, 5]]
    assert reached.tolist() == [True, True, True, False, False]
    assert own[0].tolist() == [0, 0, 0, 0]  # a copy was summed
    same, _ = inclusive_sums(parents, by_depth(depth), own, touched, in_place=True)
    assert same is own and own.tolist() == total.tolist()


def test_snapshot_totals_by_hand():
    # Node ids: node 3 names the same path as node 1 (same id), as a document may.
    nodes = nodes_of(
        stack_arrays(PARENTS, FRAMES), A([100, 101, 102, 101]), A([900, 901, 902, 901])
    )
    assert nodes.ids.tolist() == [100, 101, 102]
    assert nodes.parent.tolist() == [NONE, 0, 1]
    assert nodes.frame_id.tolist() == [900, 901, 902]
    assert nodes.depth.tolist() == [0, 1, 2]
    assert nodes.of_node.tolist() == [0, 1, 2, 1]
    assert nodes.parent_ids.filled(-1).tolist() == [-1, 100, 101]
    rows = RowColumns.from_dict(ROWS)
    totals = snapshot_totals(rows, nodes)
    assert totals.per_category(rows.names) == [
        ("Malloc 16 Bytes", [1, 16, 3, 48]),
        ("NSString", [6, 150, 1, 25]),
        ("NSArray", [1, 40, 0, 0]),
    ]
    pairs = zip(
        totals.generation_of_pair.tolist(),
        totals.category_of_pair.tolist(),
        totals.pair_counts.tolist(),
        strict=True,
    )
    assert [(g, rows.names[c], n) for g, c, n in pairs] == [
        (NONE, "Malloc 16 Bytes", [1, 16, 2, 32]),
        (0, "NSString", [4, 100, 0, 0]),
        (1, "Malloc 16 Bytes", [0, 0, 1, 16]),
        (1, "NSString", [2, 50, 1, 25]),
        (0, "NSArray", [1, 40, 0, 0]),
    ]
    assert totals.totals == [8, 206, 4, 73]
    # Heaviest stack: Malloc's 48 bytes on stack 2 beat 16 on stack 3; NSString's only row
    # with a stack is on 3; NSArray's on 1.
    assert totals.heaviest(rows.names) == {"Malloc 16 Bytes": 2, "NSString": 3, "NSArray": 1}
    tree = totals.call_tree
    # Own: node 101 (stacks 1 and 3): NSString 4/100 + Malloc 0/0/1/16 + NSArray 1/40;
    # node 102: Malloc 1/16/2/32. Inclusive adds 102 into 101, and both into 100.
    assert tree.nodes.tolist() == [0, 1, 2]
    assert tree.own.tolist() == [[0, 0, 0, 0], [5, 140, 1, 16], [1, 16, 2, 32]]
    assert tree.inclusive.tolist() == [[6, 156, 3, 48], [6, 156, 3, 48], [1, 16, 2, 32]]
    # Generation 0 made NSString 4/100 and NSArray 1/40 persistent; generation 1 NSString 2/50.
    assert generation_growth(totals, 2) == [(140, 5), (50, 2)]


def test_leaves_are_the_nodes_no_node_hangs_under():
    # 0 ── 1 ── 2, 0 ── 3, and 4 a root of its own: 2, 3 and 4 have no children.
    assert leaves(A([NONE, 0, 1, 0, NONE])).tolist() == [2, 3, 4]
    assert leaves(A([NONE])).tolist() == [0]
    assert leaves(A([], dtype=np.int64)).tolist() == []


def test_the_call_tree_keeps_only_the_nodes_on_a_rows_path():
    # Stacks as PARENTS/FRAMES (3 is a second child of 0); one row, on stack 2: node 3 has
    # nothing at or below it and is left out, the others carry the row.
    nodes = nodes_of(stack_arrays(PARENTS, FRAMES), A([100, 101, 102, 103]), A([9, 8, 7, 8]))
    rows = RowColumns.from_dict({("Malloc 16 Bytes", 2, None, None): [1, 16, 2, 32]})
    tree = snapshot_totals(rows, nodes).call_tree
    assert tree.nodes.tolist() == [0, 1, 2]
    assert tree.own.tolist() == [[0, 0, 0, 0], [0, 0, 0, 0], [1, 16, 2, 32]]
    assert tree.inclusive.tolist() == [[1, 16, 2, 32]] * 3
