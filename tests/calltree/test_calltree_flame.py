"""Pruning a tree to what a flame graph can show, and the icicle columns of a call tree.

The tree of the pruning tests (inclusive weights; children heaviest first):
  R 100: A 60 (A1 40, A2 15, A3 5), B 30 (B1 30), C 10
"""

from __future__ import annotations

from memdash.allocations.logic.calltree.build import build_call_tree
from memdash.allocations.logic.calltree.flame import flame_graph, prune
from memdash.allocations.logic.calltree.transform import focus_tree
from memdash.allocations.logic.calltree.tree import FrameInfo, StackInfo, TreeOptions, TreeRow

WEIGHT = {"R": 100, "A": 60, "A1": 40, "A2": 15, "A3": 5, "B": 30, "B1": 30, "C": 10, "Z": 0}
CHILDREN = {"R": ["A", "B", "C"], "A": ["A1", "A2", "A3"], "B": ["B1", "Z"]}


def pruned(limit):
    result = prune(["R"], lambda n: CHILDREN.get(n, []), WEIGHT.__getitem__, limit)
    kept = [(k.node, None if k.parent < 0 else result.kept[k.parent].node) for k in result.kept]
    rest = {
        (None if p < 0 else result.kept[p].node): list(nodes) for p, nodes in result.rest.items()
    }
    return kept, rest


def test_prune_keeps_the_heaviest_nodes_and_merges_the_rest_of_each_parent():
    # 4 nodes: R and A (the heaviest two), then an "other" under each: R's B + C, A's children.
    assert pruned(4) == (
        [("R", None), ("A", "R")],
        {"R": ["B", "C"], "A": ["A1", "A2", "A3"]},
    )
    # 7: then A1 40, B 30, B1 30 (B's last child of any weight: B needs no "other"); A2 (15)
    # would make 8 with A's and R's "other" nodes.
    assert pruned(7) == (
        [("R", None), ("A", "R"), ("A1", "A"), ("B", "R"), ("B1", "B")],
        {"R": ["C"], "A": ["A2", "A3"]},
    )


def test_prune_keeps_everything_that_fits_and_leaves_out_what_weighs_nothing():
    kept, rest = pruned(100)
    assert [k for k, _ in kept] == ["R", "A", "A1", "B", "B1", "A2", "C", "A3"]  # not Z (0)
    assert rest == {}


def test_prune_with_no_room_merges_everything():
    assert pruned(1) == ([], {None: ["R"]})


# --- icicle columns of a call tree ----------------------------------------------------------

FRAMES = {1: FrameInfo("main"), 2: FrameInfo("load"), 3: FrameInfo("draw"),
          4: FrameInfo("decode"), 5: FrameInfo("blit")}  # fmt: skip
STACKS = {1: StackInfo(None, 1), 2: StackInfo(1, 2), 3: StackInfo(1, 3),
          4: StackInfo(2, 4), 5: StackInfo(3, 5)}  # fmt: skip
# main 100 (self 0): load 70 (self 10; decode 60), draw 30 (blit 30); no stack 5
ROWS = [TreeRow(2, None, 10, 1), TreeRow(4, None, 60, 6), TreeRow(5, None, 30, 3),
        TreeRow(None, None, 5, 1)]  # fmt: skip


def columns(data):
    return list(zip(data["ids"], data["labels"], data["parents"], data["values"], strict=True))


def test_flame_graph_of_a_call_tree():
    tree = build_call_tree(ROWS, STACKS, FRAMES, TreeOptions())
    data = flame_graph(tree, limit=100, search="dec")
    assert columns(data) == [
        ("~all", "All allocations", "", 105),
        ("1", "main", "~all", 100),
        ("2", "load", "1", 70),
        ("4", "decode", "2", 60),
        ("3", "draw", "1", 30),
        ("5", "blit", "3", 30),
        ("n", "(no stack)", "~all", 5),
    ]
    assert data["match"] == [False, False, False, True, False, False, False]
    assert (data["unit"], data["nodes"]) == ("bytes", 7)


def test_flame_graph_pruned_and_focused():
    tree = build_call_tree(ROWS, STACKS, FRAMES, TreeOptions())
    # 6 nodes: the top, main, load (70), decode (60, load's only child: load needs no "other"),
    # then an "other" under the top (no stack) and one under main (draw); draw itself would make
    # 7 with the "other" its child blit needs.
    assert columns(flame_graph(tree, limit=6)) == [
        ("~all", "All allocations", "", 105),
        ("1", "main", "~all", 100),
        ("2", "load", "1", 70),
        ("4", "decode", "2", 60),
        ("~all~other", "other (1 node)", "~all", 5),
        ("1~other", "other (1 node)", "1", 30),
    ]
    # 4: main's children and the top's other root are all "other"
    assert columns(flame_graph(tree, limit=4)) == [
        ("~all", "All allocations", "", 105),
        ("1", "main", "~all", 100),
        ("~all~other", "other (1 node)", "~all", 5),
        ("1~other", "other (2 nodes)", "1", 100),
    ]
    focused = focus_tree(tree, "2")
    # its path from the root above it, as wide as it (each one's own figure in `sizes`)
    data = flame_graph(focused, limit=100)
    assert columns(data) == [
        ("~all", "All allocations", "", 70),
        ("1", "main", "~all", 70),
        ("2", "load", "1", 70),
        ("4", "decode", "2", 60),
    ]
    assert data["sizes"] == [105, 100, 70, 60]


def test_flame_graph_of_an_inverted_tree():
    tree = build_call_tree(ROWS, STACKS, FRAMES, TreeOptions(inverted=True))
    labels = [(label, value) for _, label, _, value in columns(flame_graph(tree, limit=100))]
    # sites first: decode 60 (< load < main), blit 30 (< draw < main), load 10 (< main), no stack
    assert labels == [
        ("All allocations", 105),
        ("decode", 60), ("load", 60), ("main", 60),
        ("blit", 30), ("draw", 30), ("main", 30),
        ("load", 10), ("main", 10),
        ("(no stack)", 5),
    ]  # fmt: skip
