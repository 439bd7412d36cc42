"""An events snapshot's list before its list is made (the task has not run yet, or the list is
too large to make with the upload): its pages read the blocks themselves, write nothing, and
read as the made list does: the same entries in every order, either way, and the same cursors.

tests/samples.py's EVENTS_EXAMPLE (replayed by hand in test_allocation_blocks.py) and one more
block at a tagged pointer, 0xb400007a5c3e1000 (4 B, made at 220, live): by address, unsigned,
it comes after every other block."""

from __future__ import annotations

import copy

import pytest

from memdash.allocations.logic.listing import LIST_ORDERS
from memdash.allocations.models import AllocationListOrder, ListEntry, ListOrderChunk, Snapshot
from memdash.allocations.writes.allocation_lists import forget_allocation_list, make_allocation_list
from tests.samples import events_example
from tests.snapshots.test_allocation_blocks import BY_ADDRESS, blocks

pytestmark = pytest.mark.django_db

TAGGED = "0xb400007a5c3e1000"
SORTS = [s for s in LIST_ORDERS if s != "snapshot"]


@pytest.fixture
def unmade(upload) -> int:
    doc = events_example()
    doc["events"] = copy.deepcopy(doc["events"]) + [
        {"t_ms": 220, "fn": "malloc", "address": TAGGED, "size": 4}
    ]
    body = upload(doc).json()
    assert body["status"] == "done", body
    sid = body["snapshot"]["id"]
    forget_allocation_list(Snapshot.objects.get(pk=sid).app_id, sid)  # as before the task made it
    return sid


def nothing_made(sid: int) -> bool:
    return not any(
        m.objects.filter(snapshot_id=sid).exists()
        for m in (ListEntry, ListOrderChunk, AllocationListOrder)
    )


def walk(api_client, sid: int, query: str) -> tuple[list[tuple], list[str]]:
    """Every entry of the list, two a page, and the cursors of the pages."""
    url = f"/api/v1/snapshots/{sid}/allocations?{query}&limit=2"
    entries, cursors = [], []
    while url:
        answer = api_client.get(url).json()
        pairs = zip(answer["rows"], blocks(answer), strict=True)
        entries += [(r["row"], r["live"], *b) for r, b in pairs]
        url = answer["next"]
        cursors += [url] if url else []
    return entries, cursors


def test_the_first_request_answers_from_the_blocks_and_makes_nothing(
    api_client, member_client, unmade
):
    answer = api_client.get(f"/api/v1/snapshots/{unmade}/allocations?sort=address&dir=asc")
    assert answer.status_code == 200, answer.content
    assert blocks(answer.json()) == [*BY_ADDRESS, (TAGGED, 220, None, 4)]
    page = member_client.get(f"/snapshots/{unmade}/allocations/?sort=time")
    text = page.content.decode()
    assert page.status_code == 200 and ">Created" in text and "220 ms" in text
    csv = member_client.get(f"/snapshots/{unmade}/allocations/?sort=size&format=csv")
    assert b"".join(csv.streaming_content).count(b"\n") == 1 + 8  # the header and 8 blocks
    assert nothing_made(unmade)


@pytest.mark.parametrize("sort", SORTS)
def test_every_order_reads_as_the_made_list_does(api_client, unmade, sort):
    unmade_walks = {d: walk(api_client, unmade, f"sort={sort}&dir={d}") for d in ("asc", "desc")}
    assert nothing_made(unmade)
    ascending, descending = unmade_walks["asc"][0], unmade_walks["desc"][0]
    assert len(ascending) == 8 and descending == ascending[::-1]
    make_allocation_list(Snapshot.objects.get(pk=unmade))
    for direction, (entries, cursors) in unmade_walks.items():
        assert walk(api_client, unmade, f"sort={sort}&dir={direction}")[0] == entries
        for cursor in cursors:  # a cursor of the unmade list goes on in the made one
            assert api_client.get(cursor).status_code == 200
    made_next = [api_client.get(c).json()["rows"] for c in unmade_walks["asc"][1]]
    assert [r["row"] for rows in made_next for r in rows] == [e[0] for e in ascending[2:]]
