"""The monitors' formats through the upload API, checked on the stored statistics."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from memdash.allocations.models import Snapshot
from tests.importers.helpers import FBAT_GENERATIONS

HERE = Path(__file__).parent
SAMPLES = Path(__file__).resolve().parents[1] / "data" / "pprof"
REPORT = json.loads((HERE / "matrix_foom_report.json").read_text())
BUILD = "build_version=8.0.4&build_number=104"


def statistics(api_client, snapshot_id: int, **params) -> dict:
    response = api_client.get(f"/api/v1/snapshots/{snapshot_id}/statistics", params)
    assert response.status_code == 200
    return response.json()


def summary(stats: dict) -> dict[str, tuple[int, int, int, int]]:
    return {
        row["category"]: (
            row["persistent"],
            row["persistent_bytes"],
            row["total"],
            row["total_bytes"],
        )
        for row in stats["summary"]
    }


def stored(response) -> int:
    assert response.status_code == 202, response.json()
    return response.json()["snapshot"]["id"]


@pytest.mark.django_db
def test_matrix_report(upload, api_client):
    response = upload(REPORT, query=BUILD)
    assert response.json()["format"] == "matrix"
    snapshot_id = stored(response)
    totals = summary(statistics(api_client, snapshot_id))
    # All: Σ items = 150095 allocations, 130981888 bytes (see test_matrix), all persistent;
    # VM: the one `VM: IOSurface` item, 15 / 62914560; heap: the rest,
    # 150095 - 15 = 150080 and 130981888 - 62914560 = 68067328.
    assert totals == {
        "All Heap & Anonymous VM": (150095, 130981888, 150095, 130981888),
        "All Heap Allocations": (150080, 68067328, 150080, 68067328),
        "All Anonymous VM": (15, 62914560, 15, 62914560),
    }
    rows = {r["category"]: r for r in statistics(api_client, snapshot_id)["rows"]}
    assert rows["MMImageCacheItem"]["persistent_bytes"] == 41943040
    # Matrix's own responsible caller of its heaviest stack (`caller`: app uuid @ 0x5a31c8)
    assert rows["MMImageCacheItem"]["responsible_caller"] == "Chat + 0x5a31c8"
    assert rows["Malloc 1.50 KiB"]["responsible_caller"] == "Chat + 0x5a33e0"
    snapshot = api_client.get(f"/api/v1/snapshots/{snapshot_id}").json()
    assert snapshot["trigger"] == "foom"
    assert snapshot["session"] == "3f6c1a9e-2b7d-4e58-9a1c-5d8e7f0b2a64"
    assert snapshot["build"] == {"version": "8.0.4", "number": "104"}
    assert snapshot["device"]["model"] == "iPhone12,1"
    assert snapshot["captured_at"].startswith("2025-11-20T10:23:01")


@pytest.mark.django_db
def test_gzipped_matrix_report_is_read_the_same(upload, api_client):
    body = gzip.compress(json.dumps(REPORT).encode())
    snapshot_id = stored(upload(body, query=BUILD, HTTP_CONTENT_ENCODING="gzip"))
    assert summary(statistics(api_client, snapshot_id))["All Heap & Anonymous VM"][1] == 130981888


# Two generations: FBAllocationTracker's generation lists without the empty one.
TWO_GENERATIONS = [generation for generation in FBAT_GENERATIONS if generation]


@pytest.mark.django_db
def test_fballocationtracker_generations(upload, api_client):
    response = upload(TWO_GENERATIONS, query=BUILD)
    assert response.json()["format"] == "fballocationtracker"
    snapshot_id = stored(response)
    # all: 1 + 12 + 28 = 41 objects, 1024 + 12 × 96 + 28 × 96 = 1024 + 1152 + 2688 = 4864 B
    assert summary(statistics(api_client, snapshot_id))["All Heap Allocations"] == (
        41,
        4864,
        41,
        4864,
    )
    first = summary(statistics(api_client, snapshot_id, generation=0))
    assert first["All Heap Allocations"] == (13, 2176, 13, 2176)  # 1 + 12; 1024 + 1152
    second = summary(statistics(api_client, snapshot_id, generation=1))
    assert second["All Heap Allocations"] == (28, 2688, 28, 2688)
    snapshot = api_client.get(f"/api/v1/snapshots/{snapshot_id}").json()
    assert snapshot["build"] == {"version": "8.0.4", "number": "104"}


@pytest.mark.django_db
def test_fballocationtracker_summary_clamps_negative_alive(upload, api_client):
    summary_list = [
        {"className": "Timer", "allocations": 5, "deallocations": 7, "aliveObjects": -2,
         "instanceSize": 48},
        {"className": "MessageCell", "allocations": 120, "deallocations": 80, "aliveObjects": 40,
         "instanceSize": 96},
    ]  # fmt: skip
    snapshot_id = stored(upload(summary_list, query=BUILD))
    rows = {r["category"]: r for r in statistics(api_client, snapshot_id)["rows"]}
    # Timer: 0 persistent, 7 × 48 = 336 B transient; MessageCell: 40 × 96 = 3840, 80 × 96 = 7680
    assert (rows["Timer"]["persistent"], rows["Timer"]["transient_bytes"]) == (0, 336)
    assert (rows["MessageCell"]["persistent_bytes"], rows["MessageCell"]["transient_bytes"]) == (
        3840,
        7680,
    )


@pytest.mark.django_db
def test_pprof_legacy_text_totals_equal_pprofs_figures(upload, api_client):
    body = (SAMPLES / "gobench.heap").read_bytes()
    response = upload(body, query=BUILD, content_type="text/plain")
    assert response.json()["format"] == "pprof"
    totals = summary(statistics(api_client, stored(response)))
    # gobench.heap.string: inuse_objects 11445, inuse_space 7721316,
    # alloc_objects 83134, alloc_space 350314738 (allocated = persistent + transient)
    assert totals["All Heap Allocations"] == (11445, 7721316, 83134, 350314738)
    assert totals["All Anonymous VM"] == (0, 0, 0, 0)


@pytest.mark.django_db
def test_pprof_delta_protobuf_is_refused(upload):
    # go_heap_delta.pb.gz covers 420 s (duration_nanos): a delta, not a heap (test_pprof_forms)
    body = (SAMPLES / "go_heap_delta.pb.gz").read_bytes()
    response = upload(body, query=BUILD, content_type="application/octet-stream")
    assert response.status_code == 400
    assert response.json()["path"] == "duration_nanos"
    assert not Snapshot.objects.exists()


@pytest.mark.parametrize(
    ("body", "query", "path"),
    [
        ([{"className": "A", "aliveObjects": 1}], BUILD, "[0].instanceSize"),
        ([{"className": "A", "aliveObjects": 1, "instanceSize": 8}], "", "build_version"),
        ({"head": {"protocol_ver": 1, "report_time": 1}, "items": []}, BUILD, "head.app_uuid"),
        (b"heap profile: 1: 8 [1: 8] @ heap/1048576\n1: 8 [x: 8] @ 0x1\n", BUILD, "line 2"),
    ],
)
@pytest.mark.django_db
def test_malformed_uploads_are_refused_with_a_path_and_store_nothing(upload, body, query, path):
    response = upload(body, query=query, content_type="application/octet-stream")
    assert response.status_code == 400
    assert response.json()["path"] == path
    assert not Snapshot.objects.exists()
