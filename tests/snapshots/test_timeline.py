"""The timeline of an events upload and its time ranges, against the series worked out by hand.

`timeline_example`: a run from 0 to 1000 ms, so 100 buckets of 10 ms (bucket i is
[10·i, 10·i + 10), the last one also holds 1000).
- 0 ms   A 100 B (stack 2) made           bucket 0
- 5 ms   B 50 B made                      bucket 0
- 250 ms A 100 B freed                    bucket 25
- 400 ms A 200 B (stack 3) made           bucket 40
- 600 ms realloc: B 50 B ended, B 80 B made, bucket 60
- 1000 ms C 10 B made                     bucket 99
Live at the end of each bucket: 0-24: 2 blocks 150 B; 25-39: 1, 50; 40-59: 2, 250;
60-98: 2, 280; 99: 3, 290 (= the persistent bytes: A 200 + B 80 + C 10).
"""

from __future__ import annotations

import numpy as np
import pytest

from memdash.allocations.logic.timeline import Buckets, live_series, made_per_bucket
from memdash.allocations.models import Category, Snapshot, TimedAllocationRow, Timeline
from tests.samples import spec_example, timeline_example

pytestmark = pytest.mark.django_db


def uploaded(upload, doc) -> int:
    response = upload(doc)
    assert response.status_code == 202, response.json()
    return response.json()["snapshot"]["id"]


def summed_without_marks() -> dict:
    """Rows summed on the device and no generation mark: nothing says when anything was made
    (with marks at their times it has a timeline of them: test_timeline_marks)."""
    doc = spec_example(generations=[])
    for row in doc["allocations"]:
        row.pop("generation", None)
    return doc


def expected_live() -> tuple[list[int], list[int]]:
    count = [2] * 25 + [1] * 15 + [2] * 20 + [2] * 39 + [3]
    size = [150] * 25 + [50] * 15 + [250] * 20 + [280] * 39 + [290]
    return count, size


def test_the_live_series_of_an_events_upload(upload):
    sid = uploaded(upload, timeline_example())
    timeline = Timeline.objects.get(snapshot_id=sid)
    assert (timeline.start_ms, timeline.bucket_ms, timeline.buckets) == (0, 10, 100)
    count, size = expected_live()
    assert timeline.live_count == count
    assert timeline.live_bytes == size
    assert Snapshot.objects.get(pk=sid).persistent_bytes == size[-1]


def test_rows_by_bucket(upload):
    sid = uploaded(upload, timeline_example())
    names = dict(Category.objects.values_list("pk", "name"))
    rows = {
        (b, names[c], th, g, p, pb, t, tb)
        for b, c, th, g, p, pb, t, tb in TimedAllocationRow.objects.filter(
            snapshot_id=sid
        ).values_list(
            "bucket", "category_id", "thread", "generation",
            "persistent", "persistent_bytes", "transient", "transient_bytes",
        )
    }  # fmt: skip
    # A (bucket 0, freed), B (bucket 0, thread 0, ended by the realloc), A (40, persistent,
    # generation 0: made after the mark at 300), B (60, persistent), C (99).
    assert rows == {
        (0, "A", None, None, 0, 0, 1, 100),
        (0, "B", 0, None, 0, 0, 1, 50),
        (40, "A", None, 0, 1, 200, 0, 0),
        (60, "B", 0, 0, 1, 80, 0, 0),
        (99, "C", None, 0, 1, 10, 0, 0),
    }


def test_an_aggregated_upload_has_no_timeline(upload):
    sid = uploaded(upload, spec_example())
    assert not Timeline.objects.filter(snapshot_id=sid).exists()
    assert not TimedAllocationRow.objects.filter(snapshot_id=sid).exists()


def stats(api_client, sid, **params):
    response = api_client.get(f"/api/v1/snapshots/{sid}/statistics", params)
    assert response.status_code == 200, response.json()
    return response.json()


def counters(answer) -> dict:
    return {
        r["category"]: (
            r["persistent"],
            r["persistent_bytes"],
            r["transient"],
            r["transient_bytes"],
        )
        for r in answer["rows"]
    }


def test_statistics_of_a_range(upload, api_client):
    sid = uploaded(upload, timeline_example())
    # 0-300 ms: buckets 0-29, the blocks made at 0 and 5 ms (both freed later)
    early = stats(api_client, sid, from_ms="0", to_ms="300")
    assert early["range"] == {"from_ms": 0, "to_ms": 300}
    assert counters(early) == {"A": (0, 0, 1, 100), "B": (0, 0, 1, 50)}
    heap = {r["category"]: r for r in early["summary"]}["All Heap Allocations"]
    assert (heap["transient"], heap["transient_bytes"], heap["total_bytes"]) == (2, 150, 150)
    # 395-605 ms: buckets 39-60 (390 to 610 ms): A 200 (400 ms) and B 80 (600 ms), both live
    middle = stats(api_client, sid, from_ms="395", to_ms="605")
    assert middle["range"] == {"from_ms": 390, "to_ms": 610}
    assert counters(middle) == {"A": (1, 200, 0, 0), "B": (1, 80, 0, 0)}
    # an end left out is the run's; the wrong way round is the same range
    assert counters(stats(api_client, sid, to_ms="300")) == counters(early)
    assert counters(stats(api_client, sid, from_ms="605", to_ms="395")) == counters(middle)
    assert counters(stats(api_client, sid, from_ms="995")) == {"C": (1, 10, 0, 0)}
    # with the lifespan filter, the generation filter and the search
    assert counters(stats(api_client, sid, to_ms="300", lifespan="persistent")) == {}
    assert counters(stats(api_client, sid, from_ms="0", generation="0")) == {
        "A": (1, 200, 0, 0), "B": (1, 80, 0, 0), "C": (1, 10, 0, 0),
    }  # fmt: skip
    assert counters(stats(api_client, sid, from_ms="0", generation="baseline")) == counters(early)
    assert counters(stats(api_client, sid, from_ms="395", to_ms="605", q="a")) == {
        "A": (1, 200, 0, 0)
    }
    # sorted as the table asks
    ordered = stats(api_client, sid, from_ms="0", sort="total_bytes", dir="asc")
    assert [r["category"] for r in ordered["rows"]] == ["C", "B", "A"]  # 10, 130, 300 bytes


def test_bad_ranges(upload, api_client):
    sid = uploaded(upload, timeline_example())
    for params, name in (
        ({"from_ms": "abc"}, "from_ms"),
        ({"from_ms": "1e3"}, "from_ms"),
        ({"to_ms": " 5"}, "to_ms"),
        ({"from_ms": "0", "to_ms": "1" * 30}, "to_ms"),
    ):
        response = api_client.get(f"/api/v1/snapshots/{sid}/statistics", params)
        assert response.status_code == 400, params
        assert name in response.json()["fields"], response.json()
    outside = api_client.get(f"/api/v1/snapshots/{sid}/statistics?from_ms=5000&to_ms=6000")
    assert outside.status_code == 404
    assert outside.json()["path"] == "from_ms"
    assert "outside the run" in outside.json()["error"]
    plain = uploaded(upload, summed_without_marks())
    none = api_client.get(f"/api/v1/snapshots/{plain}/statistics?to_ms=10")
    assert (none.status_code, none.json()["path"]) == (404, "to_ms")
    assert "no timeline" in none.json()["error"]


def test_call_tree_of_a_range(upload, api_client):
    sid = uploaded(upload, timeline_example())

    def roots(**params):
        response = api_client.get(f"/api/v1/snapshots/{sid}/calltree", params)
        assert response.status_code == 200, response.json()
        data = response.json()
        rows = [(c["symbol"], c["bytes"], c["count"]) for c in data["children"]]
        return data["total_bytes"], data["total_count"], rows

    # A 100 B on stack 2 (main > UIApplicationMain > viewDidLoad), B 50 B without a stack
    assert roots(from_ms="0", to_ms="300") == (150, 2, [("main", 100, 1), ("(no stack)", 50, 1)])
    assert roots(from_ms="395", to_ms="605") == (
        280, 2, [("main", 200, 1), ("(no stack)", 80, 1)],
    )  # fmt: skip
    # the whole run: the stored tree, 440 B in 5 blocks
    assert roots() == (440, 5, [("main", 300, 2), ("(no stack)", 140, 3)])
    flame = api_client.get(f"/api/v1/snapshots/{sid}/calltree/flame?from_ms=395&to_ms=605")
    assert flame.status_code == 200
    assert flame.json()["total_bytes"] == 280
    bad = api_client.get(f"/api/v1/snapshots/{sid}/calltree?from_ms=x")
    assert bad.status_code == 400


def test_the_page_and_its_csv(upload, member_client):
    sid = uploaded(upload, timeline_example())
    page = member_client.get(f"/snapshots/{sid}/?from_ms=395&to_ms=605")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="timeline-chart"' in html
    assert "js/timeline.js" in html
    assert 'id="clear-range"' in html
    assert "00:00.390" in html and "00:00.610" in html  # the range as chosen: whole buckets
    assert "from_ms=390&amp;to_ms=610" in html  # carried to the call tree
    csv = member_client.get(f"/snapshots/{sid}/?from_ms=395&to_ms=605&format=csv")
    lines = b"".join(csv.streaming_content).decode().splitlines()
    assert lines[0].startswith("Category,Persistent bytes")
    assert "A,200,1,0,200,1,0" in lines
    assert "B,80,1,0,80,1,0" in lines
    assert len(lines) == 1 + 3 + 2  # headers, the summary rows, A and B
    assert member_client.get(f"/snapshots/{sid}/?from_ms=oops").status_code == 400
    assert member_client.get(f"/snapshots/{sid}/?from_ms=9000").status_code == 404
    plain = uploaded(upload, summed_without_marks())
    html = member_client.get(f"/snapshots/{plain}/").content.decode()
    assert 'id="no-timeline"' in html
    assert "already summed on the device" in html
    assert "timeline.js" not in html


def test_buckets_of_a_run_and_the_spans_of_ranges():
    buckets = Buckets.of_run(np.array([5.0, 1005.0, 300.0]))
    assert buckets == Buckets(5.0, 10.0, 100)
    assert buckets.of(np.array([5.0, 14.99, 15.0, 1005.0])).tolist() == [0, 0, 1, 99]
    assert buckets.span(15, 25) == (1, 1)  # [15, 25): bucket 1 only (15 to 25 ms)
    assert buckets.span(14, 26) == (0, 2)
    assert buckets.span(20, 20) == (1, 1)  # a point: its bucket
    assert buckets.span(0, 4) is None  # before the run
    assert buckets.span(1006, 2000) is None
    assert buckets.span(1000, 2000) == (99, 99)
    assert Buckets.of_run(np.array([7.0, 7.0])) == Buckets(7.0, 1.0, 1)  # all at once
    assert Buckets.of_run(np.array([])) == Buckets(0.0, 1.0, 1)


def test_live_series_from_what_was_made_and_ended():
    made = np.array([[2, 150], [0, 0], [1, 200]])
    ended = np.array([[0, 0], [1, 100], [1, 50]])
    # 2/150; 2-1 = 1/50; 1+1-1 = 1/200
    assert live_series(made, ended) == ([2, 1, 1], [150, 50, 200])
    rows_bucket = np.array([0, 0, 2])
    counts = np.array([[0, 0, 1, 100], [1, 50, 0, 0], [1, 200, 0, 0]])
    assert made_per_bucket(rows_bucket, counts, 3).tolist() == made.tolist()


def test_allocations_list_of_a_range(upload, api_client, member_client):
    sid = uploaded(upload, timeline_example())

    def entries(**params):
        response = api_client.get(f"/api/v1/snapshots/{sid}/allocations", params)
        assert response.status_code == 200, response.json()
        return sorted(
            (e["category"], e["live"], e["count"], e["size"]) for e in response.json()["rows"]
        )

    # 395-605 ms: A 200 B and B 80 B, both still live
    assert entries(from_ms="395", to_ms="605") == [("A", True, 1, 200), ("B", True, 1, 80)]
    # 0-300 ms: A 100 B and B 50 B, both freed later
    assert entries(to_ms="300") == [("A", False, 1, 100), ("B", False, 1, 50)]
    assert entries(to_ms="300", lifespan="persistent") == []
    assert len(entries()) == 5  # the whole run: every row
    assert api_client.get(f"/api/v1/snapshots/{sid}/allocations?from_ms=x").status_code == 400
    page = member_client.get(f"/snapshots/{sid}/allocations/?from_ms=395&to_ms=605")
    assert page.status_code == 200 and 'id="list-range"' in page.content.decode()


def test_a_range_lists_its_blocks_by_time(upload, api_client):
    """In a range, the allocations made in it one by one, in every order of the whole list: by
    Created, 0-605 ms covers buckets 0-60, so the blocks made at 0, 5, 400 and 600 ms (not the
    one at 1000 ms), and backwards the same four reversed; by address, the same four."""
    sid = uploaded(upload, timeline_example())

    def listed(**params):
        response = api_client.get(f"/api/v1/snapshots/{sid}/allocations", params)
        assert response.status_code == 200, response.json()
        return [(e["made_ms"], e["category"], e["size"]) for e in response.json()["rows"]]

    made = [(0, "A", 100), (5, "B", 50), (400, "A", 200), (600, "B", 80)]
    assert listed(to_ms="605", sort="time", dir="asc") == made
    assert listed(to_ms="605", sort="time", dir="desc") == made[::-1]
    assert sorted(listed(to_ms="605", sort="address")) == made
    # 395-1000 ms: buckets 39-99, the last holding the run's end
    assert [m for m, *_ in listed(from_ms="395", sort="time", dir="asc")] == [400, 600, 1000]
