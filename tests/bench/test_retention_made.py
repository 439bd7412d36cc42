"""Retention of an events snapshot: what is made of its rows (its allocations one by one, its
rows by time bucket, its list made ahead) goes with the rows, in the same batches; each time
bucket's call tree goes with the call tree (kept by --keep-call-tree, as the default tree is).

tests/samples.py's EVENTS_EXAMPLE has 7 blocks (replayed by hand in
tests/snapshots/test_allocation_blocks.py): 7 list entries, one chunk in each of the list's 11
orders (size, count, category, caller, library, generation, thread, live, address, time,
snapshot)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memdash.allocations.models import (
    AllocationBlock,
    AllocationListOrder,
    AllocationRow,
    CallTreeNode,
    ListEntry,
    ListOrderChunk,
    Snapshot,
    TimedAllocationRow,
    TimedCallTreeNode,
)
from memdash.allocations.writes.allocation_lists import make_allocation_list
from memdash.allocations.writes.retention import prune_allocation_rows
from tests.samples import events_example

pytestmark = pytest.mark.django_db

BLOCKS, CHUNKS = 7, 11
MADE = (TimedAllocationRow, AllocationBlock, ListEntry, ListOrderChunk)
TREES = (CallTreeNode, TimedCallTreeNode)


@pytest.fixture
def events(upload) -> tuple[Snapshot, Snapshot]:
    """An events snapshot stored 100 days ago and one stored now."""
    ids = []
    for device in ("OLD", "NEW"):
        body = upload(events_example(device={"id": device})).json()
        assert body["status"] == "done", body
        ids.append(body["snapshot"]["id"])
    old_id, new_id = ids
    Snapshot.objects.filter(pk=old_id).update(created_at=timezone.now() - timedelta(days=100))
    old, new = Snapshot.objects.get(pk=old_id), Snapshot.objects.get(pk=new_id)
    for snapshot in (old, new):
        make_allocation_list(snapshot)  # as the task does once the upload is committed
    return old, new


def counts(snapshot: Snapshot) -> dict[str, int]:
    every = (AllocationRow, *MADE, *TREES, AllocationListOrder)
    return {m.__name__: m.objects.filter(snapshot_id=snapshot.pk).count() for m in every}


def test_the_fixture_has_every_table(events):
    for snapshot in events:
        stored = counts(snapshot)
        assert stored["AllocationBlock"] == BLOCKS and stored["ListEntry"] == BLOCKS
        assert stored["ListOrderChunk"] == CHUNKS and stored["AllocationListOrder"] == 1
        assert stored["TimedAllocationRow"] > 0 and stored["TimedCallTreeNode"] > 0


@pytest.mark.parametrize("batch_size", [50_000, 1])
def test_what_is_made_of_the_rows_is_pruned_with_them(events, batch_size):
    old, new = events
    before, kept = counts(old), counts(new)
    result = prune_allocation_rows(timedelta(days=90), batch_size=batch_size)
    assert result.snapshots == 1
    assert result.allocation_rows == before["AllocationRow"]
    assert result.call_tree_nodes == before["CallTreeNode"]
    made = sum(before[m.__name__] for m in (*MADE, TimedCallTreeNode))
    assert result.other_rows == made
    assert set(counts(old).values()) == {0}
    assert counts(new) == kept


def test_keep_call_tree_keeps_each_buckets_tree(events):
    old, _ = events
    before = counts(old)
    prune_allocation_rows(timedelta(days=90), keep_call_tree=True)
    after = counts(old)
    assert {m.__name__: after[m.__name__] for m in TREES} == {
        m.__name__: before[m.__name__] for m in TREES
    }
    assert {after[m.__name__] for m in (AllocationRow, *MADE)} == {0}


def test_an_interrupted_prune_is_finished_and_a_dry_run_counts(events):
    old, _ = events
    before = counts(old)
    # As if a prune had marked the snapshot, deleted its rows and call tree, and died then.
    Snapshot.objects.filter(pk=old.pk).update(rows_pruned_at=timezone.now())
    for model in (AllocationRow, CallTreeNode):
        model.objects.filter(snapshot_id=old.pk).delete()
    left = sum(before[m.__name__] for m in (*MADE, TimedCallTreeNode))
    dry = prune_allocation_rows(timedelta(days=90), dry_run=True)
    assert (dry.snapshots, dry.allocation_rows, dry.call_tree_nodes, dry.other_rows) == (
        1, 0, 0, left,
    )  # fmt: skip
    result = prune_allocation_rows(timedelta(days=90))
    assert (result.snapshots, result.other_rows) == (1, left)
    assert set(counts(old).values()) == {0}


def test_the_list_of_a_pruned_events_snapshot_says_so(events, api_client):
    old, _ = events
    prune_allocation_rows(timedelta(days=90))
    for sort in ("size", "time"):
        answer = api_client.get(f"/api/v1/snapshots/{old.pk}/allocations?sort={sort}").json()
        assert answer["rows"] == [] and answer["pruned_snapshots"] == [old.pk]
