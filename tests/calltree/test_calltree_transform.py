"""Flatten Recursion, charge to caller, Involves Symbol, focus and Top Functions, on a small
recursive tree whose results are worked out by hand.

Frames: 1 main, 2 parse, 3 visit, 7 render (app, image Chat); 4 json_alloc, 5 json_inner
(libjson); 6 malloc (libsystem_malloc.dylib, system).
Stack nodes (outermost first):
  10 main; 11 main>parse; 12 ..parse>visit; 13 ..visit>parse (indirect recursion);
  14 ..visit>parse>visit; 15 ..visit>parse>visit>malloc; 16 main>parse>visit>malloc;
  17 main>render; 18 ..render>json_alloc; 19 ..json_alloc>json_inner; 20 ..json_inner>malloc;
  21 main>render>render (direct recursion); 22 ..render>render>malloc; 23 json_alloc (a root
  made only of library frames).
Rows (stack: bytes, count): A 15: 64, 2; B 16: 32, 1; C 20: 16, 1; D 19: 8, 1; E 22: 4, 1;
F 23: 2, 1; G 14: 1, 1. Total 127 bytes in 8 allocations.
"""

from __future__ import annotations

from memdash.allocations.logic.calltree.build import build_call_tree
from memdash.allocations.logic.calltree.flame import FunctionRow, top_functions
from memdash.allocations.logic.calltree.products import Missing, TreeProduct, make_product
from memdash.allocations.logic.calltree.transform import focus_tree, matches, rewrite_stacks
from memdash.allocations.logic.calltree.tree import FrameInfo, StackInfo, TreeOptions, TreeRow

FRAMES = {
    1: FrameInfo("main", "Chat"),
    2: FrameInfo("parse", "Chat"),
    3: FrameInfo("visit", "Chat"),
    4: FrameInfo("json_alloc", "libjson"),
    5: FrameInfo("json_inner", "libjson"),
    6: FrameInfo("malloc", "libsystem_malloc.dylib", is_system=True),
    7: FrameInfo("render", "Chat"),
}
STACKS = {
    10: StackInfo(None, 1),
    11: StackInfo(10, 2),
    12: StackInfo(11, 3),
    13: StackInfo(12, 2),
    14: StackInfo(13, 3),
    15: StackInfo(14, 6),
    16: StackInfo(12, 6),
    17: StackInfo(10, 7),
    18: StackInfo(17, 4),
    19: StackInfo(18, 5),
    20: StackInfo(19, 6),
    21: StackInfo(17, 7),
    22: StackInfo(21, 6),
    23: StackInfo(None, 4),
}
ROWS = [
    TreeRow(15, None, 64, 2),
    TreeRow(16, None, 32, 1),
    TreeRow(20, None, 16, 1),
    TreeRow(19, None, 8, 1),
    TreeRow(22, None, 4, 1),
    TreeRow(23, None, 2, 1),
    TreeRow(14, None, 1, 1),
]


def build(**options):
    return build_call_tree(ROWS, STACKS, FRAMES, TreeOptions(**options))


def shape(tree, node_id=None):
    """The tree below a node as nested (label, bytes, self bytes, [children])."""
    page = tree.children(node_id, 0, 1000)
    assert page is not None, node_id
    return [(v.symbol, v.bytes, v.self_bytes, shape(tree, v.id)) for v in page[0]]


def test_flatten_recursion_collapses_direct_and_indirect_cycles():
    tree = build(flatten_recursion=True)
    # A main>parse>visit>parse>visit>malloc: back to parse, then visit again: main>parse>visit>
    # malloc, where B already is; G ends on the second visit: visit itself. E's render>render
    # collapses into one render.
    assert shape(tree) == [
        ("main", 125, 0, [
            ("parse", 97, 0, [
                ("visit", 97, 1, [("malloc", 96, 96, [])]),
            ]),
            ("render", 28, 0, [
                ("json_alloc", 24, 0, [("json_inner", 24, 8, [("malloc", 16, 16, [])])]),
                ("malloc", 4, 4, []),
            ]),
        ]),
        ("json_alloc", 2, 2, []),
    ]  # fmt: skip
    assert (tree.total_bytes, tree.total_count) == (127, 8)


def test_flatten_recursion_drops_the_frames_inside_the_cycle():
    # main > a > b > a > c: the cycle a>b>a is one node a; c is below it, b has nothing of it.
    frames = {1: FrameInfo("main"), 2: FrameInfo("a"), 3: FrameInfo("b"), 4: FrameInfo("c")}
    stacks = {1: StackInfo(None, 1), 2: StackInfo(1, 2), 3: StackInfo(2, 3),
              4: StackInfo(3, 2), 5: StackInfo(4, 4)}  # fmt: skip
    rows, rewritten = rewrite_stacks([TreeRow(5, None, 10, 1)], stacks, frames, (), True)
    path = []
    node = rows[0].stack_id
    while node is not None:
        path.append(frames[rewritten[node].frame_id].symbol)
        node = rewritten[node].parent_id
    assert path[::-1] == ["main", "a", "c"]


def test_charge_a_library_to_its_callers():
    tree = build(charge=("libjson",))
    # C main>render>[json_alloc>json_inner]>malloc: malloc under render; D's 8 bytes allocated in
    # json_inner are render's own; F, only libjson frames, keeps its outermost frame.
    assert shape(tree) == [
        ("main", 125, 0, [
            ("parse", 97, 0, [
                ("visit", 97, 0, [
                    ("parse", 65, 0, [("visit", 65, 1, [("malloc", 64, 64, [])])]),
                    ("malloc", 32, 32, []),
                ]),
            ]),
            ("render", 28, 8, [
                ("malloc", 16, 16, []),
                ("render", 4, 0, [("malloc", 4, 4, [])]),
            ]),
        ]),
        ("json_alloc", 2, 2, []),
    ]  # fmt: skip
    ids = [v.id for v in tree.children(None, 0, 10)[0]]
    assert all(i.startswith("p") for i in ids)  # rewritten stacks: nodes named by frame path


def test_charge_and_flatten_together():
    tree = build(charge=("libjson",), flatten_recursion=True)
    main = tree.children(None, 0, 10)[0][0]
    assert shape(tree, main.id) == [
        ("parse", 97, 0, [("visit", 97, 1, [("malloc", 96, 96, [])])]),
        ("render", 28, 8, [("malloc", 20, 20, [])]),  # C's 16 and E's 4
    ]


def test_involves_symbol_keeps_the_stacks_through_a_match():
    tree = build(search="JSON")  # case-insensitive: json_alloc, json_inner
    assert shape(tree) == [
        ("main", 24, 0, [
            ("render", 24, 0, [
                ("json_alloc", 24, 0, [("json_inner", 24, 8, [("malloc", 16, 16, [])])]),
            ]),
        ]),
        ("json_alloc", 2, 2, []),
    ]  # fmt: skip
    assert (tree.total_bytes, tree.total_count) == (26, 3)
    assert [v.id for v in tree.children(None, 0, 10)[0]] == ["10", "23"]  # stack ids kept


def test_involves_symbol_with_system_libraries_hidden_matches_only_shown_frames():
    assert shape(build(search="render", hide_system=True)) == [
        ("main", 28, 0, [
            ("render", 28, 0, [
                ("json_alloc", 24, 0, [("json_inner", 24, 24, [])]),
                ("render", 4, 4, []),
            ]),
        ]),
    ]  # fmt: skip
    hidden = build(search="malloc", hide_system=True)  # malloc is never shown: no match
    assert shape(hidden) == [] and hidden.total_bytes == 0


def test_matches_is_a_case_insensitive_substring():
    assert matches("-[ChatVC viewDidLoad]", "viewdid")
    assert not matches("main", "")


def test_focus_makes_a_subtree_the_tree():
    tree = build()
    focused = focus_tree(tree, "12")  # main>parse>visit: 97 bytes
    assert focused is not None
    assert (focused.total_bytes, focused.total_count) == (97, 4)
    roots = focused.children(None, 0, 10)[0]
    assert [(v.id, v.symbol, v.bytes, v.percent) for v in roots] == [("12", "visit", 97, 100.0)]
    assert [(v.symbol, v.bytes, v.percent) for v in focused.children("12", 0, 10)[0]] == [
        ("parse", 65, 67.01),  # 65 / 97
        ("malloc", 32, 32.99),
    ]
    assert focus_tree(tree, "999") is None


def test_top_functions_by_self_and_by_total():
    tree = build()
    rows = [(r.symbol, r.self_bytes, r.self_count, r.bytes, r.count) for r in top_functions(tree)]
    # malloc itself: A 64 + B 32 + C 16 + E 4; totals count a stack once even when a function
    # is on it twice (parse and visit on A, render on E).
    assert rows == [
        ("malloc", 116, 5, 116, 5),
        ("json_inner", 8, 1, 24, 2),
        ("json_alloc", 2, 1, 26, 3),  # F is a root of its own: 24 + 2
        ("visit", 1, 1, 97, 4),
        ("main", 0, 0, 125, 7),
        ("parse", 0, 0, 97, 4),
        ("render", 0, 0, 28, 3),
    ]
    by_total = [r.symbol for r in top_functions(tree, order="total")]
    assert by_total == ["main", "malloc", "visit", "parse", "render", "json_alloc", "json_inner"]
    render = tree.find("17")
    assert [(r.symbol, r.self_bytes, r.bytes) for r in top_functions(tree, render)] == [
        ("malloc", 20, 20),
        ("json_inner", 8, 24),
        ("render", 0, 28),
        ("json_alloc", 0, 24),
    ]


def test_involves_symbol_in_a_stack_of_system_frames_only():
    # start_wqthread > malloc, both system: with system libraries hidden the tree shows the
    # outermost frame, start_wqthread, which can match; malloc cannot.
    frames = {1: FrameInfo("start_wqthread", "libsystem_pthread.dylib", is_system=True),
              2: FrameInfo("malloc", "libsystem_malloc.dylib", is_system=True)}  # fmt: skip
    stacks = {1: StackInfo(None, 1), 2: StackInfo(1, 2)}
    rows = [TreeRow(2, None, 48, 3)]

    def tree(search):
        return build_call_tree(rows, stacks, frames, TreeOptions(hide_system=True, search=search))

    assert shape(tree("wqthread")) == [("start_wqthread", 48, 48, [])]
    assert shape(tree("malloc")) == []
    shown = build_call_tree(rows, stacks, frames, TreeOptions(search="malloc"))
    assert shape(shown) == [("start_wqthread", 48, 0, [("malloc", 48, 48, [])])]


def test_products_of_a_tree_as_the_cache_keeps_them():
    """Top Functions of a focus kept as their rows' fields, a flame graph as its columns, and a
    focus the tree lacks said, not raised (the task that makes them keeps that answer too)."""
    tree = build()
    render = TreeProduct("functions", focus="17")
    rows = [FunctionRow(*fields) for fields in make_product(tree, render)]
    assert [(r.symbol, r.self_bytes, r.bytes) for r in rows] == [  # as worked out above
        ("malloc", 20, 20),
        ("json_inner", 8, 24),
        ("render", 0, 28),
        ("json_alloc", 0, 24),
    ]
    flame = make_product(tree, TreeProduct("flame", focus="17", search="json"))
    # the path from the root above render (28 bytes), then json_alloc under it (24)
    assert flame["ids"][:4] == ["~all", "10", "17", "18"]
    assert flame["values"][:4] == [28, 28, 28, 24]
    assert flame["sizes"][:4] == [127, 125, 28, 24]
    assert flame["match"][:4] == [False, False, False, True]
    assert make_product(tree, TreeProduct("flame", focus="999")) == Missing(
        "no such node to focus on in this call tree"
    )
    inverted = build_call_tree(ROWS, STACKS, FRAMES, TreeOptions(inverted=True))
    assert make_product(inverted, TreeProduct("functions")) == Missing("no functions for this tree")
    assert TreeProduct.from_json(render.as_json()) == render
    assert render.token() != TreeProduct("functions", focus="17", order="total").token()
