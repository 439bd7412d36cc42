"""Statistics through the upload API and the read API, against totals worked out by hand."""

from __future__ import annotations

import pytest

from memdash.allocations.models import Generation
from tests.samples import events_example, spec_example

pytestmark = pytest.mark.django_db


def rows_by_category(stats: dict) -> dict:
    return {r["category"]: r for r in stats["rows"]}


def uploaded_snapshot_id(upload, doc) -> int:
    response = upload(doc)
    assert response.status_code == 202, response.json()
    assert response.json()["status"] == "done"
    return response.json()["snapshot"]["id"]


def test_allocations_shape_statistics(upload, api_client):
    sid = uploaded_snapshot_id(upload, spec_example())
    stats = api_client.get(f"/api/v1/snapshots/{sid}/statistics").json()
    rows = rows_by_category(stats)
    # MessageCell: two rows with the same key add up: 12+1 persistent, 9216+768 bytes.
    assert rows["MessageCell"] == {
        "category": "MessageCell", "kind": "heap", "persistent": 13, "persistent_bytes": 9984,
        "transient": 30, "transient_bytes": 23040, "total": 43, "total_bytes": 33024,
        "responsible_caller": "-[MessageCell initWithStyle:]",
        # A string frame: named, in no image, without a source location.
        "responsible_frame": {"image": "", "system": False, "symbolicated": True, "file": "",
                              "line": None, "inlined": False},
    }  # fmt: skip
    assert rows["VM: CoreAnimation"]["kind"] == "vm"
    # Summary rows have no caller, so no frame.
    assert {r["responsible_frame"] for r in stats["summary"]} == {None}
    # The responsible caller skips UIApplicationMain (a system image) for the first app frame.
    assert rows["VM: CoreAnimation"]["responsible_caller"] == "main"
    summary = {r["category"]: r for r in stats["summary"]}
    # Heap: MessageCell + Malloc 48 = 13+100 persistent, 9984+4800 bytes; 30 transient.
    heap = summary["All Heap Allocations"]
    assert (heap["persistent"], heap["persistent_bytes"], heap["transient"]) == (113, 14784, 30)
    assert (heap["total"], heap["total_bytes"]) == (143, 37824)
    vm = summary["All Anonymous VM"]
    assert (vm["persistent"], vm["persistent_bytes"], vm["total_bytes"]) == (2, 4194304, 6291456)
    both = summary["All Heap & Anonymous VM"]
    assert (both["persistent"], both["persistent_bytes"]) == (115, 4209088)
    assert (both["transient"], both["transient_bytes"]) == (31, 2120192)


def test_lifespan_filters(upload, api_client):
    sid = uploaded_snapshot_id(upload, spec_example())
    persistent = api_client.get(f"/api/v1/snapshots/{sid}/statistics?lifespan=persistent").json()
    rows = rows_by_category(persistent)
    assert rows["MessageCell"]["transient"] == 0
    assert rows["MessageCell"]["total_bytes"] == 9984
    transient = api_client.get(f"/api/v1/snapshots/{sid}/statistics?lifespan=transient").json()
    rows = rows_by_category(transient)
    # Malloc 48 Bytes has no freed blocks: it is not listed under Created & Destroyed.
    assert set(rows) == {"MessageCell", "VM: CoreAnimation"}
    assert transient["summary"][0]["total_bytes"] == 23040 + 2097152
    bad = api_client.get(f"/api/v1/snapshots/{sid}/statistics?lifespan=forever")
    assert bad.status_code == 400


def test_generation_growth_and_per_generation_statistics(upload, api_client):
    sid = uploaded_snapshot_id(upload, spec_example())
    gens = {g.index: g for g in Generation.objects.filter(snapshot_id=sid)}
    # Launch: Malloc 48 Bytes, 100 × 48 = 4800. Open chat: MessageCell 9984 + VM 4194304.
    assert (gens[0].growth_bytes, gens[0].persistent) == (4800, 100)
    assert (gens[1].growth_bytes, gens[1].persistent) == (9984 + 4194304, 13 + 2)
    stats = api_client.get(f"/api/v1/snapshots/{sid}/statistics?generation=1").json()
    assert set(rows_by_category(stats)) == {"MessageCell", "VM: CoreAnimation"}
    baseline = api_client.get(f"/api/v1/snapshots/{sid}/statistics?generation=baseline").json()
    assert baseline["rows"] == []


def test_events_shape_replayed(upload, api_client):
    response = upload(events_example())
    assert response.status_code == 202, response.json()
    body = response.json()
    assert body["counts"]["events"] == 10
    assert body["counts"]["unmatched_frees"] == 1  # the free of 0x999
    assert body["counts"]["replaced_live_blocks"] == 1  # malloc at 0x30 while it was live
    sid = body["snapshot"]["id"]
    rows = rows_by_category(api_client.get(f"/api/v1/snapshots/{sid}/statistics").json())
    counts = {
        name: (r["persistent"], r["persistent_bytes"], r["transient"], r["transient_bytes"])
        for name, r in rows.items()
    }
    assert counts == {
        "Malloc 48 Bytes": (0, 0, 2, 96),  # freed at t=20, and realloc'ed away at t=160
        "Malloc 1.50 KiB": (0, 0, 1, 1536),  # calloc 1536, ended by the malloc at its address
        "Malloc 2.00 KiB": (1, 2048, 0, 0),  # the realloc's new block
        "Foo": (1, 16, 0, 0),
        "VM: CoreAnimation": (0, 0, 1, 16384),  # vm tag 51, deallocated
        "VM: Anonymous VM": (1, 4096, 0, 0),
    }
    gens = list(Generation.objects.filter(snapshot_id=sid))
    # Everything still alive was created after the mark at 100 ms: 2048 + 16 + 4096.
    assert [(g.growth_bytes, g.persistent) for g in gens] == [(6160, 3)]


def test_snapshot_json(upload, api_client):
    sid = uploaded_snapshot_id(upload, spec_example())
    data = api_client.get(f"/api/v1/snapshots/{sid}").json()
    assert data["build"] == {"version": "8.0.51", "number": "2741"}
    assert data["device"]["model"] == "iPhone14,5"
    assert data["persistent_bytes"] == 4209088


def test_snapshot_page_shows_instruments_columns(upload, member_client):
    sid = uploaded_snapshot_id(upload, spec_example())
    page = member_client.get(f"/snapshots/{sid}/").content.decode()
    for column in ("Persistent Bytes", "# Persistent", "# Transient", "Total Bytes", "# Total"):
        assert column in page
    assert "All Heap &amp; Anonymous VM" in page
    assert "4.00 MiB" in page  # VM: CoreAnimation persistent bytes, 4194304 = 4 MiB
    assert "9.75 KiB" in page  # MessageCell 9984 bytes = 9.75 KiB
    searched = member_client.get(f"/snapshots/{sid}/?q=message").content.decode()
    assert "MessageCell" in searched and "Malloc 48 Bytes" not in searched


def test_build_statistics_sum_snapshots(upload, api_client, app):
    first = uploaded_snapshot_id(upload, spec_example())
    second = uploaded_snapshot_id(upload, spec_example(captured_at="2026-11-21T10:00:00Z"))
    assert first != second
    builds = api_client.get(f"/api/v1/apps/{app.pk}/builds").json()
    assert [(b["version"], b["snapshots"]) for b in builds] == [("8.0.51", 2)]
    stats = api_client.get(f"/api/v1/apps/{app.pk}/builds/{builds[0]['id']}/statistics").json()
    assert stats["snapshots"] == 2
    assert rows_by_category(stats)["MessageCell"]["persistent_bytes"] == 2 * 9984
