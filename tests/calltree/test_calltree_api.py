"""GET /api/v1/snapshots/<id>/calltree and /generations on the snapshot of `conftest.tree_doc`,
against totals worked out by hand from its five rows:

    r1 MessageCell      stack MessageCell init  thread main    gen 1: 12/9216 + 30/23040
    r2 Malloc 48 Bytes  stack malloc            thread main    gen 0: 100/4800
    r3 Malloc 48 Bytes  stack malloc            thread worker  gen 1: 10/480 + 5/240
    r4 Malloc 48 Bytes  stack Chat + 0x1a2b     thread worker  before the first mark: 2/96
    r5 VM: CoreAnimation no stack, no thread                   gen 1: 1/16384

All lifespans: r1 32256 B/42, r2 4800/100, r3 720/15, r4 96/2, r5 16384/1;
total 32256+4800+720+96+16384 = 54256 bytes in 42+100+15+2+1 = 160 allocations.
"""

from __future__ import annotations

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from memdash.allocations.models import CallTreeNode, Snapshot
from memdash.allocations.reads.calltree import trees as calltree_selectors

pytestmark = pytest.mark.django_db

VDL, CELL, UIAPP = "-[ChatVC viewDidLoad]", "-[MessageCell init]", "UIApplicationMain"


def tree(api_client, sid, **params):
    response = api_client.get(f"/api/v1/snapshots/{sid}/calltree", params)
    assert response.status_code == 200, response.json()
    return response.json()


def summary(data):
    """(symbol, bytes, count, self bytes, self count) of each child."""
    return [
        (c["symbol"], c["bytes"], c["count"], c["self_bytes"], c["self_count"])
        for c in data["children"]
    ]


def walk(api_client, sid, labels, **params):
    """The answer for the node reached by following `labels` from the roots."""
    data = tree(api_client, sid, **params)
    for label in labels:
        node = next(c for c in data["children"] if c["symbol"] == label)
        data = tree(api_client, sid, node=node["id"], **params)
    return data


def test_default_tree_from_the_stored_totals(api_client, tree_snapshot_id):
    sid = tree_snapshot_id
    data = tree(api_client, sid)
    assert (data["total_bytes"], data["total_count"]) == (54256, 160)
    assert (data["total"], data["more"]) == (2, 0)
    assert summary(data) == [
        ("main", 37872, 159, 0, 0),  # r1..r4: 32256+4800+720+96; 42+100+15+2
        ("(no stack)", 16384, 1, 16384, 1),  # r5
    ]
    main = data["children"][0]
    assert main["percent"] == 69.8  # 37872 / 54256 = 69.80 %
    assert main["has_children"] and main["image"] == ""
    assert summary(walk(api_client, sid, ["main", UIAPP])) == [
        (VDL, 37776, 157, 0, 0),  # r1+r2+r3
        ("Chat + 0x1a2b", 96, 2, 96, 2),  # r4, a frame without symbol: image + offset
    ]
    assert summary(walk(api_client, sid, ["main", UIAPP, VDL])) == [
        (CELL, 32256, 42, 32256, 42),
        ("malloc", 5520, 115, 5520, 115),  # r2+r3: 4800+720, 100+15
    ]
    # The default tree is read from CallTreeNode: its ids are the stored stack node ids.
    stored = set(CallTreeNode.objects.filter(snapshot_id=sid).values_list("node_id", flat=True))
    assert int(main["id"]) in stored


def test_heaviest_path_comes_with_the_roots(api_client, tree_snapshot_id):
    data = tree(api_client, tree_snapshot_id, expand="heaviest")
    levels = data["heaviest"]
    assert [lvl["children"][0]["symbol"] for lvl in levels] == [UIAPP, VDL, CELL]
    assert levels[0]["node"] == data["children"][0]["id"]
    assert levels[1]["total"] == 2 and levels[2]["children"][1]["symbol"] == "malloc"
    assert not levels[-1]["children"][0]["has_children"]


def test_lifespan_persistent(api_client, tree_snapshot_id):
    data = tree(api_client, tree_snapshot_id, lifespan="persistent")
    # persistent only: 9216+4800+480+96+16384 = 30976 bytes, 12+100+10+2+1 = 125
    assert (data["total_bytes"], data["total_count"]) == (30976, 125)
    assert summary(data) == [
        ("(no stack)", 16384, 1, 16384, 1),  # now heavier than main: 9216+4800+480+96 = 14592
        ("main", 14592, 124, 0, 0),
    ]
    assert summary(walk(api_client, tree_snapshot_id, ["main", UIAPP, VDL],
                        lifespan="persistent")) == [
        (CELL, 9216, 12, 9216, 12),
        ("malloc", 5280, 110, 5280, 110),  # 4800+480, 100+10
    ]  # fmt: skip


def test_lifespan_transient(api_client, tree_snapshot_id):
    data = tree(api_client, tree_snapshot_id, lifespan="transient")
    # freed only: r1 23040/30 and r3 240/5; nothing without a stack, nothing at Chat + 0x1a2b
    assert (data["total_bytes"], data["total_count"]) == (23280, 35)
    assert summary(data) == [("main", 23280, 35, 0, 0)]
    assert summary(walk(api_client, tree_snapshot_id, ["main", UIAPP], lifespan="transient")) == [
        (VDL, 23280, 35, 0, 0)
    ]
    # A paged answer through the default tree with a lifespan on the second page is empty.
    page = tree(api_client, tree_snapshot_id, lifespan="transient", offset=1)
    assert (page["children"], page["total"], page["more"]) == ([], 1, 0)


def test_category_filter(api_client, tree_snapshot_id):
    params = {"category": "Malloc 48 Bytes"}
    data = tree(api_client, tree_snapshot_id, **params)
    # r2+r3+r4: 4800+720+96 = 5616 bytes, 100+15+2 = 117 allocations
    assert (data["total_bytes"], data["total_count"]) == (5616, 117)
    assert summary(data) == [("main", 5616, 117, 0, 0)]
    assert data["children"][0]["percent"] == 100.0
    assert summary(walk(api_client, tree_snapshot_id, ["main", UIAPP], **params)) == [
        (VDL, 5520, 115, 0, 0),
        ("Chat + 0x1a2b", 96, 2, 96, 2),
    ]
    assert summary(walk(api_client, tree_snapshot_id, ["main", UIAPP, VDL], **params)) == [
        ("malloc", 5520, 115, 5520, 115)  # MessageCell's stack is not in this category
    ]
    # Computed on demand, yet with the same stack node ids as the stored default tree.
    assert data["children"][0]["id"] == tree(api_client, tree_snapshot_id)["children"][0]["id"]
    vm = tree(api_client, tree_snapshot_id, category="VM: CoreAnimation")
    assert summary(vm) == [("(no stack)", 16384, 1, 16384, 1)]
    unknown = tree(api_client, tree_snapshot_id, category="NoSuchClass")
    assert (unknown["children"], unknown["total_bytes"]) == ([], 0)


def test_category_and_lifespan_together(api_client, tree_snapshot_id):
    data = tree(api_client, tree_snapshot_id, category="Malloc 48 Bytes", lifespan="transient")
    assert summary(data) == [("main", 240, 5, 0, 0)]  # r3's freed blocks only


def test_generation_filter(api_client, tree_snapshot_id):
    sid = tree_snapshot_id
    data = tree(api_client, sid, generation="1")
    # r1+r3+r5: 32256+720+16384 = 49360 bytes; 42+15+1 = 58
    assert (data["total_bytes"], data["total_count"]) == (49360, 58)
    assert summary(data) == [("main", 32976, 57, 0, 0), ("(no stack)", 16384, 1, 16384, 1)]
    assert summary(walk(api_client, sid, ["main", UIAPP, VDL], generation="1")) == [
        (CELL, 32256, 42, 32256, 42),
        ("malloc", 720, 15, 720, 15),
    ]
    assert summary(tree(api_client, sid, generation="0")) == [("main", 4800, 100, 0, 0)]
    baseline = tree(api_client, sid, generation="baseline")
    assert (baseline["total_bytes"], baseline["total_count"]) == (96, 2)  # r4
    assert summary(walk(api_client, sid, ["main", UIAPP], generation="baseline")) == [
        ("Chat + 0x1a2b", 96, 2, 96, 2)
    ]
    # A generation the snapshot does not have is not there (404, as the page answers), named,
    # not answered with an empty tree.
    response = api_client.get(f"/api/v1/snapshots/{sid}/calltree", {"generation": "7"})
    assert response.status_code == 404
    assert response.json() == {"error": "this snapshot has no generation 7"}


def test_inverted(api_client, tree_snapshot_id):
    sid = tree_snapshot_id
    data = tree(api_client, sid, inverted="1")
    assert (data["total_bytes"], data["total_count"]) == (54256, 160)
    # allocation sites at the roots; their self counts are their totals
    assert summary(data) == [
        (CELL, 32256, 42, 32256, 42),
        ("(no stack)", 16384, 1, 16384, 1),
        ("malloc", 5520, 115, 5520, 115),  # r2+r3
        ("Chat + 0x1a2b", 96, 2, 96, 2),
    ]
    assert all(c["id"] == "n" or c["id"].startswith("p") for c in data["children"])
    # callers below, with no self counts of their own
    assert summary(walk(api_client, sid, ["malloc"], inverted="1")) == [(VDL, 5520, 115, 0, 0)]
    assert summary(walk(api_client, sid, ["malloc", VDL], inverted="1")) == [
        (UIAPP, 5520, 115, 0, 0)
    ]
    outermost = walk(api_client, sid, ["malloc", VDL, UIAPP], inverted="1")
    assert summary(outermost) == [("main", 5520, 115, 0, 0)]
    assert not outermost["children"][0]["has_children"]
    assert summary(walk(api_client, sid, ["Chat + 0x1a2b"], inverted="1")) == [(UIAPP, 96, 2, 0, 0)]
    heaviest = tree(api_client, sid, inverted="1", expand="heaviest")["heaviest"]
    assert [lvl["children"][0]["symbol"] for lvl in heaviest] == [VDL, UIAPP, "main"]


def test_hide_system_libraries(api_client, tree_snapshot_id):
    sid = tree_snapshot_id
    data = tree(api_client, sid, hide_system="1")
    assert summary(data) == [("main", 37872, 159, 0, 0), ("(no stack)", 16384, 1, 16384, 1)]
    # UIApplicationMain (UIKitCore) is gone; malloc's bytes are viewDidLoad's own now
    assert summary(walk(api_client, sid, ["main"], hide_system="1")) == [
        (VDL, 37776, 157, 5520, 115),
        ("Chat + 0x1a2b", 96, 2, 96, 2),
    ]
    assert summary(walk(api_client, sid, ["main", VDL], hide_system="1")) == [
        (CELL, 32256, 42, 32256, 42)
    ]
    inverted = tree(api_client, sid, hide_system="1", inverted="1")
    assert summary(inverted) == [
        (CELL, 32256, 42, 32256, 42),
        ("(no stack)", 16384, 1, 16384, 1),
        (VDL, 5520, 115, 5520, 115),  # malloc folded into its app caller
        ("Chat + 0x1a2b", 96, 2, 96, 2),
    ]
    assert summary(walk(api_client, sid, [VDL], hide_system="1", inverted="1")) == [
        ("main", 5520, 115, 0, 0)
    ]
    assert not any(c["system"] for c in inverted["children"])


def test_separate_by_thread(api_client, tree_snapshot_id):
    sid = tree_snapshot_id
    data = tree(api_client, sid, thread="1")
    assert summary(data) == [
        ("main", 37056, 142, 0, 0),  # thread 0: r1+r2 = 32256+4800, 42+100
        ("(unknown thread)", 16384, 1, 0, 0),  # r5
        ("worker", 816, 17, 0, 0),  # thread 1: r3+r4 = 720+96, 15+2
    ]
    assert [c["kind"] for c in data["children"]] == ["thread"] * 3
    worker_ui = walk(api_client, sid, ["worker", "main", UIAPP], thread="1")
    assert summary(worker_ui) == [(VDL, 720, 15, 0, 0), ("Chat + 0x1a2b", 96, 2, 96, 2)]
    main_vdl = walk(api_client, sid, ["main", "main", UIAPP, VDL], thread="1")
    assert summary(main_vdl) == [(CELL, 32256, 42, 32256, 42), ("malloc", 4800, 100, 4800, 100)]
    inverted = walk(api_client, sid, ["worker"], thread="1", inverted="1")
    assert summary(inverted) == [("malloc", 720, 15, 720, 15), ("Chat + 0x1a2b", 96, 2, 96, 2)]


def test_paging_and_show_more(api_client, tree_snapshot_id):
    sid = tree_snapshot_id
    first = tree(api_client, sid, inverted="1", limit=1)
    assert (first["total"], first["more"], len(first["children"])) == (4, 3, 1)
    second = tree(api_client, sid, inverted="1", limit=2, offset=1)
    assert [c["symbol"] for c in second["children"]] == ["(no stack)", "malloc"]
    assert second["more"] == 1
    # the default tree places "(no stack)" among the stored roots by bytes, page by page
    stored = [tree(api_client, sid, limit=1, offset=i)["children"][0]["symbol"] for i in (0, 1)]
    assert stored == ["main", "(no stack)"]
    persistent = tree(api_client, sid, lifespan="persistent", limit=1, offset=1)
    assert [c["symbol"] for c in persistent["children"]] == ["main"]
    assert persistent["total"] == 2 and persistent["more"] == 0


def test_bad_parameters_are_400_and_unknown_nodes_404(api_client, tree_snapshot_id):
    url = f"/api/v1/snapshots/{tree_snapshot_id}/calltree"
    for params in ({"lifespan": "forever"}, {"inverted": "maybe"}, {"limit": "0"},
                   {"offset": "-1"}, {"generation": "first"}, {"expand": "all"}):  # fmt: skip
        response = api_client.get(url, params)
        assert response.status_code == 400, params
        assert "error" in response.json()
    for params in ({"node": "12345"}, {"node": "pAAAAAAAAAAE", "inverted": "1"},
                   {"node": "garbage"}, {"node": "n", "lifespan": "transient"}):  # fmt: skip
        assert api_client.get(url, params).status_code == 404, params


def test_on_demand_trees_are_cached(api_client, tree_snapshot_id, django_assert_max_num_queries):
    sid = tree_snapshot_id
    cache.clear()
    tree(api_client, sid, inverted="1")
    snapshot = Snapshot.objects.get(pk=sid)
    query = calltree_selectors.CallTreeQuery(inverted=True)
    # Cached now: getting the tree again reads nothing from the allocation rows.
    with django_assert_max_num_queries(0):
        again = calltree_selectors.snapshot_call_tree(snapshot, query)
    assert again.total_bytes == 54256


def test_pruned_rows_leave_only_the_default_tree(api_client, tree_snapshot_id):
    from django.utils import timezone

    Snapshot.objects.filter(pk=tree_snapshot_id).update(rows_pruned_at=timezone.now())
    assert tree(api_client, tree_snapshot_id)["total_bytes"] == 54256
    response = api_client.get(f"/api/v1/snapshots/{tree_snapshot_id}/calltree?inverted=1")
    assert response.status_code == 409
    assert "pruned" in response.json()["error"]


def test_generations(api_client, tree_snapshot_id):
    response = api_client.get(f"/api/v1/snapshots/{tree_snapshot_id}/generations")
    assert response.status_code == 200
    assert response.json() == [
        # before the first mark: r4, 96 persistent bytes in 2 blocks
        {"index": None, "name": "Before first mark", "at_ms": None, "growth_bytes": 96,
         "persistent": 2},
        # Launch: r2, 4800 in 100
        {"index": 0, "name": "Launch", "at_ms": 0, "growth_bytes": 4800, "persistent": 100},
        # Open chat: r1+r3+r5 persistent: 9216+480+16384 = 26080 in 12+10+1 = 23
        {"index": 1, "name": "Open chat", "at_ms": 5320, "growth_bytes": 26080,
         "persistent": 23},
    ]  # fmt: skip


def test_outsiders_get_404_and_anonymous_users_are_refused(outsider, tree_snapshot_id):
    sid = tree_snapshot_id
    client = APIClient()
    client.force_authenticate(outsider)
    for url in (f"/api/v1/snapshots/{sid}/calltree", f"/api/v1/snapshots/{sid}/calltree?inverted=1",
                f"/api/v1/snapshots/{sid}/generations"):  # fmt: skip
        assert client.get(url).status_code == 404, url
    assert APIClient().get(f"/api/v1/snapshots/{sid}/calltree").status_code in (401, 403)
