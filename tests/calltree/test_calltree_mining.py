"""Data mining (charge, prune, remove a symbol or a library; minimum bytes and count), the
sandwich of a function and the focus that keeps its path, on the small recursive tree of
test_calltree_transform (its docstring lists frames, stacks and rows), worked out by hand.

The plain tree (bytes, self bytes), 127 bytes in 8 allocations:
  main 125/0 > parse 97/0 > visit 97/0 > parse 65/0 > visit 65/1 > malloc 64/64
                                      > malloc 32/32
             > render 28/0 > json_alloc 24/0 > json_inner 24/8 > malloc 16/16
                           > render 4/0 > malloc 4/4
  json_alloc 2/2
"""

from __future__ import annotations

from memdash.allocations.logic.calltree.flame import TOP_ID, flame_graph
from memdash.allocations.logic.calltree.mining import (
    CHARGE,
    LIBRARY,
    PRUNE,
    REMOVE,
    SYMBOL,
    ConstrainedTree,
    Rule,
    inverted_of,
    mine_tree,
    sandwich,
)
from memdash.allocations.logic.calltree.transform import focus_tree
from tests.calltree.test_calltree_transform import build, shape

MAIN_PATH = [
    ("parse", 97, 0, [
        ("visit", 97, 0, [
            ("parse", 65, 0, [("visit", 65, 1, [("malloc", 64, 64, [])])]),
            ("malloc", 32, 32, []),
        ]),
    ]),
]  # fmt: skip
RENDER = ("render", 28, 0, [
    ("json_alloc", 24, 0, [("json_inner", 24, 8, [("malloc", 16, 16, [])])]),
    ("render", 4, 0, [("malloc", 4, 4, [])]),
])  # fmt: skip


def mined(*rules: Rule, **options):
    return mine_tree(build(**options), rules)


def totals(tree):
    return tree.total_bytes, tree.total_count


def test_no_rule_naming_a_frame_leaves_the_tree_as_it_is():
    tree = build()
    assert mine_tree(tree, [Rule(PRUNE, SYMBOL, "nowhere")]) is tree
    assert shape(tree) == [("main", 125, 0, [*MAIN_PATH, RENDER]), ("json_alloc", 2, 2, [])]


def test_charge_a_symbol_to_its_callers():
    tree = mined(Rule(CHARGE, SYMBOL, "malloc"))
    # Each malloc's 64, 32, 16, 4 are its caller's own: visit 1 + 64, visit 32, json_inner 8 +
    # 16, render 4. Nothing is lost.
    assert shape(tree) == [
        ("main", 125, 0, [
            ("parse", 97, 0, [
                ("visit", 97, 32, [("parse", 65, 0, [("visit", 65, 65, [])])]),
            ]),
            ("render", 28, 0, [
                ("json_alloc", 24, 0, [("json_inner", 24, 24, [])]),
                ("render", 4, 4, []),
            ]),
        ]),
        ("json_alloc", 2, 2, []),
    ]  # fmt: skip
    assert totals(tree) == (127, 8)
    assert all(v.id.startswith("p") for v in tree.children(None)[0])  # named by frame path


def test_charge_a_root_symbol_lifts_its_callees_to_the_roots():
    # main allocated nothing itself: it goes, parse and render are roots.
    tree = mined(Rule(CHARGE, SYMBOL, "main"))
    assert [(v.symbol, v.bytes) for v in tree.children(None)[0]] == [
        ("parse", 97),
        ("render", 28),
        ("json_alloc", 2),
    ]
    # json_alloc at the root has no caller: it keeps its own 2 bytes; under render it goes,
    # json_inner is render's child.
    tree = mined(Rule(CHARGE, SYMBOL, "json_alloc"))
    assert shape(tree)[1] == ("json_alloc", 2, 2, [])
    render = shape(tree)[0][3][1]
    assert render == ("render", 28, 0, [
        ("json_inner", 24, 8, [("malloc", 16, 16, [])]), ("render", 4, 0, [("malloc", 4, 4, [])])
    ])  # fmt: skip
    assert totals(tree) == (127, 8)


def test_prune_a_symbol_takes_its_subtrees_off():
    tree = mined(Rule(PRUNE, SYMBOL, "visit"))
    # Every path through visit goes (97 bytes, 4 allocations); parse has nothing left: gone.
    assert shape(tree) == [("main", 28, 0, [RENDER]), ("json_alloc", 2, 2, [])]
    assert totals(tree) == (30, 4)


def test_remove_a_symbol_attaches_its_callees_to_its_caller():
    tree = mined(Rule(REMOVE, SYMBOL, "visit"))
    # The visits go: the inner parse is the outer parse's child, the mallocs under the parses;
    # the inner visit's own byte is gone with it.
    assert shape(tree) == [
        ("main", 124, 0, [
            ("parse", 96, 0, [("parse", 64, 0, [("malloc", 64, 64, [])]), ("malloc", 32, 32, [])]),
            RENDER,
        ]),
        ("json_alloc", 2, 2, []),
    ]  # fmt: skip
    assert totals(tree) == (126, 7)


def test_library_rules():
    pruned = mined(Rule(PRUNE, LIBRARY, "libjson"))
    # libjson's frames and below: 24 bytes under render, and the 2-byte root.
    assert shape(pruned) == [
        ("main", 101, 0, [*MAIN_PATH, ("render", 4, 0, [("render", 4, 0, [("malloc", 4, 4, [])])])])
    ]  # fmt: skip
    assert totals(pruned) == (101, 5)
    removed = mined(Rule(REMOVE, LIBRARY, "libjson"))
    # json_inner's own 8 bytes and the root's 2 go; malloc is render's child.
    assert shape(removed)[0][3][1] == (
        "render",
        20,
        0,
        [("malloc", 16, 16, []), ("render", 4, 0, [("malloc", 4, 4, [])])],
    )
    assert totals(removed) == (117, 6)


def test_prune_comes_before_charge_and_rules_combine():
    tree = mined(Rule(CHARGE, SYMBOL, "render"), Rule(PRUNE, SYMBOL, "render"))
    assert shape(tree) == [("main", 97, 0, MAIN_PATH), ("json_alloc", 2, 2, [])]
    both = mined(Rule(PRUNE, SYMBOL, "render"), Rule(CHARGE, SYMBOL, "malloc"))
    assert shape(both) == [
        ("main", 97, 0, [("parse", 97, 0, [
            ("visit", 97, 32, [("parse", 65, 0, [("visit", 65, 65, [])])]),
        ])]),
        ("json_alloc", 2, 2, []),
    ]  # fmt: skip


def test_rules_on_a_tree_by_thread_keep_the_threads():
    tree = mined(Rule(PRUNE, SYMBOL, "render"), by_thread=True)
    [thread] = tree.children(None)[0]
    assert (thread.kind, thread.symbol, thread.bytes) == ("thread", "(unknown thread)", 99)
    assert [(v.symbol, v.bytes) for v in tree.children(thread.id)[0]] == [
        ("main", 97),
        ("json_alloc", 2),
    ]


def test_a_mined_tree_inverted():
    tree = inverted_of(mined(Rule(CHARGE, SYMBOL, "malloc")))
    # The allocation sites are now visit (32 + 65), json_inner 24, render 4, json_alloc 2.
    roots = tree.children(None)[0]
    assert [(v.symbol, v.bytes, v.self_bytes) for v in roots] == [
        ("visit", 97, 97),
        ("json_inner", 24, 24),
        ("render", 4, 4),
        ("json_alloc", 2, 2),
    ]
    # visit's callers: parse (both visits), then visit (65) and main (32) under it.
    [parse] = tree.children(roots[0].id)[0]
    assert [(v.symbol, v.bytes) for v in tree.children(parse.id)[0]] == [
        ("visit", 65),
        ("main", 32),
    ]
    assert totals(tree) == (127, 8)
    # The same as charging malloc's library on the stacks before building the inverted tree.
    stacks_first = build(inverted=True, charge=("libsystem_malloc.dylib",))
    assert shape(stacks_first) == shape(tree)


def test_minimum_bytes_and_count_fold_light_nodes_into_one_line():
    tree = ConstrainedTree(build(), min_bytes=20)
    roots, total = tree.children(None)
    assert total == 2
    assert [(v.symbol, v.bytes, v.kind, v.has_children) for v in roots] == [
        ("main", 125, "frame", True),
        ("other (1 node under the minimum)", 2, "other", False),
    ]
    assert tree.node(roots[1].id) == roots[1]
    assert tree.children(roots[1].id) == ([], 0)
    render = tree.children(roots[0].id)[0][1]
    # under render: json_alloc 24 kept, the inner render's 4 bytes in one line
    assert [(v.symbol, v.bytes, v.count) for v in tree.children(render.id)[0]] == [
        ("json_alloc", 24, 2),
        ("other (1 node under the minimum)", 4, 1),
    ]
    assert totals(tree) == (127, 8)
    by_count = ConstrainedTree(build(), min_count=2)
    # main 7 allocations kept, json_alloc's 1 folded; under render: json_alloc 2, render 1.
    assert [(v.symbol, v.count) for v in by_count.children(None)[0]] == [
        ("main", 7),
        ("other (1 node under the minimum)", 1),
    ]
    assert by_count.node("nowhere~small") is None


def test_sandwich_of_a_leaf_function():
    made = sandwich(build(), "malloc")
    assert made is not None
    # Four calls: 64 + 32 + 16 + 4 bytes in 2 + 1 + 1 + 1 allocations, all malloc's own.
    assert (made.bytes, made.count, made.self_bytes, made.self_count) == (116, 5, 116, 5)
    assert shape(made.callers) == [
        ("malloc", 116, 0, [
            ("visit", 96, 0, [
                ("parse", 96, 0, [
                    ("visit", 64, 0, [("parse", 64, 0, [("main", 64, 64, [])])]),
                    ("main", 32, 32, []),
                ]),
            ]),
            ("json_inner", 16, 0, [
                ("json_alloc", 16, 0, [("render", 16, 0, [("main", 16, 16, [])])]),
            ]),
            ("render", 4, 0, [("render", 4, 0, [("main", 4, 4, [])])]),
        ]),
    ]  # fmt: skip
    assert shape(made.callees) == [("malloc", 116, 116, [])]


def test_sandwich_of_a_recursive_function_counts_it_once():
    made = sandwich(build(), "visit")
    assert made is not None
    # visit's outermost call holds 97 bytes in 4 allocations; the inner visit's own 1 byte is
    # its self.
    assert (made.bytes, made.count, made.self_bytes, made.self_count) == (97, 4, 1, 1)
    assert shape(made.callers) == [("visit", 97, 0, [("parse", 97, 0, [("main", 97, 97, [])])])]
    assert shape(made.callees) == [
        ("visit", 97, 0, [
            ("parse", 65, 0, [("visit", 65, 1, [("malloc", 64, 64, [])])]),
            ("malloc", 32, 32, []),
        ]),
    ]  # fmt: skip
    assert sandwich(build(), "no such function") is None


def test_sandwich_of_a_root_function_has_no_callers():
    made = sandwich(build(), "json_alloc")
    assert made is not None
    # under render (24 bytes, 2 allocations) and at the root (2 bytes, its own)
    assert (made.bytes, made.count, made.self_bytes) == (26, 3, 2)
    assert shape(made.callers) == [
        ("json_alloc", 26, 2, [("render", 24, 0, [("main", 24, 24, [])])])
    ]


def test_focus_keeps_the_path_from_the_root():
    tree = build()
    focused = focus_tree(tree, "14")  # main > parse > visit > parse > visit
    assert focused is not None
    data = flame_graph(focused)
    assert data["ids"] == [TOP_ID, "10", "11", "12", "13", "14", "15"]
    assert data["labels"] == [
        "All allocations",
        "main",
        "parse",
        "visit",
        "parse",
        "visit",
        "malloc",
    ]
    assert data["parents"] == ["", TOP_ID, "10", "11", "12", "13", "14"]
    # the path as wide as the focused node; each says its own figure in `sizes`
    assert data["values"] == [65, 65, 65, 65, 65, 65, 64]
    assert data["sizes"] == [127, 125, 97, 97, 65, 65, 64]
    assert [v.symbol for v in tree.ancestors("14")] == ["main", "parse", "visit", "parse"]
    assert tree.ancestors("999") is None


def test_focus_path_in_a_mined_and_an_inverted_tree():
    tree = mined(Rule(CHARGE, SYMBOL, "malloc"))
    visit = shape(tree)[0]
    inner = tree.children(tree.children(tree.children(None)[0][0].id)[0][0].id)[0][0]
    assert inner.symbol == "visit" and visit[0] == "main"
    assert [v.symbol for v in tree.ancestors(inner.id)] == ["main", "parse"]
    inverted = build(inverted=True)
    malloc = inverted.children(None)[0][0]
    visit_caller = inverted.children(malloc.id)[0][0]
    parse_caller = inverted.children(visit_caller.id)[0][0]
    assert [v.symbol for v in inverted.ancestors(parse_caller.id)] == ["malloc", "visit"]
