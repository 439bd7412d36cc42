"""The Allocations List made ahead (`allocations.writes.allocation_lists`): its entries and keys
for the spec example, worked out by hand (tests/snapshots/test_allocation_list.py's docstring:
three rows, five entries), made once the upload commits, out of date once debug files renamed
frames, and gone with the rows. The list's pages from it are tested with every test of
test_allocation_list.py (each runs on the rows and on the made list)."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from memdash.allocations.models import (
    AllocationListOrder,
    Category,
    Frame,
    ListEntry,
    ListOrderChunk,
    Snapshot,
)
from memdash.allocations.reads.made_lists import made_totals
from memdash.allocations.tasks import make_allocation_list_task
from memdash.allocations.writes.allocation_lists import make_allocation_list
from memdash.allocations.writes.retention import prune_snapshot_rows
from memdash.core.logic import pacing
from memdash.core.reads.citus import is_citus
from tests.samples import spec_example

pytestmark = pytest.mark.django_db

# (category, live, count, size, caller, thread, generation, and the entry's place by size, by
# count, by category, by caller): by size 4800 < 9984 < 23040 < 2097152 < 4194304; by count
# 1 < 2 < 13 < 30 < 100; by category name (lower case) malloc… < messagecell < vm…, a row's
# freed entry before its live one; by caller "-[chat…" < "-[mess…" < "main" (symbol first)
EXPECTED = {
    ("MessageCell", 1, 13, 9984, "-[MessageCell initWithStyle:]", 0, 1, 1, 2, 2, 2),
    ("MessageCell", 0, 30, 23040, "-[MessageCell initWithStyle:]", 0, 1, 2, 3, 1, 1),
    ("Malloc 48 Bytes", 1, 100, 4800, "-[ChatViewController viewDidLoad]", -1, 0, 0, 4, 0, 0),
    ("VM: CoreAnimation", 1, 2, 4194304, "main", -1, 1, 4, 1, 4, 4),
    ("VM: CoreAnimation", 0, 1, 2097152, "main", -1, 1, 3, 0, 3, 3),
}


@pytest.fixture
def stored(upload, django_capture_on_commit_callbacks) -> Snapshot:
    with django_capture_on_commit_callbacks(execute=True):
        body = upload(spec_example()).json()
    return Snapshot.objects.get(pk=body["snapshot"]["id"])


def made_entries(snapshot_id: int) -> set[tuple]:
    names = dict(Category.objects.values_list("pk", "name"))
    symbols = dict(Frame.objects.values_list("pk", "symbol"))
    return {
        (names[category], live, n, size, symbols[caller], *rest)
        for category, live, n, size, caller, *rest in ListEntry.objects.filter(
            snapshot_id=snapshot_id
        ).values_list(
            "category_id", "live", "n", "size", "caller_frame_id", "thread", "generation",
            "by_size", "by_count", "by_category", "by_caller",
        )
    }  # fmt: skip


def test_made_once_the_upload_commits_with_every_key(stored):
    order = AllocationListOrder.objects.get(snapshot_id=stored.pk)
    assert (order.entries, order.symbols_version) == (5, 0)
    assert made_entries(stored.pk) == EXPECTED
    assert made_totals(stored.app_id, [(stored.pk, 0)]) == {stored.pk: 5}
    # each order in one chunk of five: by size, the rows of the smallest entries first
    chunk = ListOrderChunk.objects.get(snapshot_id=stored.pk, sort="size")
    by_size = sorted(EXPECTED, key=lambda e: e[7])
    assert list(np.frombuffer(bytes(chunk.lives), ">i2")) == [e[1] for e in by_size]
    rows = ListEntry.objects.filter(snapshot_id=stored.pk)
    row_of = {(e.category_id, e.live, e.size): e.row_id for e in rows}
    assert len(np.frombuffer(bytes(chunk.rows), ">i8")) == 5
    assert sorted(np.frombuffer(bytes(chunk.rows), ">i8").tolist()) == sorted(row_of.values())


def test_not_made_without_the_commit(upload):
    snapshot_id = upload(spec_example()).json()["snapshot"]["id"]
    assert not ListEntry.objects.filter(snapshot_id=snapshot_id).exists()
    call_command("make_allocation_lists")  # what the command makes is the task's list
    assert made_entries(snapshot_id) == EXPECTED


def test_out_of_date_once_frames_are_renamed_then_made_again(stored):
    Snapshot.objects.filter(pk=stored.pk).update(symbols_version=F("symbols_version") + 1)
    # the list reads the rows meanwhile
    assert made_totals(stored.app_id, [(stored.pk, 1)]) == {}
    assert make_allocation_list_task.call(stored.pk) == "ok"
    assert made_totals(stored.app_id, [(stored.pk, 1)]) == {stored.pk: 5}
    assert make_allocation_list_task.call(stored.pk) == "current"
    assert made_entries(stored.pk) == EXPECTED  # made again, not added to


def test_gone_with_pruned_rows_and_with_the_snapshot(stored, upload):
    prune_snapshot_rows(stored)
    assert not ListEntry.objects.filter(snapshot_id=stored.pk).exists()
    assert not ListOrderChunk.objects.filter(snapshot_id=stored.pk).exists()
    assert not AllocationListOrder.objects.filter(snapshot_id=stored.pk).exists()
    other = upload(spec_example(device={"id": "B2"})).json()["snapshot"]["id"]
    call_command("make_allocation_lists")
    assert ListEntry.objects.filter(snapshot_id=other).count() == 5
    Snapshot.objects.get(pk=other).delete()
    assert not ListEntry.objects.filter(snapshot_id=other).exists()
    assert not ListOrderChunk.objects.filter(snapshot_id=other).exists()


def test_made_again_by_the_tables_keys_and_analysed_only_when_due(stored):
    """Every upload makes a list: the old entries are found by the tables' keys (the app, then
    the snapshot; by the snapshot alone every app's entries were scanned), and the table's
    statistics are made when missing or far off, not after every list (on PostgreSQL)."""
    pacing.forget()
    with CaptureQueriesContext(connection) as queries:
        for _ in range(3):
            make_allocation_list(stored)
    deletes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("DELETE")]
    assert len(deletes) == 9  # entries, chunks, the order: three times
    assert all('"app_id" = ' in sql and '"snapshot_id" = ' in sql for sql in deletes), deletes
    analysed = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("ANALYZE")]
    assert len(analysed) <= 1
    assert made_entries(stored.pk) == EXPECTED
    if connection.vendor == "postgresql" and not is_citus(connection):
        with connection.cursor() as cursor:
            cursor.execute("SELECT reltuples FROM pg_class WHERE relname = 'allocations_listentry'")
            assert cursor.fetchone()[0] >= 0  # -1: never analysed


def many_rows(count: int) -> dict:
    """`count` rows of sizes 1 … count, all live, each its own category: `B-<size>` for every
    third one, `A-<size>` for the others (rows of one category and stack would add up)."""
    rows = [
        {"category": f"{'B' if i % 3 == 0 else 'A'}-{i}", "stack": 3, "persistent": 1,
         "persistent_bytes": i}
        for i in range(1, count + 1)
    ]  # fmt: skip
    return spec_example(allocations=rows)


def test_pages_across_chunks_with_a_filter(api_client, upload, django_capture_on_commit_callbacks):
    """2,500 entries: three chunks of 1,024 in each order. The categories with `b-` in their
    name are sizes 3, 6, … 2,499 (833 of them); read by size descending, 300 a page, forward
    then back."""
    with django_capture_on_commit_callbacks(execute=True):
        sid = upload(many_rows(2500)).json()["snapshot"]["id"]
    assert AllocationListOrder.objects.get(snapshot_id=sid).entries == 2500
    assert ListOrderChunk.objects.filter(snapshot_id=sid, sort="size").count() == 3
    url = f"/api/v1/snapshots/{sid}/allocations?q=b-&limit=300"
    sizes, pages, answer = [], [], api_client.get(url).json()
    while True:
        pages.append(answer)
        sizes += [r["size"] for r in answer["rows"]]
        if answer["next"] is None:
            break
        answer = api_client.get(answer["next"]).json()
    assert sizes == list(range(2499, 0, -3)) and len(pages) == 3  # 300 + 300 + 233
    back = api_client.get(pages[-1]["previous"]).json()
    assert [r["size"] for r in back["rows"]] == list(range(2499 - 900, 2499 - 1800, -3))
    everything = api_client.get(f"/api/v1/snapshots/{sid}/allocations?dir=asc&limit=1000")
    first = everything.json()
    assert [r["size"] for r in first["rows"]] == list(range(1, 1001))
    second = api_client.get(first["next"]).json()
    assert [r["size"] for r in second["rows"]] == list(range(1001, 2001))
