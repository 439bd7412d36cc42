"""The retention command: old snapshots lose their allocation rows and call-tree rows, never
their totals (category, generation, build, snapshot)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from memdash.allocations.models import (
    AllocationRow,
    BuildCategoryTotal,
    CallTreeNode,
    CategoryTotal,
    Generation,
    GenerationCategoryTotal,
    Snapshot,
)
from memdash.allocations.writes.retention import parse_age, prune_allocation_rows
from memdash.allocations.writes.snapshots import store_snapshot_document
from memdash.core.writes import apps as core_services
from memdash.core.writes.uploads import UploadMeta

pytestmark = pytest.mark.django_db


def document(device: str) -> dict:
    """Stacks: main (0) -> load (1) -> decode (2); main (0) -> draw (3).

    Rows:
      Foo          at 2, generation 0: 2 persistent (64 B), 1 transient (32 B)
      Malloc 16    at 3, generation 1: 4 persistent (64 B)
      Foo          at 1, no generation: 3 transient (96 B)
    """
    return {
        "format": "memdash.snapshot",
        "version": 1,
        "app": {"id": "com.example.chat", "platform": "ios"},
        "build": {"version": "9.0", "number": "1"},
        "device": {"id": device},
        "captured_at": "2026-01-02T03:04:05+00:00",
        "frames": ["main", "-[Store load]", "-[Image decode]", "-[View draw]"],
        "stacks": [[None, 0], [0, 1], [1, 2], [0, 3]],
        "generations": [{"name": "A", "at_ms": 10}, {"name": "B", "at_ms": 20}],
        "allocations": [
            {
                "category": "Foo",
                "stack": 2,
                "generation": 0,
                "persistent": 2,
                "persistent_bytes": 64,
                "transient": 1,
                "transient_bytes": 32,
            },
            {
                "category": "Malloc 16 Bytes",
                "stack": 3,
                "generation": 1,
                "persistent": 4,
                "persistent_bytes": 64,
            },
            {"category": "Foo", "stack": 1, "transient": 3, "transient_bytes": 96},
        ],
    }


# Hand-worked figures of one such snapshot:
ROWS = 3  # three distinct (category, stack, thread, generation) keys
# Call-tree nodes with something at or below them: main, load, decode, draw.
CALL_TREE_NODES = 4
# Foo: 2 persistent (64 B), 1 + 3 = 4 transient (32 + 96 = 128 B); Malloc 16: 4 persistent, 64 B.
CATEGORY_TOTALS = {"Foo": (2, 64, 4, 128), "Malloc 16 Bytes": (4, 64, 0, 0)}
# Whole snapshot: 2 + 4 = 6 persistent (128 B), 4 transient (128 B).
SNAPSHOT_TOTALS = (6, 128, 4, 128)


@pytest.fixture
def snapshots(app):
    """An old snapshot (stored 100 days ago) and a new one, of the same build."""
    now = datetime.now(UTC)
    old = store_snapshot_document(document("OLD"), UploadMeta(app=app, received_at=now))
    new = store_snapshot_document(document("NEW"), UploadMeta(app=app, received_at=now))
    Snapshot.objects.filter(pk=old.object_id).update(
        created_at=timezone.now() - timedelta(days=100)
    )
    return Snapshot.objects.get(pk=old.object_id), Snapshot.objects.get(pk=new.object_id)


def category_totals(snapshot: Snapshot) -> dict:
    return {
        t.category.name: (t.persistent, t.persistent_bytes, t.transient, t.transient_bytes)
        for t in CategoryTotal.objects.filter(snapshot_id=snapshot.pk).select_related("category")
    }


def raw_counts(snapshot: Snapshot) -> tuple[int, int]:
    return (
        AllocationRow.objects.filter(snapshot_id=snapshot.pk).count(),
        CallTreeNode.objects.filter(snapshot_id=snapshot.pk).count(),
    )


def totals_of(snapshot: Snapshot) -> tuple[int, int, int, int]:
    snapshot.refresh_from_db()
    return (
        snapshot.persistent,
        snapshot.persistent_bytes,
        snapshot.transient,
        snapshot.transient_bytes,
    )


def build_totals(snapshot: Snapshot) -> dict:
    return {
        t.category.name: (
            t.persistent,
            t.persistent_bytes,
            t.transient,
            t.transient_bytes,
            t.snapshots,
        )
        for t in BuildCategoryTotal.objects.filter(build_id=snapshot.build_id).select_related(
            "category"
        )
    }


def run(*args: str) -> str:
    out = StringIO()
    call_command("prune_allocation_rows", *args, stdout=out)
    return out.getvalue()


def test_the_fixture_holds_the_hand_worked_figures(snapshots):
    for snapshot in snapshots:
        assert raw_counts(snapshot) == (ROWS, CALL_TREE_NODES)
        assert category_totals(snapshot) == CATEGORY_TOTALS
        assert totals_of(snapshot) == SNAPSHOT_TOTALS


def test_prunes_old_rows_and_keeps_every_total(snapshots):
    old, new = snapshots
    generation_totals_before = GenerationCategoryTotal.objects.filter(snapshot_id=old.pk).count()
    # Build totals: both snapshots of the build; Foo 2 x (2, 64, 4, 128), Malloc 2 x (4, 64).
    expected_build = {"Foo": (4, 128, 8, 256, 2), "Malloc 16 Bytes": (8, 128, 0, 0, 2)}
    assert build_totals(old) == expected_build

    output = run("--older-than", "90d")

    assert "1 snapshots older than 90d: deleted 3 allocation rows and 4 call-tree rows" in output
    assert raw_counts(old) == (0, 0)
    assert raw_counts(new) == (ROWS, CALL_TREE_NODES)
    old.refresh_from_db()
    new.refresh_from_db()
    assert old.rows_pruned_at is not None
    assert new.rows_pruned_at is None
    # Everything the pages and trends read is still there, unchanged.
    assert category_totals(old) == CATEGORY_TOTALS
    assert totals_of(old) == SNAPSHOT_TOTALS
    assert old.row_count == ROWS
    assert build_totals(old) == expected_build
    assert GenerationCategoryTotal.objects.filter(snapshot_id=old.pk).count() == (
        generation_totals_before
    )
    # Growth of generation A: Foo's 64 persistent bytes (2 objects); B: Malloc's 64 B (4).
    growth = list(
        Generation.objects.filter(snapshot=old).values_list("index", "growth_bytes", "persistent")
    )
    assert growth == [(0, 64, 2), (1, 64, 4)]


def test_a_second_run_finds_nothing_left(snapshots):
    run("--older-than", "90d")
    output = run("--older-than", "90d")
    assert "0 snapshots older than 90d: deleted 0 allocation rows and 0 call-tree rows" in output


def test_dry_run_counts_and_deletes_nothing(snapshots):
    old, new = snapshots
    output = run("--older-than", "90d", "--dry-run")
    assert output.startswith("Dry run: 1 snapshots")
    assert "would delete 3 allocation rows and 4 call-tree rows" in output
    assert raw_counts(old) == (ROWS, CALL_TREE_NODES)
    old.refresh_from_db()
    assert old.rows_pruned_at is None


def test_younger_cutoff_prunes_both(snapshots):
    old, new = snapshots
    Snapshot.objects.filter(pk=new.pk).update(created_at=timezone.now() - timedelta(hours=48))
    output = run("--older-than", "36h")
    assert "2 snapshots" in output
    assert raw_counts(old) == (0, 0) and raw_counts(new) == (0, 0)


def test_app_option_limits_the_prune(snapshots, app):
    old, _ = snapshots
    other = core_services.get_or_create_app("com.example.other", "android")
    output = run("--older-than", "90d", "--app", str(other.pk))
    assert "0 snapshots" in output
    assert raw_counts(old) == (ROWS, CALL_TREE_NODES)
    output = run("--older-than", "90d", "--app", str(app.pk))
    assert "1 snapshots" in output
    assert raw_counts(old) == (0, 0)


def test_batches_of_one_row_delete_everything(snapshots):
    old, new = snapshots
    result = prune_allocation_rows(timedelta(days=90), batch_size=1)
    # One transaction per row: 3 allocation rows + 4 call-tree rows, all gone.
    assert (result.snapshots, result.allocation_rows, result.call_tree_nodes) == (1, 3, 4)
    assert raw_counts(old) == (0, 0)
    assert raw_counts(new) == (ROWS, CALL_TREE_NODES)


def test_an_interrupted_prune_is_finished_by_the_next_run(snapshots):
    old, _ = snapshots
    # As if a prune had marked the snapshot and died before its first batch.
    Snapshot.objects.filter(pk=old.pk).update(rows_pruned_at=timezone.now())
    result = prune_allocation_rows(timedelta(days=90))
    assert (result.snapshots, result.allocation_rows, result.call_tree_nodes) == (1, 3, 4)
    assert raw_counts(old) == (0, 0)


def test_bad_arguments_are_refused(snapshots):
    with pytest.raises(CommandError, match="not an age"):
        run("--older-than", "ninety days")
    with pytest.raises(CommandError, match="no app with id"):
        run("--older-than", "90d", "--app", "999999")
    with pytest.raises(CommandError, match="at least 1"):
        run("--older-than", "90d", "--batch-size", "0")


def test_parse_age():
    assert parse_age("90d") == timedelta(days=90)
    assert parse_age("12w") == timedelta(weeks=12)
    assert parse_age("36h") == timedelta(hours=36)
    assert parse_age("7") == timedelta(days=7)
    with pytest.raises(ValueError):
        parse_age("-3d")
    with pytest.raises(ValueError):
        parse_age("3m")


def test_keep_call_tree_deletes_only_allocation_rows(snapshots):
    old, _ = snapshots
    output = run("--older-than", "90d", "--keep-call-tree")
    assert "deleted 3 allocation rows and 0 call-tree rows" in output
    assert raw_counts(old) == (0, CALL_TREE_NODES)
    # Nothing left to prune for that snapshot under the same option...
    assert "0 snapshots" in run("--older-than", "90d", "--keep-call-tree")
    # ...and a later prune without it takes the call tree too.
    assert "deleted 0 allocation rows and 4 call-tree rows" in run("--older-than", "90d")
    assert raw_counts(old) == (0, 0)


def test_call_tree_of_a_pruned_snapshot_says_it_was_removed(snapshots, api_client):
    run("--older-than", "90d")
    pruned = Snapshot.objects.filter(rows_pruned_at__isnull=False).first()
    response = api_client.get(f"/api/v1/snapshots/{pruned.pk}/calltree")
    assert response.status_code == 409
    assert "removed by retention" in response.json()["error"]
