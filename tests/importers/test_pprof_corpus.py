"""Heap profiles as the tools write them (tests/data/pprof/{go,gperftools,jemalloc}/, recorded by
tests/corpus/record_{go,gperftools,jemalloc}.sh; provenance in each folder's PROVENANCE.md),
read by memdash with the tools' own figures, which are recorded beside each file and parsed
here: `go tool pprof -top -unit=B` (`<file>.top.txt`, one block per sample type),
`google-pprof --text --show_bytes` and `jeprof --text --show_bytes` (`<file>.text.txt`).

memdash's figures: in use = # Persistent / Persistent Bytes; allocated = persistent + transient.
"""

from __future__ import annotations

import gzip
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memdash.allocations.models import Snapshot
from memdash.core.logic.errors import InvalidUpload
from memdash.ingest.logic.pprof import proto as pprof_proto
from memdash.ingest.writes import formats
from memdash.ingest.writes.parsers import pprof

DATA = Path(__file__).resolve().parents[1] / "data" / "pprof"
META = {
    "app_id": "com.example.heapdemo",
    "platform": "linux",
    "build_version": "1.0",
    "build_number": "1",
    "received_at": datetime(2026, 11, 28, 3, 0, tzinfo=UTC),
}
# memdash's four figures, named by the sample types pprof prints them under
FIGURES = ("inuse_objects", "inuse_space", "alloc_objects", "alloc_space")


def read(path: Path) -> dict:
    raw = path.read_bytes()
    assert formats.detect(raw, formats.parse_json(raw)) is pprof.HANDLER
    return pprof.to_snapshot_document(raw, None, META)


def memdash_figures(doc: dict) -> dict[str, int]:
    rows = doc["allocations"]
    return {
        "inuse_objects": sum(r["persistent"] for r in rows),
        "inuse_space": sum(r["persistent_bytes"] for r in rows),
        "alloc_objects": sum(r["persistent"] + r["transient"] for r in rows),
        "alloc_space": sum(r["persistent_bytes"] + r["transient_bytes"] for r in rows),
    }


def go_top(path: Path) -> dict[str, tuple[int, dict[str, int]]]:
    """`go tool pprof -top -unit=B`'s blocks: per sample type, its total and each listed
    function's cum (the samples whose stack holds the function, each counted once)."""
    blocks = {}
    for block in path.read_text().split("File: ")[1:]:
        sample_type = re.search(r"^Type: (\w+)$", block, re.M)[1]
        total = int(re.search(r" of (\d+)B? total", block)[1])
        rows = re.findall(r"^ +\S+ +\S+% +\S+% +(\d+)B? +\S+% +(.+?)(?: \(inline\))?$", block, re.M)
        blocks[sample_type] = (total, {name: int(cum) for cum, name in rows})
    return blocks


def cumulative(doc: dict, figure: str) -> dict[str, int]:
    """memdash's figure for every function, over the rows whose stack holds it (once each)."""
    key = {"inuse_space": "persistent_bytes", "inuse_objects": "persistent"}[figure]
    sums: dict[str, int] = {}
    for row in doc["allocations"]:
        names, node = set(), row["stack"]
        while node is not None:
            parent, frame = doc["stacks"][node]
            names.add(doc["frames"][frame].get("symbol", ""))
            node = parent
        for name in names:
            sums[name] = sums.get(name, 0) + row[key]
    return sums


GO_HEAPS = [
    "runtime_heap.pb.gz",  # WriteTo(f, 0): period_type and period come before sample_type
    "runtime_allocs.pb.gz",
    "runtime_heap_debug1.txt",  # WriteTo(f, 1): the legacy text, unsampled as pprof does
    "http_heap.pb.gz",  # net/http/pprof's /debug/pprof/heap
    "http_allocs.pb.gz",
    "gotest_mem.pprof",  # go test -memprofile
    "merged_heap.pb.gz",  # go tool pprof -proto of two heap profiles
]


@pytest.mark.parametrize("name", GO_HEAPS)
def test_go_profiles_read_with_go_tool_pprofs_totals(name):
    doc = read(DATA / "go" / name)
    top = go_top(DATA / "go" / f"{name}.top.txt")
    assert set(top) == set(FIGURES)
    assert memdash_figures(doc) == {figure: top[figure][0] for figure in FIGURES}


@pytest.mark.parametrize("name", [n for n in GO_HEAPS if n.endswith((".pb.gz", ".pprof"))])
def test_go_profiles_functions_with_go_tool_pprofs_cum(name):
    """Each function `-top` lists (inlined ones too: `main.newBuffer (inline)`, a frame of its
    own in memdash) holds what pprof says its stacks hold."""
    doc = read(DATA / "go" / name)
    top = go_top(DATA / "go" / f"{name}.top.txt")
    for figure in ("inuse_space", "inuse_objects"):
        listed = top[figure][1]
        ours = cumulative(doc, figure)
        assert listed and {f: ours.get(f, 0) for f in listed} == listed


def test_go_debug1_text_functions_with_go_tool_pprofs_cum():
    """The legacy text names its frames in its `#` lines; pprof names them from the binary,
    which also names the frame debug=1 leaves out (the goroutines' runtime.goexit)."""
    name = "runtime_heap_debug1.txt"
    text = (DATA / "go" / name).read_text()
    named = set(re.findall(r"^#\t0x[0-9a-f]+\t(\S+)\+0x", text, re.M))
    doc = read(DATA / "go" / name)
    top = go_top(DATA / "go" / f"{name}.top.txt")
    for figure in ("inuse_space", "inuse_objects"):
        listed = {f: cum for f, cum in top[figure][1].items() if f in named}
        ours = cumulative(doc, figure)
        assert listed and {f: ours.get(f, 0) for f in listed} == listed


def test_go_inlined_frames_are_frames_of_their_own():
    doc = read(DATA / "go" / "runtime_heap.pb.gz")
    symbols = [frame.get("symbol") for frame in doc["frames"]]
    # newBuffer is inlined into its callers: pprof keeps it as a line of their locations
    assert "main.newBuffer" in symbols
    child_of = {
        doc["frames"][doc["stacks"][parent][1]].get("symbol")
        for parent, frame in doc["stacks"]
        if parent is not None and doc["frames"][frame].get("symbol") == "main.newBuffer"
    }
    assert {"main.cacheBlocks", "main.decodeRequest", "main.openSession"} <= child_of


def test_go_runtimes_own_field_order_is_detected():
    """Go writes period_type (field 11) and period (12) first; pprof -proto re-saves in number
    order. Both are the same profile to memdash."""
    runtime = gzip.decompress((DATA / "go" / "runtime_heap.pb.gz").read_bytes())
    assert runtime[0] == (11 << 3 | 2)
    assert pprof.detect(runtime, None)
    merged = gzip.decompress((DATA / "go" / "merged_heap.pb.gz").read_bytes())
    assert merged[0] == (1 << 3 | 2)


@pytest.mark.parametrize("name", ["runtime_heap.pb.gz", "merged_heap.pb.gz"])
def test_a_profiles_first_bytes_are_recognised_wherever_they_stop(name):
    """Detection sniffs a prefix (256 bytes): one that ends inside a field, a varint or a
    message is still the profile's, once it holds the first sample_type."""
    data = gzip.decompress((DATA / "go" / name).read_bytes())
    first_sample_type = data.index(bytes([1 << 3 | 2, 4]))  # ValueType of two small varints
    for length in range(first_sample_type + 6, 400):
        assert pprof_proto.looks_like_profile(data[:length]), length


@pytest.mark.parametrize(
    "name", ["pprof/gperftools/heapsample_v2.heap", "massif/massif.out.leaky", "pprof/gobench.heap"]
)
def test_other_files_are_not_taken_for_protobuf(name):
    data = (DATA.parent / name).read_bytes()
    assert not pprof_proto.looks_like_profile(data[:256])


def test_go_delta_profile_is_refused_as_what_it_is():
    raw_figures = (DATA / "go" / "http_heap_delta.pb.gz.raw.txt").read_text()
    seconds = re.search(r"^Duration: ([\d.]+)", raw_figures, re.M)[1]  # pprof prints "2.00"
    with pytest.raises(InvalidUpload) as refused:
        read(DATA / "go" / "http_heap_delta.pb.gz")
    assert refused.value.path == "duration_nanos"
    message = str(refused.value)
    assert "delta heap profile" in message and "/debug/pprof/heap?seconds=N" in message
    assert re.search(rf"covers {seconds[:3]}\d* s", message)


def text_totals(path: Path) -> dict[str, int]:
    """`google-pprof`/`jeprof --text --show_bytes --<type>`'s "Total: N B" (or "N objects")."""
    blocks = path.read_text().split("## ")[1:]
    totals = {}
    for block in blocks:
        sample_type = re.match(r"\S+ --text --show_bytes --(\w+)", block)[1]
        if total := re.search(r"^Total: (\d+) ", block, re.M):
            totals[sample_type] = int(total[1])
    return totals


@pytest.mark.parametrize(
    "name",
    [
        "gperftools/heapdemo_preload.0001.heap",
        "gperftools/heapdemo_linked.0001.heap",  # a dump mid-run
        "gperftools/heapdemo_linked.0005.heap",
        "jemalloc/heapdemo_exact.f.heap",  # lg_prof_sample:0, not sampled
        "jemalloc/heapdemo_interval.i0.heap",  # lg_prof_interval's first dump
        "jemalloc/heapdemo_no_accum.f.heap",  # no prof_accum: allocated pairs [0: 0]
    ],
)
def test_c_heap_profiles_read_with_their_tools_totals(name):
    """Where the profile holds no allocation figures the tool prints none, and memdash counts
    what is in use as allocated (nothing transient)."""
    ours, theirs = memdash_figures(read(DATA / name)), text_totals(DATA / f"{name}.text.txt")
    assert {figure: ours[figure] for figure in theirs} == theirs
    for figure in set(FIGURES) - theirs.keys():
        assert ours[figure] == ours[figure.replace("alloc", "inuse")]


GO_NAMES = {"objects": "inuse_objects", "space": "inuse_space"}  # growthz's sample types


@pytest.mark.parametrize(
    "name",
    [
        "heapdemo_preload.0001.heap",
        "heapdemo_linked.0005.heap",
        "heapsample_v2.heap",  # MallocExtension::GetHeapSample, heap_v2/4096: sampled
        "heapsample_growthz.heap",  # MallocExtension::GetHeapGrowthStacks
    ],
)
def test_gperftools_profiles_read_with_go_pprofs_totals(name):
    """Go's pprof (google-pprof's successor) unsamples and truncates each stack as memdash
    does; where the allocation pair equals the in-use one it prints only the in-use types."""
    doc = read(DATA / "gperftools" / name)
    top = go_top(DATA / "gperftools" / f"{name}.top.txt")
    theirs = {
        GO_NAMES.get(sample_type, sample_type): total for sample_type, (total, _f) in top.items()
    }
    ours = memdash_figures(doc)
    assert {figure: ours[figure] for figure in theirs} == theirs
    for figure in set(FIGURES) - theirs.keys():
        assert ours[figure] == ours[figure.replace("alloc", "inuse")]


def test_sampled_gperftools_profile_within_google_pprofs_truncation():
    """google-pprof adds each stack's unsampled figures unrounded and truncates the sum: its
    Total is higher than the sum of the truncated stacks by less than one per stack."""
    name = "gperftools/heapsample_v2.heap"
    stacks = len(re.findall(r" @ 0x", (DATA / name).read_text()))
    ours, theirs = memdash_figures(read(DATA / name)), text_totals(DATA / f"{name}.text.txt")
    for figure in FIGURES:
        assert 0 <= theirs[figure] - ours[figure] < stacks, figure


def test_sampled_jemalloc_profile_within_jeprofs_truncation():
    """lg_prof_sample:12: each stack's counts are unsampled (pprof's scaleHeapSample, as jeprof
    does) and truncated per stack, as pprof does; jeprof adds the unrounded figures and truncates
    only the sum, so its Total is higher by less than one per stack."""
    name = "jemalloc/heapdemo_sampled.f.heap"
    doc = read(DATA / name)
    stacks = len(re.findall(r"^@", (DATA / name).read_text(), re.M))
    ours, jeprof = memdash_figures(doc), text_totals(DATA / f"{name}.text.txt")
    for figure in FIGURES:
        assert 0 <= jeprof[figure] - ours[figure] < stacks, figure


def test_profile_stores_one_series_over_an_hour_is_read_not_called_a_delta():
    """One sample type (inuse_space) with an hour's duration_nanos, as a profile store exports a
    series over its window: read with pprof's own total and cum figures; the figures it does
    not hold (objects, allocations) are 0."""
    name = "store_inuse_space_1h.pb.gz"
    raw_figures = (DATA / "go" / f"{name}.raw.txt").read_text()
    assert re.search(r"^Duration: 1h0m$", raw_figures, re.M)
    assert raw_figures.split("Samples:\n")[1].startswith("inuse_space/bytes\n")
    doc = read(DATA / "go" / name)
    (total, listed) = go_top(DATA / "go" / f"{name}.top.txt")["inuse_space"]
    figures = memdash_figures(doc)
    assert figures["inuse_space"] == figures["alloc_space"] == total
    assert figures["inuse_objects"] == figures["alloc_objects"] == 0
    ours = cumulative(doc, "inuse_space")
    assert listed and {f: ours.get(f, 0) for f in listed} == listed


# ---------------------------------------------------------------- through the upload door

BUILD = "build_version=1.0&build_number=1"


def stored_totals(api_client, response) -> tuple[int, int, int, int]:
    assert response.status_code == 202, response.json()
    snapshot = response.json()["snapshot"]["id"]
    stats = api_client.get(f"/api/v1/snapshots/{snapshot}/statistics").json()
    (heap,) = [row for row in stats["summary"] if row["category"] == "All Heap Allocations"]
    return heap["persistent"], heap["persistent_bytes"], heap["total"], heap["total_bytes"]


@pytest.mark.django_db
@pytest.mark.parametrize("encoding", ["gzip as Go writes it", "gzip-encoded body"])
def test_go_runtimes_heap_profile_is_stored_with_pprofs_totals(upload, api_client, encoding):
    """runtime/pprof's WriteTo(f, 0), as a file (.pb.gz) or as its protobuf sent with
    Content-Encoding: gzip."""
    body = (DATA / "go" / "runtime_heap.pb.gz").read_bytes()
    extra = {}
    if encoding == "gzip-encoded body":
        body = gzip.compress(gzip.decompress(body))
        extra = {"HTTP_CONTENT_ENCODING": "gzip"}
    response = upload(body, query=BUILD, content_type="application/octet-stream", **extra)
    assert response.json()["format"] == "pprof"
    top = go_top(DATA / "go" / "runtime_heap.pb.gz.top.txt")
    assert stored_totals(api_client, response) == tuple(top[f][0] for f in FIGURES)


@pytest.mark.django_db
def test_gperftools_heap_profile_is_stored_with_google_pprofs_totals(upload, api_client):
    name = "gperftools/heapdemo_preload.0001.heap"
    response = upload((DATA / name).read_bytes(), query=BUILD, content_type="text/plain")
    totals = text_totals(DATA / f"{name}.text.txt")
    assert stored_totals(api_client, response) == tuple(totals[f] for f in FIGURES)


@pytest.mark.django_db
def test_go_delta_profile_is_refused_at_the_door_and_stores_nothing(upload):
    body = (DATA / "go" / "http_heap_delta.pb.gz").read_bytes()
    response = upload(body, query=BUILD, content_type="application/octet-stream")
    assert response.status_code == 400
    assert response.json()["path"] == "duration_nanos"
    assert not Snapshot.objects.exists()
