"""The benchmark's generator makes valid, deterministic snapshot documents, and the bare
reference scripts fill the same tables memdash fills, with the same ids and totals — otherwise
the ratios in docs/performance.md would compare different work."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from django.db import connection

from memdash.allocations.document import parse_snapshot
from memdash.allocations.symbolicate import frame_id, key_by_function
from memdash.core.numbers import hash64

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import reference_common  # noqa: E402
from common import percentile  # noqa: E402
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
    assert len(parsed.rows) == TINY.rows
    assert len(parsed.stack_parents) == TINY.nodes
    assert len({key[0] for key in parsed.rows}) <= TINY.categories
    depth = []
    for parent in parsed.stack_parents:
        depth.append(0 if parent is None else depth[parent] + 1)
    sites = {key[1] for key in parsed.rows}
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


def test_the_reference_computes_memdash_ids_and_totals():
    doc = snapshot_document(TINY)
    app_id = 7
    prep = reference_common.prepare_frames_and_nodes(doc, app_id)
    parsed = parse_snapshot(doc)
    memdash_frames = [frame_id(app_id, f) for f in parsed.frames]
    assert prep.frame_ids == memdash_frames
    # memdash keys named frames by function: the generator's stacks need no merging for it.
    nodes = len(parsed.stack_parents)
    key_by_function(parsed)
    assert len(parsed.stack_parents) == nodes
    assert [frame_id(app_id, f) for f in parsed.frames] == memdash_frames
    memdash_nodes: list[int] = []
    for parent, frame in zip(parsed.stack_parents, parsed.stack_frames, strict=True):
        parent_id = memdash_nodes[parent] if parent is not None else 0
        memdash_nodes.append(hash64("n", app_id, parent_id, memdash_frames[frame]))
    assert prep.node_ids == memdash_nodes
    agg = reference_common.aggregate(doc)
    per_category: dict[str, list[int]] = {}
    for (category, _, _, _), counts in parsed.rows.items():
        acc = per_category.setdefault(category, [0, 0, 0, 0])
        for k in range(4):
            acc[k] += counts[k]
    assert agg.per_category == per_category
    assert agg.totals == [sum(c[k] for c in per_category.values()) for k in range(4)]


def test_reference_sqlite_script_stores_the_snapshot(tmp_path):
    path = tmp_path / "tiny.json.gz"
    path.write_bytes(encode_gzip(snapshot_document(TINY)))
    db = tmp_path / "reference.sqlite3"
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "reference_sqlite.py"),
            str(path),
            "--db",
            str(db),
            "--reset",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result = orjson.loads(out.splitlines()[-1])
    assert result["rows"] == TINY.rows
    assert set(result["phases"]) == {"read", "parse", "prepare", "store"}
    with sqlite3.connect(db) as conn:
        assert (
            conn.execute("SELECT count(*) FROM snapshots_allocationrow").fetchone()[0] == TINY.rows
        )
        assert conn.execute("SELECT count(*) FROM snapshots_stacknode").fetchone()[0] == TINY.nodes


@pytest.mark.django_db
def test_reference_tables_have_memdash_columns_and_indexes():
    """Same columns, and an index on the same columns for every index memdash has."""
    from django.apps import apps

    with connection.cursor() as cursor:
        for table, columns in reference_common.TABLES.items():
            model = next(m for m in apps.get_models() if m._meta.db_table == table)
            assert {c for c, _ in columns} == {f.column for f in model._meta.concrete_fields}, table
            constraints = connection.introspection.get_constraints(cursor, table)
            memdash_indexes = {
                tuple(c["columns"])
                for c in constraints.values()
                if (c["index"] or c["unique"] or c["primary_key"]) and c["columns"]
            }
            reference_indexes = {
                cols for _, t, cols, _ in reference_common.INDEXES if t == table
            } | {("id",)}
            assert memdash_indexes == reference_indexes, table


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
