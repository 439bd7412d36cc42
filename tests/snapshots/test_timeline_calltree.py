"""A range's call tree is read from the trees of its time buckets (TimedCallTreeNode, stored at
ingest), summed a level at a time, never from the allocation rows: on `timeline_example`
(tests/snapshots/test_timeline.py), worked out by hand. Stacks: main > UIApplicationMain >
viewDidLoad (2) > MessageCell init (3).

- bucket 0: A 100 B at stack 2, freed (transient); B 50 B without a stack, ended
- bucket 40: A 200 B at stack 3, persistent
- buckets 60 and 99: B 80 B and C 10 B, without a stack, persistent
"""

from __future__ import annotations

import pytest

from memdash.allocations.models import (
    AllocationRow,
    Frame,
    TimedAllocationRow,
    TimedCallTreeNode,
    Timeline,
)
from tests.samples import timeline_example
from tests.snapshots.test_timeline import uploaded

pytestmark = pytest.mark.django_db

VDL, CELL, UIAPP = (
    "-[ChatViewController viewDidLoad]",
    "-[MessageCell initWithStyle:]",
    ("UIApplicationMain"),
)


def test_each_buckets_tree_is_stored(upload):
    sid = uploaded(upload, timeline_example())
    symbols = dict(Frame.objects.values_list("pk", "symbol"))
    rows = {
        (bucket, symbols[frame], tuple(counts))
        for bucket, frame, *counts in TimedCallTreeNode.objects.filter(snapshot_id=sid).values_list(
            "bucket", "frame_id", "persistent", "persistent_bytes", "transient",
            "transient_bytes", "self_persistent", "self_persistent_bytes", "self_transient",
            "self_transient_bytes",
        )
    }  # fmt: skip
    assert rows == {
        (0, "main", (0, 0, 1, 100, 0, 0, 0, 0)),
        (0, UIAPP, (0, 0, 1, 100, 0, 0, 0, 0)),
        (0, VDL, (0, 0, 1, 100, 0, 0, 1, 100)),
        (40, "main", (1, 200, 0, 0, 0, 0, 0, 0)),
        (40, UIAPP, (1, 200, 0, 0, 0, 0, 0, 0)),
        (40, VDL, (1, 200, 0, 0, 0, 0, 0, 0)),
        (40, CELL, (1, 200, 0, 0, 1, 200, 0, 0)),
    }
    made = Timeline.objects.get(snapshot_id=sid).made
    assert (made[0], made[40], made[60], made[99]) == (
        [0, 0, 2, 150], [1, 200, 0, 0], [1, 80, 0, 0], [1, 10, 0, 0],
    )  # fmt: skip
    assert sum(map(sum, made)) == 150 + 2 + 200 + 1 + 80 + 1 + 10 + 1


def test_a_ranges_tree_reads_no_row(upload, api_client):
    sid = uploaded(upload, timeline_example())
    for table in (AllocationRow, TimedAllocationRow):  # nothing left to read but the trees
        table.objects.filter(snapshot_id=sid).delete()
    url = f"/api/v1/snapshots/{sid}/calltree"

    def get(**params):
        response = api_client.get(url, params)
        assert response.status_code == 200, response.json()
        return response.json()

    def level(data):
        return [(c["symbol"], c["bytes"], c["count"], c["self_bytes"]) for c in data["children"]]

    whole = get(from_ms=0, to_ms=1000, expand="heaviest")
    # everything: main 300 B in 2 (A 100 and A 200), (no stack) B 50, B 80, C 10
    assert (whole["total_bytes"], whole["total_count"]) == (440, 5)
    assert level(whole) == [("main", 300, 2, 0), ("(no stack)", 140, 3, 140)]
    heaviest = [[c["symbol"] for c in lv["children"]] for lv in whole["heaviest"]]
    assert heaviest == [[UIAPP], [VDL], [CELL]]
    assert [c["bytes"] for c in whole["heaviest"][2]["children"]] == [200]
    # 395 to 605 ms: buckets 39 to 60, A 200 at stack 3 and B 80
    ranged = get(from_ms=395, to_ms=605)
    assert (ranged["total_bytes"], ranged["total_count"]) == (280, 2)
    assert level(ranged) == [("main", 200, 1, 0), ("(no stack)", 80, 1, 80)]
    vdl = ranged
    for _ in ("main", UIAPP, VDL):  # down the only path: main > UIApplicationMain > viewDidLoad
        vdl = get(from_ms=395, to_ms=605, node=vdl["children"][0]["id"])
    assert level(vdl) == [(CELL, 200, 1, 200)]  # MessageCell init allocated it itself
    cell = vdl["children"][0]["id"]
    assert vdl["children"][0]["has_children"] is False
    assert get(from_ms=395, to_ms=605, node=cell)["children"] == []
    # 0 to 300 ms, Created & Destroyed: A 100 at viewDidLoad itself, B 50 without a stack
    early = get(from_ms=0, to_ms=300, lifespan="transient")
    assert level(early) == [("main", 100, 1, 0), ("(no stack)", 50, 1, 50)]
    # Created & Persistent in it: nothing
    assert level(get(from_ms=0, to_ms=300, lifespan="persistent")) == []
    # the flame graph of a range: the tree built whole from the buckets' trees
    flame = api_client.get(f"{url}/flame", {"from_ms": 395, "to_ms": 605}).json()
    assert dict(zip(flame["labels"], flame["values"], strict=True)) == {
        "All allocations": 280, "main": 200, UIAPP: 200, VDL: 200, CELL: 200, "(no stack)": 80,
    }  # fmt: skip
    # a node outside the range is not in its tree
    assert api_client.get(url, {"from_ms": 0, "to_ms": 300, "node": cell}).status_code == 404


def test_a_timeline_stored_before_the_buckets_trees_reads_its_rows(upload, api_client):
    sid = uploaded(upload, timeline_example())
    TimedCallTreeNode.objects.filter(snapshot_id=sid).delete()
    Timeline.objects.filter(snapshot_id=sid).update(made=[])
    data = api_client.get(f"/api/v1/snapshots/{sid}/calltree", {"from_ms": 395, "to_ms": 605})
    assert data.status_code == 200
    assert [(c["symbol"], c["bytes"]) for c in data.json()["children"]] == [
        ("main", 200), ("(no stack)", 80),
    ]  # fmt: skip
