"""valgrind massif output, checked against what `ms_print` (valgrind 3.19, Debian) printed for
each file (tests/data/PROVENANCE.md): the per-snapshot table (total, useful-heap, extra-heap,
stacks), the list of detailed snapshots with the peak, and the trees' bytes.

massif.out.32406, .stack and .ktorrent are massif-visualizer's test data; massif.out.leaky was
written here by valgrind 3.19's massif (`--time-unit=ms --detailed-freq=1`) on
tests/data/heaptrack/leaky.c; massif.out.leaky_bytes likewise with `--time-unit=B`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memdash.allocations.models import Snapshot
from memdash.core.logic.errors import InvalidUpload
from memdash.ingest.writes import formats
from memdash.ingest.writes.parsers import massif

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "massif"
META = {
    "app_id": "com.example.native",
    "platform": "linux",
    "build_version": "3.1",
    "received_at": datetime(2026, 11, 20, 9, 0, tzinfo=UTC),
}
KTORRENT_DETAILED = [1, 3, 5, 7, 10, 11, 12, 13, 14, 15, 18, 19, 20, 22, 33, 34, 40, 43, 45]
KTORRENT_DETAILED += [48, 55, 59, 63, 69, 73, 78, 81, 85]


def convert(name: str) -> tuple[dict, dict]:
    raw = (SAMPLES / name).read_bytes()
    assert formats.detect(raw, None).name == "massif"
    return massif.convert(raw, None, META)


def table(doc: dict, generation: int) -> tuple[int, int, int, int]:
    """ms_print's columns of one snapshot: total(B), useful-heap(B), extra-heap(B), stacks(B)."""
    sums = {massif.USEFUL_HEAP: 0, massif.EXTRA_HEAP: 0, massif.STACKS: 0}
    for row in doc["allocations"]:
        if row["generation"] == generation:
            sums[row["category"]] += row["persistent_bytes"]
    useful, extra, stacks = sums.values()
    return useful + extra + stacks, useful, extra, stacks


def paths(doc: dict, generation: int) -> dict[str, int]:
    """Useful-heap bytes by stack (`outermost > … > allocating function`) in one snapshot."""
    found: dict[str, int] = {}
    for row in doc["allocations"]:
        if row["generation"] != generation or row["category"] != massif.USEFUL_HEAP:
            continue
        names, node = [], row["stack"]
        while node is not None:
            parent, frame = doc["stacks"][node]
            names.append(doc["frames"][frame].get("symbol", "???"))
            node = parent
        key = " > ".join(reversed(names))
        found[key] = found.get(key, 0) + row["persistent_bytes"]
    return found


def test_32406_two_empty_snapshots():
    doc, counts = convert("massif.out.32406")
    # ms_print: "Number of snapshots: 2", "Detailed snapshots: []";
    #   0  0  0  0  0  0
    #   1  123,667  120  100  20  0
    assert counts == {"massif_snapshots": 2, "massif_detailed_snapshots": 0}
    # no peak snapshot: ms_print's two counts only
    assert massif.tool_figures(counts) == {
        "number of snapshots": {"value": 2, "unit": "count", "order": 0},
        "detailed snapshots": {"value": 0, "unit": "count", "order": 1},
    }
    assert [g["name"] for g in doc["generations"]] == [
        "snapshot 0, 0 instructions",
        "snapshot 1, 123,667 instructions",
    ]
    assert table(doc, 0) == (0, 0, 0, 0)
    assert table(doc, 1) == (120, 100, 20, 0)


def test_stack_snapshots_and_peak():
    doc, counts = convert("massif.out.stack")
    # ms_print: 72 snapshots, all detailed, "61 (peak)"; rows
    #   1  17,781  3,264  0  0  3,264
    #  61  3,115,620  6,400,272  0  0  6,400,272
    #  71  3,518,986  1,208  0  0  1,208
    assert counts == {
        "massif_snapshots": 72,
        "massif_detailed_snapshots": 72,
        "massif_peak_snapshot": 61,
        "massif_peak_time_instructions": 3115620,
        "massif_peak_bytes": 6400272,
        "massif_peak_useful_heap_bytes": 0,
        "massif_peak_extra_heap_bytes": 0,
        "massif_peak_stacks_bytes": 6400272,
    }
    assert doc["generations"][61]["name"] == "snapshot 61 (peak), 3,115,620 instructions"
    assert table(doc, 1) == (3264, 0, 0, 3264)
    assert table(doc, 61) == (6400272, 0, 0, 6400272)
    assert table(doc, 71) == (1208, 0, 0, 1208)


def test_ktorrent_tables_and_trees():
    doc, counts = convert("massif.out.ktorrent")
    # ms_print: "Number of snapshots: 88", detailed [1, 3, …, 81, 85 (peak)]
    assert counts["massif_snapshots"] == 88
    assert counts["massif_detailed_snapshots"] == len(KTORRENT_DETAILED) == 28
    assert counts["massif_peak_snapshot"] == 85
    names = [g["name"] for g in doc["generations"]]
    assert [i for i, name in enumerate(names) if "(detailed)" in name or "(peak)" in name] == (
        KTORRENT_DETAILED
    )
    # ms_print's rows:
    #  1  16,141,963,187    147,699,016    144,941,171  2,757,845  0
    #  2  30,492,401,873    238,158,160    235,301,965  2,856,195  0
    # 85  989,167,909,002  4,370,626,688  4,362,597,647  8,029,041  0
    # 87  995,715,507,522  4,398,727,472  4,390,978,140  7,749,332  0   (after the peak, larger:
    #     massif's peak is the one it measured in detail, ms_print marks that one)
    assert table(doc, 1) == (147699016, 144941171, 2757845, 0)
    assert table(doc, 2) == (238158160, 235301965, 2856195, 0)
    assert table(doc, 85) == (4370626688, 4362597647, 8029041, 0)
    assert table(doc, 87) == (4398727472, 4390978140, 7749332, 0)
    assert counts["massif_peak_bytes"] == 4370626688
    # The peak's tree, as ms_print prints it:
    # ->98.13% (4,288,806,912B) 0x3F4345F640: bt::CircularBuffer::CircularBuffer(unsigned int)
    # | ->65.42% (2,859,204,608B) 0x3F434ECB96: utp::LocalWindow::LocalWindow(unsigned int)
    circular = "bt::CircularBuffer::CircularBuffer(unsigned int)"
    by_path = paths(doc, 85)
    assert sum(b for p, b in by_path.items() if p.endswith(circular)) == 4288806912
    window = f"utp::LocalWindow::LocalWindow(unsigned int) > {circular}"
    assert sum(b for p, b in by_path.items() if p.endswith(window)) == 2859204608
    frame = next(f for f in doc["frames"] if f.get("symbol") == circular)
    assert frame["address"] == 0x3F4345F640
    # `(in /usr/lib64/libktorrent.so.1.0.1)`: under /usr/lib64, a system image as in pprof
    assert doc["images"][frame["image"]] == {"name": "libktorrent.so.1.0.1", "system": True}


def test_leaky_peak_tree_in_milliseconds():
    doc, counts = convert("massif.out.leaky")
    # ms_print: 75 snapshots, all detailed, "69 (peak)":
    #  69  230  105,088  105,000  88  0
    # ->99.92% (105,000B) 0x10918D: make_buffer (leaky.c:6)
    # | ->95.16% (100,000B) 0x10928A: main (leaky.c:18)
    # | ->04.76% (5,000B) 0x109210: keep (leaky.c:11)
    # |   ->04.76% (5,000B) 0x10924D: main (leaky.c:16)
    assert counts["massif_peak_snapshot"] == 69 and counts["massif_snapshots"] == 75
    assert doc["generations"][69] == {"name": "snapshot 69 (peak)", "at_ms": 230}
    assert table(doc, 69) == (105088, 105000, 88, 0)
    assert paths(doc, 69) == {"main > make_buffer": 100000, "main > keep > make_buffer": 5000}
    # ms_print's header and the peak's row, as kept on the snapshot: "Number of snapshots: 75",
    # "Detailed snapshots: [0, …, 69 (peak), …, 74]" (75), row 69: time(ms) 230, total(B)
    # 105,088, useful-heap(B) 105,000, extra-heap(B) 88, stacks(B) 0
    figures = {k: (v["value"], v["unit"]) for k, v in massif.tool_figures(counts).items()}
    assert figures == {
        "number of snapshots": (75, "count"),
        "detailed snapshots": (75, "count"),
        "peak snapshot": (69, "count"),
        "peak time": (230, "ms"),
        "peak total": (105088, "bytes"),
        "peak useful heap": (105000, "bytes"),
        "peak extra heap": (88, "bytes"),
        "peak stacks": (0, "bytes"),
    }
    frame = next(f for f in doc["frames"] if f.get("symbol") == "keep")
    assert (frame["file"], frame["line"], frame["address"]) == ("leaky.c", 11, 0x109210)


def test_leaky_with_time_in_bytes_allocated():
    doc, counts = convert("massif.out.leaky_bytes")
    # ms_print: "Number of snapshots: 71", "Detailed snapshots: [1, 5, 10, 15, 20, 52, 60,
    # 67 (peak)]"; rows
    #  66  129,648  105,088  105,000  88  0
    #  67  129,648  105,088  105,000  88  0
    #  69  233,856    9,280    9,168 112  0
    assert (counts["massif_snapshots"], counts["massif_detailed_snapshots"]) == (71, 8)
    assert doc["generations"][67] == {
        "name": "snapshot 67 (peak), 129,648 bytes allocated",
        "at_ms": 0,
    }
    assert table(doc, 69) == (9280, 9168, 112, 0)
    figures = {k: (v["value"], v["unit"]) for k, v in massif.tool_figures(counts).items()}
    assert figures["peak snapshot"] == (67, "count")
    assert figures["peak time (bytes allocated)"] == (129648, "bytes")
    assert figures["peak total"] == (105088, "bytes")


def test_refusals_say_where():
    with pytest.raises(InvalidUpload) as caught:
        massif.convert(b"desc: x\ncmd: ./a\ntime_unit: i\nsnapshot=0\ntime=zero\n", None, META)
    assert caught.value.path == "line 5" and "massif output" in str(caught.value)
    tree = b"heap_tree=detailed\nn1: 10 (heap allocation functions)\n n0: 20 0x1: f (a.c:1)\n"
    head = b"desc: x\ncmd: ./a\ntime_unit: i\nsnapshot=0\ntime=0\nmem_heap_B=10\n"
    head += b"mem_heap_extra_B=0\nmem_stacks_B=0\n"
    with pytest.raises(InvalidUpload) as caught:
        massif.convert(head + tree, None, META)  # a caller with more bytes than its callee
    assert caught.value.path == "line 10"
    unfinished = head + b"heap_tree=detailed\nn2: 10 (heap allocation functions)\n"
    with pytest.raises(InvalidUpload) as caught:
        massif.convert(unfinished, None, META)
    assert caught.value.path == "line 10"  # the file ends before the node's children


@pytest.mark.django_db
def test_upload_generations(upload, api_client):
    raw = (SAMPLES / "massif.out.leaky").read_bytes()
    response = upload(raw, content_type="text/plain", query="build_version=3.1")
    assert response.status_code == 202, response.json()
    body = response.json()
    assert body["format"] == "massif" and body["counts"]["massif_peak_snapshot"] == 69
    snapshot = Snapshot.objects.get(pk=body["snapshot"]["id"])
    generations = api_client.get(f"/api/v1/snapshots/{snapshot.pk}/generations").json()
    rows = generations if isinstance(generations, list) else generations["generations"]
    peak = next(row for row in rows if row["name"] == "snapshot 69 (peak)")
    assert peak["growth_bytes"] == 105088  # ms_print's total(B) of snapshot 69
    # ms_print's peak row on the snapshot: the JSON and the page
    figures = api_client.get(f"/api/v1/snapshots/{snapshot.pk}").json()["tool_figures"]
    assert [(f["label"], f["value"]) for f in figures][2:5] == [
        ("peak snapshot", 69),
        ("peak time", 230),
        ("peak total", 105088),
    ]


@pytest.mark.django_db
def test_snapshot_page_says_what_massif_reported(upload, member_client):
    raw = (SAMPLES / "massif.out.stack").read_bytes()
    response = upload(raw, content_type="text/plain", query="build_version=3.1")
    assert response.status_code == 202, response.json()
    page = member_client.get(f"/snapshots/{response.json()['snapshot']['id']}/").content
    page = page.decode()
    # ms_print: "Number of snapshots: 72", "61 (peak)", row 61: time(i) 3,115,620, total(B)
    # 6,400,272 (= stacks(B), --stacks=yes), useful-heap(B) 0
    assert "What massif reported" in page
    assert "number of snapshots <strong>72</strong>" in page
    assert "peak snapshot <strong>61</strong>" in page
    assert "peak time (instructions) <strong>3,115,620</strong>" in page
    assert 'peak stacks <strong><span title="6,400,272 bytes">6.10 MiB</span>' in page
