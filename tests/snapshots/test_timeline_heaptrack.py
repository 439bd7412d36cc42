"""A heaptrack file has a timeline as the events shape has: live bytes and count at the end of each
of 100 buckets of its run, and a range keeps the allocations made in it.

Expected figures from heaptrack's own (heaptrack_print's "calls to allocation functions" and
"total memory leaked" of heaptrack's test data, tests/importers/test_heaptrack.py) and from the
file's records read here independently: the decompressed text line by line, `c` the clock, `a`
the sizes, `+` and `-` what was allocated and released when. This reading pairs nothing: live
bytes are what was allocated less what was released, and a range's # Total and Total Bytes are
the `+` records in its buckets.
"""

from __future__ import annotations

from csv import DictReader
from pathlib import Path

import pytest
import zstandard

from memdash.allocations.models import Snapshot, Timeline
from memdash.allocations.reads.timeline import timeline_chart_data
from tests.importers.test_heaptrack import BUILD

pytestmark = pytest.mark.django_db

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "heaptrack"
GUI = "heaptrack.heaptrack_gui.99454.zst"
ALLOCATIONS, LEAKED = 278534, 1047379  # heaptrack's figures for this file (no suppression)


def records(name: str) -> list[tuple[float, int, int]]:
    """(ms, +1 or -1, size) of every `+` and `-` of a file of format 2 or 3."""
    text = zstandard.ZstdDecompressor().decompressobj().decompress((SAMPLES / name).read_bytes())
    sizes, now, out = [], 0.0, []
    for line in text.decode("utf-8", "replace").split("\n"):
        kind, _, rest = line.partition(" ")
        if kind == "c":
            now = float(int(rest, 16))
        elif kind == "a":
            sizes.append(int(rest.split(" ")[0], 16))
        elif kind in ("+", "-"):
            out.append((now, 1 if kind == "+" else -1, sizes[int(rest, 16)]))
    return out


def bucket_of(ms: float, start: float, width: float) -> int:
    return min(99, int((ms - start) // width))


@pytest.fixture
def gui(upload):
    response = upload((SAMPLES / GUI).read_bytes(), content_type="application/zstd", query=BUILD)
    assert response.status_code == 202 and response.json()["status"] == "done", response.json()
    return Snapshot.objects.get(pk=response.json()["snapshot"]["id"]), records(GUI)


def test_a_heaptrack_files_timeline(gui, api_client, member_client):
    the_live_series_is_the_files(*gui)
    a_range_keeps_what_was_made_in_it(*gui, api_client, member_client)


def the_live_series_is_the_files(snapshot, events):
    # the run from the program's start to the file's last clock, `c db1`: 3505 ms, as
    # heaptrack_print's "total runtime: 3.506000s." counts it (the last clock and 1 ms)
    start, width = 0, 0xDB1 / 100
    assert (min(ms for ms, _, _ in events), max(ms for ms, _, _ in events)) == (0, 0xDAD)
    live_bytes, live_count = [0] * 100, [0] * 100
    for ms, sign, size in events:
        # every release in this file ends a tracked block (heaptrack counts no untracked one)
        for bucket in range(bucket_of(ms, start, width), 100):
            live_bytes[bucket] += sign * size
            live_count[bucket] += sign
    timeline = Timeline.objects.get(snapshot=snapshot)
    assert (timeline.start_ms, timeline.bucket_ms, timeline.buckets) == (start, width, 100)
    assert timeline.live_bytes == live_bytes
    assert timeline.live_count == live_count
    assert live_bytes[-1] == LEAKED  # heaptrack_print's "total memory leaked"
    assert sum(sign > 0 for _, sign, _ in events) == ALLOCATIONS
    data = timeline_chart_data(snapshot)
    assert data is not None and data["kind"] == "buckets" and data["live_bytes"][1:] == live_bytes


def a_range_keeps_what_was_made_in_it(snapshot, events, api_client, member_client):
    width = 0xDB1 / 100  # 35.05 ms
    # the range 1000 to 2000 ms: buckets 28 (from 981.4 ms) to 57 (to 2032.9 ms)
    first, last = bucket_of(1000, 0, width), bucket_of(2000, 0, width)
    assert (first, last) == (28, 57)
    made = [
        size for ms, sign, size in events if sign > 0 and first <= bucket_of(ms, 0, width) <= last
    ]
    url = f"/api/v1/snapshots/{snapshot.pk}/statistics"
    answer = api_client.get(url, {"from_ms": 1000, "to_ms": 2000}).json()
    assert answer["range"] == {"from_ms": first * width, "to_ms": (last + 1) * width}
    total = {r["category"]: r for r in answer["summary"]}["All Heap & Anonymous VM"]
    assert (total["total"], total["total_bytes"]) == (len(made), sum(made))
    # the whole run: every allocation, and what is left of them heaptrack's leaked bytes
    whole = api_client.get(url, {"from_ms": 0}).json()
    summed = {r["category"]: r for r in whole["summary"]}["All Heap & Anonymous VM"]
    assert (summed["total"], summed["persistent_bytes"]) == (ALLOCATIONS, LEAKED)
    # the call tree of the range holds the same
    tree = api_client.get(
        f"/api/v1/snapshots/{snapshot.pk}/calltree", {"from_ms": 1000, "to_ms": 2000}
    ).json()
    assert (tree["total_count"], tree["total_bytes"]) == (len(made), sum(made))
    # the page draws it, the range shaded; its CSV is the range's
    html = member_client.get(f"/snapshots/{snapshot.pk}/", {"from_ms": 1000, "to_ms": 2000})
    assert 'id="timeline-chart"' in html.content.decode()
    assert "generation marks" not in html.content.decode()  # heaptrack has none
    csv = member_client.get(
        f"/snapshots/{snapshot.pk}/", {"from_ms": 1000, "to_ms": 2000, "format": "csv"}
    )
    table = list(DictReader(b"".join(csv.streaming_content).decode().splitlines()))
    every = next(r for r in table if r["Category"] == "All Heap & Anonymous VM")
    assert (int(every["# Total"]), int(every["Total bytes"])) == (len(made), sum(made))
