"""Every legacy heap form pprof reads, and delta profiles recognised from what they say.

The figures of the header forms are those of pprof's own dump of gobench.heap
(gobench.heap.string): its sample `1: 288 [2: 296]` at rate 524288 unsamples to 1820 objects /
524432 bytes in use and 7085 / 1048724 allocated (see test_pprof); unsampled forms keep the
counts as written. The Java heapz file is hand-written (tests/data/PROVENANCE.md) with the seven
(bytes, count) pairs of pprof's own java.heap, so its totals are those of pprof's dump of it.
"""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memdash.allocations.models import Snapshot
from memdash.core.logic.errors import InvalidUpload
from memdash.ingest.logic.pprof import proto as pprof_proto
from memdash.ingest.writes import formats
from memdash.ingest.writes.parsers import pprof
from tests.importers.test_pprof import field, hand_profile, packed, stack_frames, totals

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "pprof"
META = {
    "app_id": "com.example.server",
    "platform": "linux",
    "build_version": "1.4.0",
    "received_at": datetime(2026, 11, 20, 9, 0, tzinfo=UTC),
}


def convert(raw: bytes) -> dict:
    return pprof.to_snapshot_document(raw, None, META)


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        # sampled, R = half the number after heap/ (Go's 2·MemProfileRate convention)
        ("heap/1048576", (1820, 524432, 7085, 1048724)),
        ("heap_v2/524288", (1820, 524432, 7085, 1048724)),  # R as written
        ("heapz_v2/524288", (1820, 524432, 7085, 1048724)),  # C++ heapz v2
        ("heap_v2/1", (1, 288, 2, 296)),  # rate 1: everything was recorded
        ("heap", (1, 288, 2, 296)),  # no rate: pprof does not scale
        ("heapprofile", (1, 288, 2, 296)),  # gperftools' heapz v1: not sampled
        # growthz / fragmentationz: period 1, objects and space only (no allocation pair)
        ("growthz", (1, 288, 1, 288)),
        ("fragmentationz", (1, 288, 1, 288)),
    ],
)
def test_every_heap_header_form(kind, expected):
    raw = f"heap profile: 1: 288 [2: 296] @ {kind}\n1: 288 [2: 296] @ 0x401001\n".encode()
    assert formats.detect(raw, None).name == "pprof"
    assert totals(convert(raw)) == expected


def test_java_heapz():
    raw = (SAMPLES / "java.heapz.handwritten").read_bytes()
    assert formats.detect(raw, None).name == "pprof"
    doc = convert(raw)
    # java.heap.string, pprof's dump of its java.heap, in-use objects and bytes per sample:
    # 74/527819, 8941/4720968, 596/524728, 936/524568, 993/524552, 1192/524508,
    # 54615/2621560 → 67347 objects, 9968703 bytes; Java's heapz has no allocation figures.
    assert totals(doc) == (67347, 9968703, 67347, 9968703)
    categories = {r["category"]: r["persistent_bytes"] for r in doc["allocations"]}
    # the `bytes` labels of the dump: 7048 (one block of 7048), 528 (9 blocks of 4752 bytes)
    assert categories["Malloc 6.88 KiB"] == 527819
    assert categories["Malloc 48 Bytes"] == 2621560  # `240 5`: label 48
    symbols = {f.get("symbol"): f for f in doc["frames"]}
    assert symbols["com.example.function003"]["file"] == "Source003.java"
    assert symbols["com.example.function003"]["line"] == 103
    assert symbols["os::malloc"]["file"] == "libjvm.so"  # a library path: its file name
    assert "GC" in symbols  # the agent's own states are functions
    # the innermost address first, as in pprof: function003 allocates, function005 is outermost
    first = next(r for r in doc["allocations"] if r["persistent_bytes"] == 527819)
    outermost_node = first["stack"]
    while doc["stacks"][outermost_node][0] is not None:
        outermost_node = doc["stacks"][outermost_node][0]
    assert doc["frames"][doc["stacks"][outermost_node][1]]["symbol"] == "com.example.function005"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("--- heapz 1 ---\nformat = cpp\n", "line 2"),
        ("--- heapz 1 ---\nresolution = kilobytes\n", "line 2"),
        ("--- heapz 1 ---\nformat = java\n10 0 @ 0x1\n", "line 3"),  # a count of 0
    ],
)
def test_java_heapz_refusals(text, line):
    with pytest.raises(InvalidUpload) as refused:
        convert(text.encode())
    assert refused.value.path == line


# ------------------------------------------------------------------ jemalloc's own heap profile


def test_jemalloc_heap_profile_figures_are_jeprofs():
    # Written here by Debian's jemalloc 5.3.0 (prof_accum, lg_prof_sample:10, so `heap_v2/1024`)
    # at the exit of tests/data/heaptrack/leaky.c (tests/data/PROVENANCE.md). jemalloc 5.3's
    # `jeprof --text --show_bytes` on it: in use "Total: 92534 B", "Total: 8 objects";
    # allocated "Total: 63 objects", "Total: 215219 B" — jeprof sums the unsampled figures
    # before truncating (…219.8); memdash truncates each stack's, as pprof does: 215218.
    raw = (SAMPLES / "jeprof.leaky.14017.0.f.heap").read_bytes()
    assert formats.detect(raw, None).name == "pprof"
    doc = convert(raw)
    assert totals(doc) == (8, 92534, 63, 215218)
    rows = {r["category"]: r for r in doc["allocations"]}
    # jeprof's rows: make_buffer in use 6437 B / 6 objects, allocated 125953 B / 12 objects
    # (the 1000-byte blocks, `4: 4032 [7: 7056]`, and the 100000-byte one, `0: 0 [1: 114688]`);
    # churn allocated 3168 B / 49 objects (`0: 0 [3: 192]`, 64-byte blocks, all freed).
    kept, big = rows["Malloc 1008 Bytes"], rows["Malloc 112.00 KiB"]
    assert (kept["persistent"], kept["persistent_bytes"]) == (6, 6437)
    assert (kept["persistent"] + kept["transient"], big["transient"]) == (11, 1)
    assert kept["persistent_bytes"] + kept["transient_bytes"] + big["transient_bytes"] == 125953
    churn = rows["Malloc 64 Bytes"]
    assert (churn["persistent"], churn["transient"], churn["transient_bytes"]) == (0, 49, 3168)
    # The stack of the kept blocks from MAPPED_LIBRARIES (`leaky` r-xp at 0x56080a9ed000, file
    # offset 0x1000): below jemalloc's own frames, make_buffer → keep → main, callers' return
    # addresses less 1 as jeprof takes them (`nm`/`addr2line` of that build: make_buffer
    # leaky.c:6 at 0x118d, keep leaky.c:11 at 0x1210, main leaky.c:16 at 0x124d).
    frames = stack_frames(doc, kept["stack"])
    in_leaky = [f["address"] - 0x56080A9EC000 for f in frames if f["image"] == 0]
    assert doc["images"][0] == {"name": "leaky", "load_address": "0x56080a9ec000"}
    assert in_leaky == [0x1090, 0x124D, 0x1210, 0x118D]  # _start, main, keep, make_buffer
    assert doc["images"][frames[-1]["image"]]["name"] == "libjemalloc.so.2"


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ("heap_v2/1024\n  t*: 1: 8 [0: 0]\n@ 0x1\n  t*: -1: 8 [0: 0]\n", "line 4", "negative"),
        ("heap_v2/1024\n  t*: 1: 8 [0: 0]\n@ 0x1 0x2\n", "line 3", "ends before"),
        ("heap_v2/1024\n@ 0x1\n@ 0x2\n  t*: 1: 8 [0: 0]\n", "line 2", "without its"),
        ("heap_v2/1024\n  t*: 1: 8 [0: 0]\n@ 0x1\n  t*: 0: 8 [0: 0]\n", "line 4", "was 0"),
        ("heap_v2/1024\n  t*: 1: 8 [0: 0]\nnonsense\n", "line 3", "expected a stack"),
    ],
)
def test_jemalloc_refusals_name_the_form_and_line(text, line, says):
    with pytest.raises(InvalidUpload) as refused:
        convert(text.encode())
    assert refused.value.path == line
    assert "jemalloc heap profile" in str(refused.value) and says in str(refused.value)


def test_thread_lines_and_unsampled_rate():
    # Thread lines (with a thread's name) are skipped, as jeprof skips them; `heap_v2/1`
    # (lg_prof_sample:0) recorded every allocation: nothing is scaled. Without prof_accum the
    # accumulated pairs are [0: 0]: no allocation figures.
    raw = b"heap_v2/1\n  t*: 2: 96 [0: 0]\n  t0: 2: 96 [0: 0] worker 1\n@ 0x10 0x21\n"
    raw += b"  t*: 2: 96 [0: 0]\n  t0: 2: 96 [0: 0]\n"
    doc = convert(raw)
    assert totals(doc) == (2, 96, 2, 96)
    assert [f["address"] for f in stack_frames(doc, doc["allocations"][0]["stack"])] == [
        0x20,
        0x10,
    ]


# ------------------------------------------------------------------ negative values


@pytest.mark.parametrize("sample", ["-1: 288 [2: 296] @ 0x401001", "1: -288 [2: 296] @ 0x401001"])
def test_negative_values_in_legacy_text_are_refused(sample):
    # pprof's heapSampleRE reads a sign; no heap profile writes one. Legacy text has no way to say
    # it is a difference (Go serves deltas only as profile.proto: `?seconds=` with `debug=1` is
    # refused by net/http/pprof), so a negative value is refused at its line, naming the form.
    with pytest.raises(InvalidUpload) as refused:
        convert(f"heap profile: 1: 288 [2: 296] @ heap/1048576\n{sample}\n".encode())
    assert refused.value.path == "line 2"
    assert "pprof legacy heap profile" in str(refused.value)
    assert "negative inuse count or bytes" in str(refused.value)


# ------------------------------------------------------------------ delta profiles


def test_go_delta_profile_is_refused_for_what_it_says():
    raw = (SAMPLES / "go_heap_delta.pb.gz").read_bytes()
    profile = pprof_proto.decode_profile(gzip.decompress(raw))
    # Written by net/http/pprof for /debug/pprof/heap?seconds=N: heap sample types, and the
    # span it covers (the runtime's own heap profile has none); no value is negative.
    assert profile.duration_nanos == 420000224714
    assert all(v >= 0 for sample in profile.samples for v in sample.values)
    with pytest.raises(InvalidUpload) as refused:
        convert(raw)
    assert refused.value.path == "duration_nanos"
    assert "delta heap profile" in str(refused.value) and "420 s" in str(refused.value)


def test_diff_base_profile_is_refused_at_its_label():
    # A sample labelled pprof::base = "true" (strings 14 and 15, after the 14 of
    # hand_profile's table), as `pprof -proto -diff_base` writes the negated base; its values
    # happen to be ≥ 0.
    label = field(3, field(1, 14) + field(2, 15))
    sample = packed(1, [1]) + packed(2, [1, 8, 1, 8]) + label
    raw = hand_profile([field(2, sample)]) + field(6, b"pprof::base") + field(6, b"true")
    with pytest.raises(InvalidUpload) as refused:
        convert(raw)
    assert refused.value.path == "sample[0].label[0]"


@pytest.mark.django_db
def test_delta_upload_is_a_400_with_its_path(upload):
    body = (SAMPLES / "go_heap_delta.pb.gz").read_bytes()
    response = upload(body, query="build_version=1.0", content_type="application/octet-stream")
    assert response.status_code == 400
    assert response.json()["path"] == "duration_nanos"
    assert not Snapshot.objects.exists()
