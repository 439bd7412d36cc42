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
from memdash.core.errors import InvalidUpload
from memdash.ingest import formats
from memdash.ingest.parsers import pprof, pprof_proto
from tests.importers.test_pprof import field, hand_profile, packed, totals

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
