"""An events snapshot keyed again (stored under the older frame identity rule, `main` at two call
sites, two roots): its allocations one by one, its rows by time bucket and each bucket's call tree
move to the nodes its stacks became, and its list and Extended Detail show the new stacks.

The document, by hand: main@38 → malloc (node 1), main@40 → malloc (node 3), main@40 →
store_image → malloc (node 5); 0x10 (64 B, node 1) made at 0 and freed at 20, 0x20 (64 B, node
3) made at 10, 0x30 (320 B, node 5) made at 30. Keyed by function, main is one root: 0x10 and
0x20 on main → malloc, 0x30 on main → store_image → malloc; main holds 64 + 64 + 320 = 448 B."""

from __future__ import annotations

import pytest

from memdash.allocations.models import (
    AllocationBlock,
    CallTreeNode,
    Frame,
    ListEntry,
    TimedAllocationRow,
    TimedCallTreeNode,
)
from memdash.allocations.tasks import resymbolicate_app
from tests.symbols.documents import LOAD, _doc
from tests.symbols.test_function_identity import SOURCE, stored_the_old_way

pytestmark = pytest.mark.django_db

MALLOC, STORE = ("main", "malloc"), ("main", "store_image", "malloc")


def events_with_places() -> dict:
    frames = [
        {"symbol": "main", "image": 0, "address": hex(LOAD + 0x11BE), "file": SOURCE, "line": 38},
        {"symbol": "main", "image": 0, "address": hex(LOAD + 0x11D0), "file": SOURCE, "line": 40},
        {"symbol": "store_image", "image": 0, "address": hex(LOAD + 0x119C), "file": SOURCE,
         "line": 33},
        {"symbol": "malloc", "image": 1},
    ]  # fmt: skip
    stacks = [[None, 0], [0, 3], [None, 1], [2, 3], [2, 2], [4, 3]]
    doc = _doc("1.0", "2026-11-20T09:00:00+00:00", frames, stacks, [])
    del doc["allocations"]
    doc["events"] = [
        {"t_ms": 0, "fn": "malloc", "address": "0x10", "size": 64, "stack": 1},
        {"t_ms": 10, "fn": "malloc", "address": "0x20", "size": 64, "stack": 3},
        {"t_ms": 20, "fn": "free", "address": "0x10"},
        {"t_ms": 30, "fn": "malloc", "address": "0x30", "size": 320, "stack": 5},
    ]
    return doc


def paths_of(snapshot_id: int) -> dict[int, tuple[str, ...]]:
    """Each node of the snapshot's stored call tree: its path of symbols from the root."""
    nodes = {n.node_id: n for n in CallTreeNode.objects.filter(snapshot_id=snapshot_id)}
    names = dict(
        Frame.objects.filter(id__in=[n.frame_id for n in nodes.values()]).values_list(
            "id", "symbol"
        )
    )

    def path(node_id: int) -> tuple[str, ...]:
        node = nodes[node_id]
        above = path(node.parent_id) if node.parent_id is not None else ()
        return (*above, names[node.frame_id])

    return {node_id: path(node_id) for node_id in nodes}


def block_paths(snapshot_id: int) -> dict[int, tuple[str, ...]]:
    paths = paths_of(snapshot_id)
    blocks = AllocationBlock.objects.filter(snapshot_id=snapshot_id)
    return {b.address: paths[b.stack_id] for b in blocks}


def test_blocks_rows_by_bucket_and_their_trees_move_to_the_new_nodes(
    api_client, app, upload, monkeypatch
):
    old = stored_the_old_way(upload, events_with_places(), monkeypatch)
    before = paths_of(old.pk)
    assert sorted(p for p in before.values() if len(p) == 1) == [("main",), ("main",)]
    blocks = AllocationBlock.objects.filter(snapshot_id=old.pk)
    stacks = dict(blocks.values_list("address", "stack_id"))
    assert stacks[0x10] != stacks[0x20]  # two roots: two nodes

    job = resymbolicate_app(app)
    assert job is not None and job.state == "done"
    assert block_paths(old.pk) == {0x10: MALLOC, 0x20: MALLOC, 0x30: STORE}
    paths = paths_of(old.pk)
    by_path = {path: node for node, path in paths.items()}

    # the rows by bucket: every stack a node of the new tree, the bytes on each as before
    timed: dict[tuple[str, ...], int] = {}
    for stack, p_bytes, t_bytes in TimedAllocationRow.objects.filter(
        snapshot_id=old.pk
    ).values_list("stack_id", "persistent_bytes", "transient_bytes"):
        timed[paths[stack]] = timed.get(paths[stack], 0) + p_bytes + t_bytes
    assert timed == {MALLOC: 128, STORE: 320}
    # each bucket's tree: nodes of the new tree only, main's bytes over the buckets 448
    trees = TimedCallTreeNode.objects.filter(snapshot_id=old.pk)
    assert {t.node_id for t in trees} <= set(paths)
    root = [t for t in trees if t.node_id == by_path[("main",)]]
    assert sum(t.persistent_bytes + t.transient_bytes for t in root) == 448

    # the list (made again by the job's task, or read from the blocks) and the Extended Detail
    rows = api_client.get(f"/api/v1/snapshots/{old.pk}/allocations?sort=time&dir=asc").json()
    assert [(r["address"], paths[int(r["stack"])]) for r in rows["rows"]] == [
        ("0x10", MALLOC), ("0x20", MALLOC), ("0x30", STORE),
    ]  # fmt: skip
    assert {e.stack_id for e in ListEntry.objects.filter(snapshot_id=old.pk)} <= set(paths)
    stack = rows["rows"][0]["stack"]
    detail = api_client.get(f"/api/v1/snapshots/{old.pk}/stack?id={stack}").json()
    assert [f["symbol"] for f in detail["frames"]] == ["malloc", "main"]
