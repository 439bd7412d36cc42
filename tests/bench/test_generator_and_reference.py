"""The benchmark's generator makes valid, deterministic snapshot documents; the bare floor
(bench/floor.py) stores every allocation row of one; memdash reads a document the same from its
bytes as from its JSON tree, with the ids the hash rule gives."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import orjson

from memdash.allocations.logic.document.parse import parse_snapshot
from memdash.allocations.logic.document.raw import read_snapshot
from memdash.allocations.logic.symbolicate import frame_id, frame_ids_and_nodes, key_by_function
from tests.snapshots.test_node_ids import expected_ids

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from common import percentile  # noqa: E402

COUNTERS = ("persistent", "persistent_bytes", "transient", "transient_bytes")
from generate import SMALL, Sizes, encode_gzip, snapshot_document  # noqa: E402
from ingest import phase_durations  # noqa: E402

TINY = Sizes(rows=600, nodes=300, categories=80, events=800, threads=4, generations=3)


def test_same_sizes_give_the_same_bytes():
    assert encode_gzip(snapshot_document(TINY)) == encode_gzip(snapshot_document(TINY))
    other = snapshot_document(Sizes(**{**TINY.__dict__, "variant": 1}))
    first = snapshot_document(TINY)
    # Another device's run of the same build: same frames and stacks, other rows.
    assert other["stacks"] == first["stacks"] and other["frames"] == first["frames"]
    assert other["allocations"] != first["allocations"]


def test_the_allocations_document_is_valid_and_shaped_as_asked():
    doc = snapshot_document(TINY)
    parsed = parse_snapshot(doc)  # memdash's own validator: raises on any bad value
    # Every generated row has its own (category, stack, thread, generation): nothing merges.
    assert len(parsed.row_dict()) == TINY.rows
    assert len(parsed.stack_parents) == TINY.nodes
    assert len({key[0] for key in parsed.row_dict()}) <= TINY.categories
    depth = []
    for parent in parsed.stack_parents:
        depth.append(0 if parent is None else depth[parent] + 1)
    sites = {key[1] for key in parsed.row_dict()}
    # Allocation sites sit 5 to 64 frames deep (depth counts from 0).
    assert min(depth[s] for s in sites) >= 4
    assert max(depth) <= 63
    images = doc["images"]
    assert any(i.get("system") for i in images) and not all(i.get("system") for i in images)
    kinds = {type(f).__name__ for f in doc["frames"]}
    assert kinds == {"str", "dict"}
    assert any(isinstance(f, dict) and "symbol" not in f for f in doc["frames"])


def test_the_events_document_replays_cleanly():
    doc = snapshot_document(TINY, "events")
    parsed = parse_snapshot(doc)
    assert parsed.event_count == TINY.events
    assert parsed.replaced_live_blocks == 0  # the generator never allocates at a live address
    # Frees of blocks from before the recording (1 in 100 events) are counted, not hidden.
    assert 0 < parsed.unmatched_frees < TINY.events // 20
    functions = {e["fn"] for e in doc["events"]}
    assert functions == {"malloc", "calloc", "realloc", "free", "vm_allocate", "vm_deallocate"}


def test_node_ids_chain_by_the_hash_rule():
    """`frame_ids_and_nodes` gives each generated node the id of rule 2, worked out node by node
    in plain Python (tests/snapshots/test_node_ids.py)."""
    doc = snapshot_document(TINY)
    app_id = 7
    parsed = parse_snapshot(doc)
    memdash_frames = [frame_id(app_id, f) for f in parsed.frames]
    # memdash keys named frames by function: the generator's stacks need no merging for it.
    nodes = len(parsed.stack_parents)
    key_by_function(parsed)
    assert len(parsed.stack_parents) == nodes
    frame_ids, stored = frame_ids_and_nodes(app_id, parsed)
    assert frame_ids == [frame_id(app_id, f) for f in parsed.frames] == memdash_frames
    per_node = [frame_ids[f] for f in parsed.stack_frames]
    assert stored.ids.tolist() == expected_ids(app_id, parsed.stack_parents, per_node)
    assert stored.of_node.tolist() == list(range(nodes))  # a prefix tree: every node distinct


def test_reading_from_the_bytes_gives_what_the_json_tree_gives():
    doc = snapshot_document(TINY)
    fast = read_snapshot(orjson.dumps(doc))
    slow = parse_snapshot(doc)
    assert fast is not None
    assert (fast.stack_parents, fast.stack_frames) == (slow.stack_parents, slow.stack_frames)
    assert (fast.frames, fast.images, fast.generations) == (
        slow.frames,
        slow.images,
        slow.generations,
    )
    a, b = fast.columns, slow.columns
    assert a.names == b.names
    for name in ("category", "stack", "thread", "generation", "counts"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert fast.row_dict() == slow.row_dict()
    # The generator's rows each have their own key: per category, the totals of its rows.
    per_category: dict[str, list[int]] = {}
    for row in doc["allocations"]:
        acc = per_category.setdefault(row["category"], [0, 0, 0, 0])
        for k, name in enumerate(
            ("persistent", "persistent_bytes", "transient", "transient_bytes")
        ):
            acc[k] += row.get(name, 0)
    got: dict[str, list[int]] = {}
    for (category, _, _, _), counts in fast.row_dict().items():
        acc = got.setdefault(category, [0, 0, 0, 0])
        for k in range(4):
            acc[k] += counts[k]
    assert got == per_category


def test_the_floor_stores_every_allocation_row(tmp_path):
    path = tmp_path / "tiny.json.gz"
    path.write_bytes(encode_gzip(snapshot_document(TINY)))
    db = tmp_path / "floor.sqlite3"
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "floor.py"), str(path), "--db", str(db)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result = orjson.loads(out.splitlines()[-1])
    assert result["rows"] == TINY.rows
    assert set(result["phases"]) == {"read", "parse", "store"}
    with sqlite3.connect(db) as conn:
        stored = conn.execute(
            "SELECT count(*), sum(persistent_bytes), count(DISTINCT category) "
            "FROM floor_allocationrow"
        ).fetchone()
    doc = snapshot_document(TINY)
    rows = doc["allocations"]
    assert stored == (
        TINY.rows,
        sum(r.get("persistent_bytes", 0) for r in rows),
        len({r["category"] for r in rows}),
    )


def test_phase_durations_and_percentile():
    # read at 0, parse from 1, validate from 3 (reported twice), store from 4 until the end at 10.
    marks = [("read", 0.0), ("parse", 1.0), ("validate", 3.0), ("validate", 3.5), ("store", 4.0)]
    assert phase_durations(marks, 10.0) == {
        "read": 1.0,
        "parse": 2.0,
        "validate": 1.0,
        "store": 6.0,
    }
    # Nearest rank: p95 of 1..50 is the 48th value (0.95 * 50 = 47.5, rounded up).
    assert percentile(list(range(1, 51)), 0.95) == 48
    assert percentile([5.0], 0.95) == 5.0


def test_small_sizes_are_small():
    assert SMALL.rows <= 10_000 and SMALL.events <= 10_000
