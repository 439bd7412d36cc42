"""A heaptrack file's allocations listed one by one: each `+ <info>` one block, made at the last
`c` timestamp before it and freed at the `-` of its info that ends it (the info's latest block
still allocated: heaptrack's own pairing, last in first out). The file has no addresses: the list
has Created (and Freed) but no Address column, sorts by time and not by address (409).

The expected blocks are read from the recorded files here, by this test's own loop over their
lines (tests/data/heaptrack: leaky 115 allocations, grow 2219, as heaptrack_print prints)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest
import zstandard

from memdash.allocations.models import AllocationBlock, ListEntry, Snapshot
from memdash.allocations.writes.allocation_lists import make_allocation_list
from memdash.ingest.writes.parsers import heaptrack
from tests.importers.test_heaptrack import BUILD, META
from tests.importers.test_heaptrack_timeline import RECORDS

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "heaptrack"
PRINTED_ALLOCATIONS = {"heaptrack.leaky.zst": 115, "heaptrack.grow.zst": 2219}


def blocks_of(name: str) -> list[tuple[float, float | None, int]]:
    """(made ms, freed ms or None, size) of every `+`, read from the file's lines."""
    raw = zstandard.ZstdDecompressor().stream_reader((SAMPLES / name).read_bytes()).read()
    sizes: list[int] = []
    now = 0.0
    live: dict[int, list[int]] = {}  # info -> its blocks still allocated, latest last
    blocks: list[list] = []
    for line in raw.decode().splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "c":
            now = float(int(rest, 16))
        elif kind == "a":
            sizes.append(int(rest.split()[0], 16))
        elif kind == "+":
            info = int(rest, 16)
            live.setdefault(info, []).append(len(blocks))
            blocks.append([now, None, sizes[info]])
        elif kind == "-" and live.get(int(rest, 16)):
            blocks[live[int(rest, 16)].pop()][1] = now
    return [tuple(b) for b in blocks]


def test_the_blocks_in_the_order_made_from_hand_written_records():
    # tests/importers/test_heaptrack_timeline.py's records: A (16 B) at 0, B (16 B) and C
    # (32 B) at 100; the release at 200 ends B (info 0's latest), A and C stay
    parsed, _ = heaptrack.convert_timed(RECORDS, None, META)
    blocks = parsed.block_columns
    assert blocks is not None
    assert [blocks.names[c] for c in blocks.category.tolist()] == [
        "Malloc 16 Bytes", "Malloc 16 Bytes", "Malloc 32 Bytes",
    ]  # fmt: skip
    assert blocks.size.tolist() == [16, 16, 32] and blocks.made_ms.tolist() == [0, 100, 100]
    assert np.isnan(blocks.freed_ms[[0, 2]]).all() and blocks.freed_ms[1] == 200
    assert blocks.stack.tolist() == [0, 0, 0]  # main


@pytest.fixture
def stored(upload, request) -> tuple[int, list[tuple]]:
    name = request.param
    response = upload((SAMPLES / name).read_bytes(), content_type="application/zstd", query=BUILD)
    assert response.status_code == 202, response.json()
    return response.json()["snapshot"]["id"], blocks_of(name)


def in_order(block: tuple) -> tuple:
    made, freed, size = block
    return (made, freed is None, freed or 0.0, size)


def made_times(answer: dict) -> list[float]:
    return [row["made_ms"] for row in answer["rows"]]


@pytest.mark.django_db
@pytest.mark.parametrize("stored", list(PRINTED_ALLOCATIONS), indirect=True)
def test_every_allocation_is_a_block_without_an_address(stored, request):
    sid, expected = stored
    assert len(expected) == PRINTED_ALLOCATIONS[request.node.callspec.params["stored"]]
    rows = AllocationBlock.objects.filter(snapshot_id=sid)
    got = sorted(rows.values_list("made_ms", "freed_ms", "size"), key=in_order)
    assert got == sorted(expected, key=in_order)
    assert not rows.filter(address__isnull=False).exists()
    assert all(s is not None for s in rows.values_list("stack_id", flat=True))


@pytest.mark.django_db
@pytest.mark.parametrize("stored", ["heaptrack.grow.zst"], indirect=True)
def test_the_list_has_created_not_address_before_and_after_it_is_made(
    stored, api_client, member_client
):
    sid, expected = stored
    url = f"/api/v1/snapshots/{sid}/allocations"
    by_time = sorted(b[0] for b in expected)
    for made in (False, True):
        if made:
            make_allocation_list(Snapshot.objects.get(pk=sid))
            assert ListEntry.objects.filter(snapshot_id=sid).count() == len(expected)
            assert not ListEntry.objects.filter(snapshot_id=sid, address__isnull=False).exists()
        first = api_client.get(f"{url}?sort=time&dir=asc&limit=50").json()
        assert made_times(first) == by_time[:50]
        assert {(r["address"], r["count"]) for r in first["rows"]} == {(None, 1)}
        latest = api_client.get(f"{url}?sort=time&limit=50").json()
        assert made_times(latest) == by_time[::-1][:50]
        second = api_client.get(first["next"]).json()
        assert made_times(second) == by_time[50:100]
        live = api_client.get(f"{url}?lifespan=persistent&sort=time&limit=1000").json()
        assert len(live["rows"]) == sum(1 for b in expected if b[1] is None)
        refused = api_client.get(f"{url}?sort=address")
        assert refused.status_code == 409 and refused.json()["path"] == "sort"
    page = member_client.get(f"/snapshots/{sid}/allocations/?sort=time")
    text = page.content.decode()
    assert ">Created" in text and ">Address" not in text
    response = member_client.get(f"/snapshots/{sid}/allocations/?sort=time&dir=asc&format=csv")
    table = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert table[0][-2:] == ["Created (ms)", "Freed (ms)"] and "Address" not in table[0]
    assert len(table) == 1 + len(expected)
    assert [float(row[-2]) for row in table[1:]] == by_time
