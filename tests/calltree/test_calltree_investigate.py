"""Search, permalinks, focus, charge to caller, flame graphs and Top Functions through the API, on
the snapshot of `conftest.tree_doc` (totals as in test_calltree_api):

    main 37872 > UIApplicationMain 37872 > -[ChatVC viewDidLoad] 37776 > -[MessageCell init]
    32256 (r1) and malloc 5520 (r2 4800 + r3 720); UIApplicationMain > Chat + 0x1a2b 96 (r4);
    (no stack) 16384 (r5). Total 54256 bytes in 160 allocations.
"""

from __future__ import annotations

import pytest
from django.utils import timezone

from memdash.allocations.models import Snapshot
from tests.calltree.test_calltree_api import CELL, UIAPP, VDL, summary, tree, walk

pytestmark = pytest.mark.django_db


def flame(api_client, sid, **params):
    response = api_client.get(f"/api/v1/snapshots/{sid}/calltree/flame", params)
    assert response.status_code == 200, response.json()
    return response.json()


def functions(api_client, sid, **params):
    response = api_client.get(f"/api/v1/snapshots/{sid}/calltree/functions", params)
    assert response.status_code == 200, response.json()
    return response.json()


def test_search_keeps_the_paths_through_a_match_and_opens_them(api_client, tree_snapshot_id):
    data = tree(api_client, tree_snapshot_id, search="MALLOC", expand="matches")
    # only r2 and r3 have malloc on their stack: 5520 bytes, 115 allocations
    assert (data["total_bytes"], data["total_count"]) == (5520, 115)
    assert summary(data) == [("main", 5520, 115, 0, 0)]
    opened = [(level["node"], [c["symbol"] for c in level["children"]]) for level in data["opened"]]
    main = data["children"][0]["id"]
    assert [symbols for _, symbols in opened] == [[UIAPP], [VDL], ["malloc"]]
    assert opened[0][0] == main
    last = data["opened"][-1]["children"][0]
    assert last["match"] is True and data["matches"] == [last["id"]]
    assert data["children"][0]["match"] is False


def test_open_ids_come_back_as_levels(api_client, tree_snapshot_id):
    main = tree(api_client, tree_snapshot_id)["children"][0]["id"]
    uiapp = walk(api_client, tree_snapshot_id, ["main"])["children"][0]["id"]
    data = tree(api_client, tree_snapshot_id, open=f"{main},{uiapp},nonsense")
    assert [
        (level["node"], [c["symbol"] for c in level["children"]]) for level in data["opened"]
    ] == [
        (main, [UIAPP]),
        (uiapp, [VDL, "Chat + 0x1a2b"]),
    ]  # an id not in the tree is left out


def test_focus_on_a_node(api_client, tree_snapshot_id):
    vdl = walk(api_client, tree_snapshot_id, ["main", UIAPP])["children"][0]["id"]
    data = tree(api_client, tree_snapshot_id, focus=vdl)
    assert (data["total_bytes"], data["total_count"]) == (37776, 157)
    assert [(c["symbol"], c["percent"]) for c in data["children"]] == [(VDL, 100.0)]
    below = tree(api_client, tree_snapshot_id, focus=vdl, node=vdl)
    assert [(c["symbol"], c["percent"]) for c in below["children"]] == [
        (CELL, 85.39),  # 32256 / 37776
        ("malloc", 14.61),
    ]
    response = api_client.get(f"/api/v1/snapshots/{tree_snapshot_id}/calltree", {"focus": "42"})
    assert response.status_code == 404


def test_charge_a_library_to_its_callers_and_flatten(api_client, tree_snapshot_id):
    data = walk(api_client, tree_snapshot_id, ["main"], charge="UIKitCore", flatten="1")
    # UIApplicationMain (UIKitCore) is gone: what it called hangs from main
    assert summary(data) == [(VDL, 37776, 157, 0, 0), ("Chat + 0x1a2b", 96, 2, 96, 2)]
    assert data["children"][0]["id"].startswith("p")


def test_flame_graph(api_client, tree_snapshot_id):
    data = flame(api_client, tree_snapshot_id)
    rows = {
        label: (value, data["labels"][data["ids"].index(parent)] if parent else None)
        for label, value, parent in zip(
            data["labels"], data["values"], data["parents"], strict=True
        )
    }
    assert rows == {
        "All allocations": (54256, None),
        "main": (37872, "All allocations"),
        UIAPP: (37872, "main"),
        VDL: (37776, UIAPP),
        CELL: (32256, VDL),
        "malloc": (5520, VDL),
        "Chat + 0x1a2b": (96, UIAPP),
        "(no stack)": (16384, "All allocations"),
    }
    assert (data["unit"], data["nodes"], data["total_bytes"]) == ("bytes", 8, 54256)


def test_flame_graph_with_the_tree_options(api_client, tree_snapshot_id):
    vdl = walk(api_client, tree_snapshot_id, ["main", UIAPP])["children"][0]["id"]
    focused = flame(api_client, tree_snapshot_id, focus=vdl, search="cell")
    assert list(zip(focused["labels"], focused["values"], focused["match"], strict=True)) == [
        # the path from the root above the focused node, as wide as it
        ("All allocations", 32256, False),
        ("main", 32256, False),
        (UIAPP, 32256, False),
        (VDL, 32256, False),  # the search keeps the stacks through MessageCell: r1 only
        (CELL, 32256, True),
    ]
    assert focused["sizes"] == [32256, 32256, 32256, 32256, 32256]  # r1 alone everywhere
    inverted = flame(api_client, tree_snapshot_id, inverted="1", category="Malloc 48 Bytes")
    assert inverted["labels"][:3] == ["All allocations", "malloc", VDL]
    assert inverted["values"][:3] == [5616, 5520, 5520]


def test_flame_graph_of_a_pruned_snapshot_from_its_stored_tree(api_client, tree_snapshot_id):
    Snapshot.objects.filter(pk=tree_snapshot_id).update(rows_pruned_at=timezone.now())
    data = flame(api_client, tree_snapshot_id, lifespan="transient")
    # transient: r1 23040, r3 240
    assert list(zip(data["labels"], data["values"], strict=True)) == [
        ("All allocations", 23280),
        ("main", 23280),
        (UIAPP, 23280),
        (VDL, 23280),
        (CELL, 23040),
        ("malloc", 240),
    ]


def test_build_flame_graph(api_client, app, tree_snapshot_id):
    build = Snapshot.objects.get(pk=tree_snapshot_id).build
    response = api_client.get(f"/api/v1/apps/{app.pk}/builds/{build.pk}/calltree/flame")
    assert response.status_code == 200
    assert response.json()["values"][:2] == [54256, 37872]


def test_top_functions(api_client, tree_snapshot_id):
    data = functions(api_client, tree_snapshot_id)
    rows = [(f["symbol"], f["self_bytes"], f["bytes"]) for f in data["functions"]]
    assert rows == [
        (CELL, 32256, 32256),
        ("(no stack)", 16384, 16384),
        ("malloc", 5520, 5520),
        ("Chat + 0x1a2b", 96, 96),
        (UIAPP, 0, 37872),  # ties main on bytes and count; by name, capitals first
        ("main", 0, 37872),
        (VDL, 0, 37776),
    ]
    assert (data["total"], data["more"]) == (7, 0)
    by_total = functions(api_client, tree_snapshot_id, order="total", limit=2, inverted="1")
    assert [f["symbol"] for f in by_total["functions"]] == [UIAPP, "main"]
    assert (by_total["total"], by_total["more"]) == (7, 5)
    bad = api_client.get(f"/api/v1/snapshots/{tree_snapshot_id}/calltree/functions?order=x")
    assert bad.status_code == 400


def test_top_functions_csv(member_client, tree_snapshot_id):
    response = member_client.get(
        f"/snapshots/{tree_snapshot_id}/calltree/functions.csv", {"search": "malloc"}
    )
    assert response.status_code == 200
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert lines[0] == "Function,Image,Self bytes,Self count,Total bytes,Total count"
    assert lines[1] == "malloc,libsystem_malloc.dylib,5520,115,5520,115"
    assert len(lines) == 5  # malloc, then main, UIApplicationMain, viewDidLoad (no self)
