"""GET /api/v1/diff/flame: the diff call tree as an icicle coloured by change, over the snapshots
of tests/compare/helpers (persistent bytes, worked out by hand in test_diff_api):

    snapshot A: main 1928 > -[Feed load] 1928 (32 itself) > -[Cache store] 1000, -[Cell init] 896;
                (no stack) 16
    snapshot B: main 3896 > -[Feed load] 3896 > -[Cache store] 2000, -[Cell init] 1896

A node is as wide as its larger side; values are what that width has beyond the drawn children.
"""

from __future__ import annotations

import pytest

from tests.compare.test_diff_api import snapshot_a, snapshot_b, tree  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db


def flame(api_client, base, target, **params):
    response = api_client.get("/api/v1/diff/flame", {"base": base, "target": target, **params})
    assert response.status_code == 200, response.content
    return response.json()


def rows(data):
    parent_label = {i: label for i, label in zip(data["ids"], data["labels"], strict=True)}
    return [
        (label, parent_label.get(parent), value, base, target, delta)
        for label, parent, value, base, target, delta in zip(
            data["labels"], data["parents"], data["values"], data["base"], data["target"],
            data["delta"], strict=True,
        )
    ]  # fmt: skip


def test_snapshot_diff_flame(api_client, snapshot_a, snapshot_b):  # noqa: F811
    data = flame(api_client, f"snapshot:{snapshot_a}", f"snapshot:{snapshot_b}")
    assert data["branchvalues"] == "remainder"
    assert rows(data) == [
        ("All allocations", None, 0, 1944, 3896, 1952),  # 3896 wide: main and (no stack) fill it
        ("main", "All allocations", 0, 1928, 3896, 1968),
        ("-[Feed load]", "main", 0, 1928, 3896, 1968),  # 3896 = Cache 2000 + Cell 1896
        ("-[Cache store]", "-[Feed load]", 2000, 1000, 2000, 1000),
        ("-[Cell init]", "-[Feed load]", 1896, 896, 1896, 1000),
        ("(no stack)", "All allocations", 16, 16, 0, -16),
    ]
    assert data["match"] == [False] * 6


def test_generation_diff_flame_widths_beyond_the_parent(api_client, snapshot_a):  # noqa: F811
    # gen 0: main 972 > Feed 972 > Cell 640, Cache 300; gen 1: main 756 > Feed > Cache 500,
    # Cell 256; (no stack) 16. Feed is 972 wide, its children 640 + 500: it is drawn as theirs.
    data = flame(api_client, f"generation:{snapshot_a}:0", f"generation:{snapshot_a}:1")
    assert rows(data) == [
        ("All allocations", None, 0, 972, 772, -200),
        ("main", "All allocations", 0, 972, 756, -216),
        ("-[Feed load]", "main", 0, 972, 756, -216),
        ("-[Cell init]", "-[Feed load]", 640, 640, 256, -384),
        ("-[Cache store]", "-[Feed load]", 500, 300, 500, 200),
        ("(no stack)", "All allocations", 16, 0, 16, 16),
    ]


def test_diff_flame_search_and_focus(api_client, snapshot_a, snapshot_b):  # noqa: F811
    base, target = f"snapshot:{snapshot_a}", f"snapshot:{snapshot_b}"
    searched = flame(api_client, base, target, search="cache")
    assert [(r[0], r[3], r[4]) for r in rows(searched)] == [
        ("All allocations", 1000, 2000),
        ("main", 1000, 2000),
        ("-[Feed load]", 1000, 2000),
        ("-[Cache store]", 1000, 2000),
    ]
    assert searched["match"] == [False, False, False, True]
    main = tree(api_client, base, target)["nodes"][0]["id"]
    feed = tree(api_client, base, target, main)["nodes"][0]["id"]
    focused = flame(api_client, base, target, focus=feed)
    # The path from the root stays above the focused node (as the plain flame graph keeps it):
    # the whole tree and main, each drawn as wide as Feed (3896, nothing of their own beyond
    # it: value 0) but with their own sides (the whole tree: main 1928 + (no stack) 16 = 1944).
    assert rows(focused) == [
        ("All allocations", None, 0, 1944, 3896, 1952),
        ("main", "All allocations", 0, 1928, 3896, 1968),
        ("-[Feed load]", "main", 0, 1928, 3896, 1968),
        ("-[Cache store]", "-[Feed load]", 2000, 1000, 2000, 1000),
        ("-[Cell init]", "-[Feed load]", 1896, 896, 1896, 1000),
    ]
    assert focused["ids"][1:3] == [main, feed]
    refocused = flame(api_client, base, target, focus=main)  # a root: only the whole tree above
    assert [r[:2] for r in rows(refocused)][:3] == [
        ("All allocations", None),
        ("main", "All allocations"),
        ("-[Feed load]", "main"),
    ]
    missing = api_client.get("/api/v1/diff/flame", {"base": base, "target": target, "focus": "7"})
    assert missing.status_code == 404
