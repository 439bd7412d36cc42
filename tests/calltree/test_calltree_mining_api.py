"""Data mining, sandwich and focus-with-path through the API, on the snapshot of
`conftest.tree_doc` (all lifespans), whose tree is worked out by hand in test_calltree_api:

    main 37872/159 > UIApplicationMain 37872/159 > -[ChatVC viewDidLoad] 37776/157
                                                      > -[MessageCell init] 32256/42 (own)
                                                      > malloc 5520/115 (own)
                                                 > Chat + 0x1a2b 96/2 (own)
    (no stack) 16384/1
    54256 bytes in 160 allocations.
"""

from __future__ import annotations

import pytest

from memdash.core.models import Build
from tests.calltree.test_calltree_pages import build_ids  # noqa: F401

pytestmark = pytest.mark.django_db

MALLOC_LIB = "libsystem_malloc.dylib"
VDL, CELL, UIAPP, CHAT = (
    "-[ChatVC viewDidLoad]",
    "-[MessageCell init]",
    "UIApplicationMain",
    ("Chat + 0x1a2b"),
)


def get(api_client, url, **params):
    response = api_client.get(url, params)
    assert response.status_code == 200, response.json()
    return response.json()


def summary(data):
    return [(c["symbol"], c["bytes"], c["count"], c["self_bytes"]) for c in data["children"]]


def walk(api_client, url, labels, **params):
    data = get(api_client, url, **params)
    for label in labels:
        node = next(c for c in data["children"] if c["symbol"] == label)
        data = get(api_client, url, node=node["id"], **params)
    return data


def tree_url(sid):
    return f"/api/v1/snapshots/{sid}/calltree"


def test_prune_charge_and_remove_a_symbol(api_client, tree_snapshot_id):
    url = tree_url(tree_snapshot_id)
    pruned = walk(api_client, url, ["main", UIAPP], prune_symbol="malloc")
    # malloc's 5520 bytes in 115 allocations go from every caller and from the total
    assert (pruned["total_bytes"], pruned["total_count"]) == (48736, 45)
    assert summary(pruned) == [(VDL, 32256, 42, 0), (CHAT, 96, 2, 96)]
    charged = walk(api_client, url, ["main", UIAPP, VDL], charge_symbol="malloc")
    # viewDidLoad's own now; the total stays
    assert (charged["total_bytes"], charged["total_count"]) == (54256, 160)
    assert summary(charged) == [(CELL, 32256, 42, 32256)]
    assert get(api_client, url, charge_symbol="malloc", node=charged["node"])["total"] == 1
    # UIKitCore removed: main calls viewDidLoad and Chat + 0x1a2b itself
    removed = walk(api_client, url, ["main"], remove_library="UIKitCore")
    assert summary(removed) == [(VDL, 37776, 157, 0), (CHAT, 96, 2, 96)]
    both = walk(api_client, url, ["main"], remove_library="UIKitCore", prune_symbol=CELL)
    assert summary(both) == [(VDL, 5520, 115, 0), (CHAT, 96, 2, 96)]


def test_rules_on_the_inverted_tree(api_client, tree_snapshot_id):
    data = get(api_client, tree_url(tree_snapshot_id), inverted=1, charge_symbol="malloc")
    # the allocation sites: MessageCell init, no stack, viewDidLoad (malloc's), Chat + 0x1a2b
    assert summary(data) == [
        (CELL, 32256, 42, 32256), ("(no stack)", 16384, 1, 16384), (VDL, 5520, 115, 5520),
        (CHAT, 96, 2, 96),
    ]  # fmt: skip


def test_minimum_bytes_and_count(api_client, tree_snapshot_id):
    url = tree_url(tree_snapshot_id)
    light = walk(api_client, url, ["main", UIAPP], min_bytes=1000)
    assert summary(light) == [(VDL, 37776, 157, 0), ("other (1 node under the minimum)", 96, 2, 96)]
    assert light["children"][1]["kind"] == "other" and not light["children"][1]["has_children"]
    few = get(api_client, url, min_count=50)
    assert summary(few) == [
        ("main", 37872, 159, 0),
        ("other (1 node under the minimum)", 16384, 1, 16384),
    ]
    assert (few["total_bytes"], few["total_count"]) == (54256, 160)  # the totals stay
    # the functions are all counted whatever the minimums
    functions = get(api_client, f"{url}/functions", min_bytes=1000)["functions"]
    assert {f["symbol"] for f in functions} >= {CHAT, "(no stack)"}


def test_sandwich(api_client, tree_snapshot_id):
    url = f"{tree_url(tree_snapshot_id)}/sandwich"
    data = get(api_client, url, function=VDL)
    assert data["function"] == {
        "symbol": VDL, "image": "", "bytes": 37776, "count": 157, "self_bytes": 0,
        "self_count": 0,
    }  # fmt: skip
    assert data["callers"]["labels"] == [VDL, UIAPP, "main"]
    assert data["callers"]["values"] == [37776, 37776, 37776]
    assert data["callers"]["parents"][0] == ""
    assert data["callees"]["labels"] == [VDL, CELL, "malloc"]
    assert data["callees"]["values"] == [37776, 32256, 5520]
    # under the tree's rules
    pruned = get(api_client, url, function=VDL, prune_symbol="malloc")
    assert (pruned["function"]["bytes"], pruned["callees"]["labels"]) == (32256, [VDL, CELL])
    # a leaf: its callers only
    malloc = get(api_client, url, function="malloc", inverted=1)  # inverted or not, the same
    assert malloc["callers"]["labels"] == ["malloc", VDL, UIAPP, "main"]
    assert malloc["function"]["self_count"] == 115
    missing = api_client.get(url, {"function": "nowhere"})
    assert missing.status_code == 404
    assert "function" in api_client.get(url).json()["fields"]


def csv_rows(response):
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    text = b"".join(response.streaming_content).decode()
    return [line.split(",") for line in text.splitlines()]


def test_sandwich_csv(api_client, tree_snapshot_id):
    """The sandwich of viewDidLoad as a table (the figures of test_sandwich): the function, its
    callers outward, its callees inward, each with its path from the function."""
    url = f"{tree_url(tree_snapshot_id)}/sandwich.csv"
    rows = csv_rows(api_client.get(url, {"function": VDL}))
    vdl = "'" + VDL  # a cell starting with "-" goes out as text, never a formula (CSV injection)
    cell = "'" + CELL
    assert rows == [
        ["Side", "Depth", "Function", "Image", "Path", "Total bytes"],
        ["function", "0", vdl, "", vdl, "37776"],
        ["caller", "1", UIAPP, "UIKitCore", f"{vdl} ← {UIAPP}", "37776"],
        ["caller", "2", "main", "", f"{vdl} ← {UIAPP} ← main", "37776"],
        ["callee", "1", cell, "", f"{vdl} → {CELL}", "32256"],
        ["callee", "1", "malloc", MALLOC_LIB, f"{vdl} → malloc", "5520"],
    ]
    pruned = csv_rows(api_client.get(url, {"function": VDL, "prune_symbol": "malloc"}))
    assert [r[2] for r in pruned[1:]] == [vdl, UIAPP, "main", cell]  # under the tree's rules
    assert pruned[1][5] == "32256"
    assert api_client.get(url, {"function": "nowhere"}).status_code == 404
    assert "function" in api_client.get(url).json()["fields"]


def test_build_sandwich_csv_says_what_it_sums(api_client, build_ids):  # noqa: F811
    app_id, build_id = build_ids  # two snapshots: malloc's 5520 bytes in one, median 2760
    url = f"/api/v1/apps/{app_id}/builds/{build_id}/calltree/sandwich.csv"
    response = api_client.get(url, {"function": "malloc"})
    assert "per-snapshot" in response["Content-Disposition"]
    assert csv_rows(response)[1] == ["function", "0", "malloc", MALLOC_LIB, "malloc", "2760"]
    summed = api_client.get(url, {"function": "malloc", "aggregate": "sum"})
    assert "-sum-" in summed["Content-Disposition"]
    assert csv_rows(summed)[1][5] == "5520"


def test_flame_focus_keeps_the_path(api_client, tree_snapshot_id):
    url = tree_url(tree_snapshot_id)
    vdl = walk(api_client, url, ["main", UIAPP])["children"][0]
    flame = get(api_client, f"{url}/flame", focus=vdl["id"])
    assert flame["labels"] == ["All allocations", "main", UIAPP, VDL, CELL, "malloc"]
    assert flame["values"][:4] == [37776] * 4  # the path as wide as the focused node
    assert flame["sizes"] == [54256, 37872, 37872, 37776, 32256, 5520]
    whole = get(api_client, f"{url}/flame")
    assert "sizes" not in whole  # every width its own figure


def test_bad_values_are_400_naming_the_parameter(api_client, tree_snapshot_id):
    url = tree_url(tree_snapshot_id)
    for params, name in [
        ({"min_bytes": "-1"}, "min_bytes"),
        ({"min_count": "many"}, "min_count"),
        ({"prune_symbol": [f"f{i}" for i in range(21)]}, "prune_symbol"),
        ({"remove_library": "x" * 2001}, "remove_library"),
    ]:
        for suffix in ("", "/flame", "/functions"):
            response = api_client.get(url + suffix, params)
            assert response.status_code == 400, (suffix, params)
            assert name in response.json()["fields"]
    response = api_client.get(f"{url}/sandwich", {"function": "x" * 2001})
    assert response.status_code == 400 and "function" in response.json()["fields"]


def test_functions_csv_under_the_rules(client, member, tree_snapshot_id):
    client.force_login(member)
    url = f"/snapshots/{tree_snapshot_id}/calltree/functions.csv"
    text = b"".join(client.get(url, {"prune_symbol": "malloc"}).streaming_content).decode()
    assert "malloc" not in text and CELL in text
    charged = b"".join(client.get(url, {"charge_symbol": "malloc"}).streaming_content).decode()
    # viewDidLoad's own bytes: malloc's 5520 in 115 allocations
    assert f"{VDL},,5520,115,37776,157" in charged


def test_build_tree_with_rules(api_client, tree_snapshot_id):
    build = Build.objects.get(version="8.1.0", number="300")  # of this one snapshot
    url = f"/api/v1/apps/{build.app_id}/builds/{build.pk}/calltree"
    pruned = walk(api_client, url, ["main", UIAPP], prune_symbol="malloc")
    assert summary(pruned) == [(VDL, 32256, 42, 0), (CHAT, 96, 2, 96)]
    data = get(api_client, f"{url}/sandwich", function="malloc")
    assert data["function"]["bytes"] == 5520


def test_a_builds_medians_per_snapshot_under_rules(api_client, build_ids):  # noqa: F811
    # build_ids: this snapshot and a second one of only r1 (32256 bytes under MessageCell init)
    # and r5 (no stack). main per snapshot: 37872 and 32256; malloc pruned: 32352 and 32256.
    app_id, build_id = build_ids
    url = f"/api/v1/apps/{app_id}/builds/{build_id}/calltree"
    plain = get(api_client, url)
    assert plain["children"][0]["bytes"] == 35064  # (37872 + 32256) / 2
    pruned = get(api_client, url, prune_symbol="malloc")
    assert (pruned["children"][0]["symbol"], pruned["children"][0]["bytes"]) == ("main", 32304)
    vdl = walk(api_client, url, ["main", UIAPP, VDL], prune_symbol="malloc")
    assert summary(vdl) == [(CELL, 32256, 42, 32256)]
    # malloc's sandwich: 5520 bytes in one snapshot, none in the other: median 2760
    data = get(api_client, f"{url}/sandwich", function="malloc")
    assert (data["function"]["bytes"], data["function"]["count"]) == (2760, 58)  # 115 / 2 up
    assert data["callers"]["labels"] == ["malloc", VDL, UIAPP, "main"]
