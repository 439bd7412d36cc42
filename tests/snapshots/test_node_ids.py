"""Stack node ids under frame identity rule 2 (memdash.allocations.logic.node_ids): a 64-bit mix
over arrays. The expected ids are worked out here with plain Python integers from SplitMix64's
published definition (its first output from state 0 is 0xE220A8397B1DCDAF), not by the numpy
code under test; snapshots stored under rule 1 (a blake2b digest per node) are keyed again by
`manage.py resymbolicate` into exactly the trees a fresh upload makes."""

from __future__ import annotations

import random

import numpy as np
import pytest
from django.core.management import call_command

from memdash.allocations.logic import symbolicate
from memdash.allocations.logic.columns import NONE, by_depth, depths, stack_arrays
from memdash.allocations.logic.document.parse import parse_snapshot
from memdash.allocations.logic.node_ids import mix64, node_ids
from memdash.allocations.logic.symbolicate import FRAME_IDENTITY, frame_ids_and_nodes
from memdash.allocations.logic.totals import NodeIdCollision, nodes_of
from memdash.allocations.models import AllocationRow, CallTreeNode, Snapshot, StackNode
from memdash.core.logic.numbers import hash64
from tests.symbols.test_function_identity import Writer, named_with_places
from tests.symbols.test_symbolication import stored, tree

M64 = (1 << 64) - 1


def splitmix64(x: int) -> int:
    """SplitMix64's output for state `x` (Steele, Lea and Flood 2014), in Python integers."""
    z = (x + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def signed(x: int) -> int:
    return x - (1 << 64) if x >> 63 else x


def expected_ids(app_id: int, parents: list[int | None], frame_ids: list[int]) -> list[int]:
    """Rule 2 node by node, parents first: mix(parent id ^ mix(frame id ^ mix(app id)))."""
    salt = splitmix64(app_id)
    ids: list[int] = []
    for parent, fid in zip(parents, frame_ids, strict=True):
        above = ids[parent] & M64 if parent is not None else 0
        ids.append(signed(splitmix64(above ^ splitmix64((fid & M64) ^ salt))))
    return ids


def test_mix64_is_splitmix64():
    assert splitmix64(0) == 0xE220A8397B1DCDAF  # the published first output from state 0
    words = np.array([0, 1, 2**63, M64, 0x0123456789ABCDEF], dtype=np.uint64)
    assert mix64(words).tolist() == [splitmix64(int(w)) for w in words.tolist()]


def test_node_ids_of_a_document_by_hand():
    doc = named_with_places()
    parsed = parse_snapshot(doc)
    symbolicate.key_by_function(parsed)  # main@38 and main@40: one main
    app_id = 7
    frame_ids, nodes = frame_ids_and_nodes(app_id, parsed)
    # main → store_image → malloc, main → malloc: four nodes, ids chained from the root
    assert parsed.stack_parents == [None, 0, 1, 0]
    per_node = [frame_ids[f] for f in parsed.stack_frames]
    assert nodes.ids.tolist() == expected_ids(app_id, parsed.stack_parents, per_node)
    assert nodes.depth.tolist() == [0, 1, 2, 1]
    # another app, other ids for the same paths
    _, other = frame_ids_and_nodes(8, parsed)
    assert not set(other.ids.tolist()) & set(nodes.ids.tolist())


def random_tree(count: int, frames: int, seed: int) -> tuple[list[int | None], list[int]]:
    rng = random.Random(seed)
    parents: list[int | None] = [None]
    for i in range(1, count):
        parents.append(None if rng.random() < 0.001 else rng.randrange(max(0, i - 50), i))
    return parents, [rng.randrange(frames) for _ in range(count)]


def test_a_million_nodes_no_collision_and_the_reference_ids():
    parents, frames = random_tree(1_000_000, 50_000, seed=3)
    index = np.array([NONE if p is None else p for p in parents], dtype=np.int64)
    depth = depths(index)
    frame_ids = np.array([hash64("f", i) for i in range(50_000)], dtype=np.int64)
    ids = node_ids(5, index, frame_ids[frames], by_depth(depth)[::-1])
    # (parent, frame) pairs are distinct in a prefix tree; their ids must be too
    pairs = {(p, f) for p, f in zip(parents, frames, strict=True)}
    assert len(np.unique(ids)) == len(pairs)
    sample = list(range(0, 1_000_000, 997))
    reference = expected_ids(5, parents[:20_000], frame_ids[frames[:20_000]].tolist())
    assert [int(ids[i]) for i in sample if i < 20_000] == [
        reference[i] for i in sample if i < 20_000
    ]
    # depths by pointer jumping agree with the walk up each parent chain
    walked = [0] * len(parents)
    for i, p in enumerate(parents):
        walked[i] = 0 if p is None else walked[p] + 1
    assert depth.tolist() == walked


def test_siblings_never_share_an_id():
    """For one parent, the map from frame id to node id is one to one (mix64 is a bijection)."""
    count = 200_000
    parents = np.array([NONE] + [0] * (count - 1), dtype=np.int64)
    frame_ids = np.arange(count, dtype=np.int64) * 0x9E3779B1  # close, structured frame ids
    ids = node_ids(1, parents, frame_ids, by_depth(depths(parents))[::-1])
    assert len(np.unique(ids[1:])) == count - 1


def test_two_paths_with_one_id_are_refused():
    # nodes 1 and 3 share an id but not a frame: a collision, not one path named twice
    ids = np.array([100, 101, 102, 101], dtype=np.int64)
    frame_ids = np.array([900, 901, 902], dtype=np.int64)
    frames = [0, 1, 2, 2]
    with pytest.raises(NodeIdCollision):
        nodes_of(stack_arrays([None, 0, 1, 0], frames), ids, frame_ids[frames])
    # the same path named twice is one node
    frames = [0, 1, 2, 1]
    nodes = nodes_of(stack_arrays([None, 0, 1, 0], frames), ids, frame_ids[frames])
    assert nodes.of_node.tolist() == [0, 1, 2, 1]


def rule_1_node_ids(app_id, parents, frame_ids, levels):
    """Rule 1: hash64("n", app, parent id or 0, frame id), node by node (parents first)."""
    ids: list[int] = []
    for parent, fid in zip(parents.tolist(), frame_ids.tolist(), strict=True):
        ids.append(hash64("n", app_id, ids[parent] if parent >= 0 else 0, fid))
    return np.array(ids, dtype=np.int64)


def calltree_rows(snapshot: Snapshot) -> list[tuple]:
    return sorted(
        CallTreeNode.objects.filter(snapshot_id=snapshot.pk).values_list(
            "node_id", "parent_id", "frame_id", "persistent", "persistent_bytes",
            "self_persistent", "self_persistent_bytes",
        )
    )  # fmt: skip


@pytest.mark.django_db
def test_rule_1_snapshots_are_keyed_again_into_the_trees_of_today(app, upload, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(symbolicate, "node_ids", rule_1_node_ids)
        old = stored(upload, named_with_places("1.0"))
    Snapshot.objects.filter(pk=old.pk).update(frame_identity=1)
    old_tree = tree(old)
    before = calltree_rows(old)
    current = stored(upload, named_with_places("2.0"))
    assert current.frame_identity == FRAME_IDENTITY == 2
    assert {r[0] for r in before}.isdisjoint(r[0] for r in calltree_rows(current))

    out: list[str] = []
    call_command("resymbolicate", "--all", stdout=Writer(out))
    assert out == ["com.example.chat: 1 of 1 snapshots brought up to date, 0 frames named (done)"]
    old.refresh_from_db()
    assert old.frame_identity == FRAME_IDENTITY
    # the same tree (paths, bytes), now under the ids a fresh upload of the document gets
    assert tree(old) == old_tree == tree(current)
    assert calltree_rows(old) == calltree_rows(current)

    def stacks_of(snapshot: Snapshot) -> set[int]:
        rows = AllocationRow.objects.filter(snapshot_id=snapshot.pk)
        return set(rows.values_list("stack_id", flat=True))

    stacks = stacks_of(old)
    assert stacks == stacks_of(current)
    assert StackNode.objects.filter(id__in=stacks).count() == len(stacks)
    # main → store_image → malloc: 5 × 64 B; main → malloc: 1 × 64 B
    assert sorted(old_tree.values()) == [(64, False), (320, False), (320, False), (384, False)]
