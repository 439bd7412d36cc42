"""The pure call-tree builder, on a small tree whose totals are worked out by hand.

Frames (app unless marked system):
  1 main            2 UIApplicationMain (system)   3 -[VC viewDidLoad]
  4 malloc (system) 5 -[Cell init]                 6 start_wqthread (system)
  7 _dispatch_worker (system)                      8 no symbol: Chat + 0x1a2b
Stack nodes (outermost first):
  10 main; 11 main>UIApplicationMain; 12 ..>viewDidLoad; 13 ..>viewDidLoad>malloc;
  14 ..>viewDidLoad>Cell init; 15 start_wqthread; 16 start>dispatch; 17 start>dispatch>Chat+0x1a2b;
  18 main>UIApplicationMain>malloc; 19 a second node with the same frames as 13 (parent 12).
Rows:                                         bytes count
  A 13 main thread                             100   2
  B 14 main                                     50   1
  C 13 worker                                   30   1
  D 16 worker (only system frames)              20   4
  E 17 worker                                    8   1
  F 18 main                                      5   1
  G no stack, no thread                          7   1
  H 19 main (same frames as 13)                 10   1
Total: 100+50+30+20+8+5+7+10 = 230 bytes, 2+1+1+4+1+1+1+1 = 12 allocations.
"""

from __future__ import annotations

import pytest

from memdash.allocations.logic.calltree.build import build_call_tree
from memdash.allocations.logic.calltree.tree import (
    FrameInfo,
    StackInfo,
    TreeOptions,
    TreeRow,
)

FRAMES = {
    1: FrameInfo("main", "Chat"),
    2: FrameInfo("UIApplicationMain", "UIKitCore", is_system=True),
    3: FrameInfo("-[VC viewDidLoad]", "Chat"),
    4: FrameInfo("malloc", "libsystem_malloc.dylib", is_system=True),
    5: FrameInfo("-[Cell init]", "Chat"),
    6: FrameInfo("start_wqthread", "libsystem_pthread.dylib", is_system=True),
    7: FrameInfo("_dispatch_worker", "libdispatch.dylib", is_system=True),
    8: FrameInfo("", "Chat", offset=0x1A2B, address=0x100001A2B),
}
STACKS = {
    10: StackInfo(None, 1),
    11: StackInfo(10, 2),
    12: StackInfo(11, 3),
    13: StackInfo(12, 4),
    14: StackInfo(12, 5),
    15: StackInfo(None, 6),
    16: StackInfo(15, 7),
    17: StackInfo(16, 8),
    18: StackInfo(11, 4),
    19: StackInfo(12, 4),
}
ROWS = [
    TreeRow(13, "main", 100, 2),
    TreeRow(14, "main", 50, 1),
    TreeRow(13, "worker", 30, 1),
    TreeRow(16, "worker", 20, 4),
    TreeRow(17, "worker", 8, 1),
    TreeRow(18, "main", 5, 1),
    TreeRow(None, None, 7, 1),
    TreeRow(19, "main", 10, 1),
]


def build(**options):
    return build_call_tree(ROWS, STACKS, FRAMES, TreeOptions(**options))


def views(tree, node_id=None):
    page = tree.children(node_id, 0, 1000)
    assert page is not None, node_id
    return page[0]


def summary(tree, node_id=None):
    """(label, bytes, count, self bytes, self count) of the children of a node."""
    return [(v.symbol, v.bytes, v.count, v.self_bytes, v.self_count) for v in views(tree, node_id)]


def walk(tree, *labels):
    """The id of the node reached by following these labels from the roots."""
    node_id = None
    for label in labels:
        node_id = next(v.id for v in views(tree, node_id) if v.symbol == label)
    return node_id


def all_ids(tree, node_id=None):
    for view in views(tree, node_id):
        yield view.id
        yield from all_ids(tree, view.id)


def test_plain_tree_merges_identical_stacks_and_adds_up():
    tree = build()
    assert (tree.total_bytes, tree.total_count) == (230, 12)
    assert summary(tree) == [
        # main: A+B+C+F+H = 100+50+30+5+10 = 195 bytes, 2+1+1+1+1 = 6 allocations
        ("main", 195, 6, 0, 0),
        # start_wqthread: D+E = 20+8 = 28 bytes, 4+1 = 5
        ("start_wqthread", 28, 5, 0, 0),
        ("(no stack)", 7, 1, 7, 1),
    ]
    assert summary(tree, walk(tree, "main", "UIApplicationMain")) == [
        ("-[VC viewDidLoad]", 190, 5, 0, 0),  # A+B+C+H = 100+50+30+10
        ("malloc", 5, 1, 5, 1),  # F
    ]
    assert summary(tree, walk(tree, "main", "UIApplicationMain", "-[VC viewDidLoad]")) == [
        ("malloc", 140, 4, 140, 4),  # A+C+H: nodes 13 and 19 merged, 100+30+10, 2+1+1
        ("-[Cell init]", 50, 1, 50, 1),
    ]
    # D is allocated in _dispatch_worker itself (self 20 of 28); E below it, labelled by
    # image + offset since it has no symbol.
    dispatch = tree.node(walk(tree, "start_wqthread", "_dispatch_worker"))
    assert (dispatch.bytes, dispatch.count, dispatch.self_bytes, dispatch.self_count) == (
        28,
        5,
        20,
        4,
    )
    assert summary(tree, dispatch.id) == [("Chat + 0x1a2b", 8, 1, 8, 1)]


def test_plain_tree_ids_are_stack_node_ids():
    tree = build()
    vdl = walk(tree, "main", "UIApplicationMain", "-[VC viewDidLoad]")
    assert vdl == "12"
    # the merged node is named by the smaller of 13 and 19; both find it
    assert [v.id for v in views(tree, vdl)] == ["13", "14"]
    assert [v.id for v in views(tree)] == ["10", "15", "n"]
    assert tree.node("19") == tree.node("13")
    assert tree.children("999") is None
    assert tree.children("pAAAAAAAAAAE") is None  # a path id means nothing in the plain tree
    assert tree.children("t~.10") is None  # nor a thread in a tree not separated by thread
    for node_id in all_ids(tree):
        assert tree.node(node_id).id == node_id


def test_heaviest_path_and_paging():
    tree = build()
    assert tree.heaviest_path() == ["10", "11", "12", "13"]
    page, total = tree.children(None, 1, 1)
    assert total == 3
    assert [v.symbol for v in page] == ["start_wqthread"]
    assert tree.children(None, 5, 10) == ([], 3)


def test_percent_is_of_the_whole_tree():
    tree = build()
    main = tree.node("10")
    assert main.percent == round(100 * 195 / 230, 2)  # 84.78
    assert main.has_children and main.kind == "frame" and not main.system
    assert main.image == "Chat"
    start = tree.node("15")
    assert start.system and start.image == "libsystem_pthread.dylib"
    assert not tree.node("n").has_children and tree.node("n").kind == "no_stack"


def test_inverted_tree_puts_allocation_sites_at_the_root():
    tree = build(inverted=True)
    assert (tree.total_bytes, tree.total_count) == (230, 12)
    assert summary(tree) == [
        # malloc: A+C+H (under viewDidLoad) 140 + F (under UIApplicationMain) 5 = 145; 4+1 = 5
        ("malloc", 145, 5, 145, 5),
        ("-[Cell init]", 50, 1, 50, 1),
        ("_dispatch_worker", 20, 4, 20, 4),  # D
        ("Chat + 0x1a2b", 8, 1, 8, 1),  # E
        ("(no stack)", 7, 1, 7, 1),
    ]
    # Callers have no self counts: the allocations were made in malloc.
    assert summary(tree, walk(tree, "malloc")) == [
        ("-[VC viewDidLoad]", 140, 4, 0, 0),
        ("UIApplicationMain", 5, 1, 0, 0),
    ]
    assert summary(tree, walk(tree, "malloc", "-[VC viewDidLoad]", "UIApplicationMain")) == [
        ("main", 140, 4, 0, 0)
    ]
    assert summary(tree, walk(tree, "malloc", "UIApplicationMain")) == [("main", 5, 1, 0, 0)]
    assert summary(tree, walk(tree, "Chat + 0x1a2b", "_dispatch_worker")) == [
        ("start_wqthread", 8, 1, 0, 0)
    ]
    outermost = tree.node(walk(tree, "malloc", "UIApplicationMain", "main"))
    assert not outermost.has_children


def test_inverted_ids_are_frame_paths_and_round_trip():
    tree = build(inverted=True)
    node_id = walk(tree, "malloc", "-[VC viewDidLoad]", "UIApplicationMain", "main")
    assert node_id.startswith("p") and len(node_id) == 1 + 4 * 11  # 4 levels, 11 chars each
    for each in all_ids(tree):
        assert tree.node(each).id == each
    assert tree.node(node_id).bytes == 140
    assert tree.children("p!!") is None
    assert tree.children("13") is None
    assert tree.children("p" + node_id[1:12] + node_id[1:12]) is None  # malloc > malloc
    path = tree.heaviest_path()
    assert [tree.node(i).symbol for i in path] == [
        "malloc",
        "-[VC viewDidLoad]",
        "UIApplicationMain",
        "main",
    ]
    assert path[-1] == node_id


def test_hide_system_folds_system_frames_into_their_app_caller():
    tree = build(hide_system=True)
    assert summary(tree) == [
        # main: F's malloc under UIApplicationMain is folded into main (self 5)
        ("main", 195, 6, 5, 1),
        # D has no app frame at all: it keeps its outermost frame
        ("start_wqthread", 20, 4, 20, 4),
        # E: start_wqthread and _dispatch_worker are dropped above the app frame
        ("Chat + 0x1a2b", 8, 1, 8, 1),
        ("(no stack)", 7, 1, 7, 1),
    ]
    # UIApplicationMain is gone; malloc of A+C+H is folded into viewDidLoad: 140 self.
    assert summary(tree, walk(tree, "main")) == [("-[VC viewDidLoad]", 190, 5, 140, 4)]
    assert summary(tree, walk(tree, "main", "-[VC viewDidLoad]")) == [
        ("-[Cell init]", 50, 1, 50, 1)
    ]
    assert walk(tree, "main").startswith("p")
    for node_id in all_ids(tree):
        assert tree.node(node_id).id == node_id


def test_inverted_and_hide_system():
    tree = build(inverted=True, hide_system=True)
    assert summary(tree) == [
        ("-[VC viewDidLoad]", 140, 4, 140, 4),  # A+C+H, malloc folded into it
        ("-[Cell init]", 50, 1, 50, 1),
        ("start_wqthread", 20, 4, 20, 4),  # D, kept by its outermost frame
        ("Chat + 0x1a2b", 8, 1, 8, 1),
        ("(no stack)", 7, 1, 7, 1),
        ("main", 5, 1, 5, 1),  # F: malloc folded into main
    ]
    assert summary(tree, walk(tree, "-[VC viewDidLoad]")) == [("main", 140, 4, 0, 0)]
    assert summary(tree, walk(tree, "-[Cell init]")) == [("-[VC viewDidLoad]", 50, 1, 0, 0)]
    assert summary(tree, walk(tree, "-[Cell init]", "-[VC viewDidLoad]")) == [("main", 50, 1, 0, 0)]
    assert summary(tree, walk(tree, "Chat + 0x1a2b")) == []  # its callers were all system
    assert not tree.node(walk(tree, "start_wqthread")).has_children


def test_separate_by_thread_gives_a_root_per_thread():
    tree = build(by_thread=True)
    assert summary(tree) == [
        ("main", 165, 5, 0, 0),  # thread "main": A+B+F+H = 100+50+5+10, 2+1+1+1
        ("worker", 58, 6, 0, 0),  # C+D+E = 30+20+8, 1+4+1
        ("(unknown thread)", 7, 1, 0, 0),  # G
    ]
    main_thread, worker, unknown = (v.id for v in views(tree))
    assert tree.node(main_thread).kind == "thread"
    assert summary(tree, walk(tree, "main", "main", "UIApplicationMain")) == [
        ("-[VC viewDidLoad]", 160, 4, 0, 0),  # A+B+H
        ("malloc", 5, 1, 5, 1),
    ]
    assert summary(tree, worker) == [
        ("main", 30, 1, 0, 0),  # C
        ("start_wqthread", 28, 5, 0, 0),  # D+E
    ]
    # The same stack node under two threads gets two ids, each naming its thread.
    in_main = walk(tree, "main", "main", "UIApplicationMain", "-[VC viewDidLoad]", "malloc")
    in_worker = walk(tree, "worker", "main", "UIApplicationMain", "-[VC viewDidLoad]", "malloc")
    assert in_main == main_thread + ".13" and in_worker == worker + ".13"
    assert (tree.node(in_main).bytes, tree.node(in_worker).bytes) == (110, 30)  # A+H; C
    assert unknown == "t~"
    assert [v.id for v in views(tree, unknown)] == ["t~.n"]
    assert tree.children("13") is None  # a node of a thread tree needs its thread
    for node_id in all_ids(tree):
        assert tree.node(node_id).id == node_id


def test_separate_by_thread_inverted():
    tree = build(by_thread=True, inverted=True)
    assert summary(tree) == [("main", 165, 5, 0, 0), ("worker", 58, 6, 0, 0),
                             ("(unknown thread)", 7, 1, 0, 0)]  # fmt: skip
    assert summary(tree, walk(tree, "worker")) == [
        ("malloc", 30, 1, 30, 1),  # C
        ("_dispatch_worker", 20, 4, 20, 4),  # D
        ("Chat + 0x1a2b", 8, 1, 8, 1),  # E
    ]
    assert summary(tree, walk(tree, "main", "malloc")) == [
        ("-[VC viewDidLoad]", 110, 3, 0, 0),  # A+H
        ("UIApplicationMain", 5, 1, 0, 0),  # F
    ]
    for node_id in all_ids(tree):
        assert tree.node(node_id).id == node_id


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"inverted": True},
        {"hide_system": True},
        {"inverted": True, "hide_system": True},
        {"by_thread": True},
        {"by_thread": True, "inverted": True, "hide_system": True},
    ],
)
def test_every_node_adds_up(options):
    tree = build(**options)
    roots = views(tree)
    assert sum(v.bytes for v in roots) == 230
    assert sum(v.count for v in roots) == 12

    def check(view, depth):
        below = views(tree, view.id)
        if not tree.options.inverted or view.kind == "thread":
            # a node is what was allocated in it plus everything below it
            assert view.bytes == view.self_bytes + sum(v.bytes for v in below)
            assert view.count == view.self_count + sum(v.count for v in below)
        else:
            # a caller holds at least what its own callers hold (more where a stack ends)
            assert view.bytes >= sum(v.bytes for v in below)
            site = depth == 0 or (depth == 1 and tree.options.by_thread)
            expected = (view.bytes, view.count) if site else (0, 0)
            assert (view.self_bytes, view.self_count) == expected
        assert view.has_children == bool(below)
        assert [v.bytes for v in below] == sorted((v.bytes for v in below), reverse=True)
        for child in below:
            check(child, depth + 1)

    for root in roots:
        check(root, 0)


def test_rows_without_counts_are_left_out_and_empty_input_gives_an_empty_tree():
    for inverted in (False, True):
        tree = build_call_tree([TreeRow(13, None, 0, 0)], STACKS, FRAMES,
                               TreeOptions(inverted=inverted))  # fmt: skip
        assert tree.heaviest_path() == []
        assert tree.children(None, 0, 10) == ([], 0)
        assert (tree.total_bytes, tree.total_count) == (0, 0)


def test_trees_survive_pickling_for_the_cache():
    import pickle

    for options in ({}, {"inverted": True, "by_thread": True}):
        tree = build(**options)
        again = pickle.loads(pickle.dumps(tree))  # noqa: S301 (our own bytes)
        assert again.heaviest_path() == tree.heaviest_path()
        assert summary(again) == summary(tree)
