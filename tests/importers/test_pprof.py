"""pprof heap profiles converted to memdash snapshot documents (pure, no DB).

The legacy text sample is checked against pprof's own dump of it (gobench.heap.string, quoted
where used; provenance in tests/data/PROVENANCE.md); the protobuf decoder against a small profile
encoded by hand below, field by field, and against the Go runtime's go_heap_delta.pb.gz.
"""

from __future__ import annotations

import gzip
import io
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memdash.core.logic.errors import InvalidUpload, TooLarge
from memdash.core.logic.reading import gunzip_limited
from memdash.ingest.logic.pprof import proto as pprof_proto
from memdash.ingest.logic.pprof.legacy import scale_heap_sample
from memdash.ingest.writes.parsers import pprof

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "pprof"
META = {
    "app_id": "com.example.server",
    "platform": "linux",
    "build_version": "1.4.0",
    "build_number": "88",
    "received_at": datetime(2026, 11, 20, 9, 0, tzinfo=UTC),
}


def convert(raw: bytes, **meta):
    return pprof.to_snapshot_document(raw, None, {**META, **meta})


def totals(doc):
    rows = doc["allocations"]
    return (
        sum(r["persistent"] for r in rows),
        sum(r["persistent_bytes"] for r in rows),
        sum(r["persistent"] + r["transient"] for r in rows),
        sum(r["persistent_bytes"] + r["transient_bytes"] for r in rows),
    )


def stack_frames(doc, node):
    """The frames of a stack node, outermost first."""
    frames = []
    while node is not None:
        parent, frame_index = doc["stacks"][node]
        frames.append(doc["frames"][frame_index])
        node = parent
    return list(reversed(frames))


# ------------------------------------------------------------------ categories and scaling


def test_scale_heap_sample_matches_pprof():
    # gobench.heap `1: 288 [2: 296] @` with rate 524288, as gobench.heap.string prints it:
    # in-use 1 × 1/(1 - e^(-288/524288)) → 1820 objects, 524432 bytes;
    # allocated 2 (avg 148) → 7085 objects, 1048724 bytes.
    assert scale_heap_sample(1, 288, 524288) == (1820, 524432)
    assert scale_heap_sample(2, 296, 524288) == (7085, 1048724)
    assert scale_heap_sample(0, 0, 524288) == (0, 0)
    assert scale_heap_sample(5, 80, 1) == (5, 80)  # rate 1: everything was recorded


# ------------------------------------------------------------------ legacy text


def test_gobench_legacy_totals_equal_pprofs_own_figures():
    raw = (SAMPLES / "gobench.heap").read_bytes()
    assert pprof.detect(raw, None)
    doc = convert(raw)
    # gobench.heap.string: inuse_objects 11445, inuse_space 7721316,
    # alloc_objects 83134, alloc_space 350314738 — 15 samples.
    assert totals(doc) == (11445, 7721316, 83134, 350314738)
    assert len(doc["allocations"]) == 15
    # Locations 1..100 in the dump: one frame per distinct address.
    assert len(doc["frames"]) == 100
    assert doc["images"] == [{"name": "(unknown image)", "load_address": "0x0"}]


def test_gobench_samples_keep_their_block_size_and_stack():
    doc = convert((SAMPLES / "gobench.heap").read_bytes())
    categories = sorted({r["category"] for r in doc["allocations"]})
    # bytes labels of the dump: 524288, 262144, 10240, 4096, 2048, 1280, 384, 288, 96, 1024, 16
    assert categories == sorted(
        [
            "Malloc 512.00 KiB",
            "Malloc 256.00 KiB",
            "Malloc 10.00 KiB",
            "Malloc 4.00 KiB",
            "Malloc 2.00 KiB",
            "Malloc 1.25 KiB",
            "Malloc 384 Bytes",
            "Malloc 288 Bytes",
            "Malloc 96 Bytes",
            "Malloc 1.00 KiB",
            "Malloc 16 Bytes",
        ]
    )
    # The sample with no stack: `1: 288 [2: 296] @` → 1820 / 524432 in use, 7085 / 1048724 allocated
    (no_stack,) = [r for r in doc["allocations"] if r["stack"] is None]
    assert no_stack == {
        "category": "Malloc 288 Bytes",
        "stack": None,
        "persistent": 1820,
        "persistent_bytes": 524432,
        "transient": 7085 - 1820,
        "transient_bytes": 1048724 - 524432,
    }
    # First sample: 10 addresses, leaf 0x420cef listed first; pprof subtracts 1 from each.
    first = doc["allocations"][0]
    frames = stack_frames(doc, first["stack"])
    assert [f["address"] for f in frames] == [
        0x41931F,
        0x462768,
        0x629854,
        0x6295AB,
        0x74920E,
        0x41DB47,
        0x41DC0C,
        0x4221D9,
        0x422150,
        0x420CEE,
    ]
    # 1: 524288 [3: 1572864] → in use 1 → 829411 B; allocated 3 → 4 objects, 2488234 B
    assert (first["persistent"], first["persistent_bytes"]) == (1, 829411)
    assert (first["transient"], first["transient_bytes"]) == (4 - 1, 2488234 - 829411)


def test_gzipped_legacy_text_is_read_the_same():
    raw = (SAMPLES / "gobench.heap").read_bytes()
    assert convert(gzip.compress(raw))["allocations"] == convert(raw)["allocations"]


HEAPPROFILE = b"""heap profile:    3:   3072 [     5:     5120] @ heapprofile
     2:     2048 [     3:     3072] @ 0x401010 0x400f10
     1:     1024 [     2:     2048] @ 0x7f0000001234 0x401010 0x400f10
#\t0x40100f\tmain.alloc+0x1f\t/src/main.go:12

MAPPED_LIBRARIES:
00400000-00500000 r-xp 00000000 08:01 1234 /opt/app/server
7f0000000000-7f0000100000 r-xp 00000000 08:01 5678 /usr/lib/libc.so.6
7f0000100000-7f0000200000 rw-p 00000000 08:01 5678 /usr/lib/libc.so.6
"""


def test_unsampled_heapprofile_with_memory_map_and_symbols():
    doc = convert(HEAPPROFILE)
    # `heapprofile` is not sampled: counts are taken as they are.
    # in use 2+1 = 3 objects, 2048+1024 = 3072 B; allocated 3+2 = 5, 3072+2048 = 5120 B
    assert totals(doc) == (3, 3072, 5, 5120)
    assert [r["category"] for r in doc["allocations"]] == ["Malloc 1.00 KiB", "Malloc 1.00 KiB"]
    assert doc["images"] == [
        {"name": "server", "load_address": "0x400000"},
        {"name": "libc.so.6", "load_address": "0x7f0000000000", "system": True},
    ]
    frames = stack_frames(doc, doc["allocations"][1]["stack"])
    assert frames == [
        {"image": 0, "address": 0x400F0F},
        {
            "image": 0,
            "address": 0x40100F,
            "symbol": "main.alloc",
            "file": "/src/main.go",
            "line": 12,
        },
        {"image": 1, "address": 0x7F0000001233},
    ]


@pytest.mark.parametrize(
    ("text", "path"),
    [
        (b"heap profile: 1: 8 [1: 8] @ heap/1048576\n1: 8 [1: 8] @ 0x1\nnot a sample\n", "line 3"),
        (b"heap profile: 1: 8 [1: 8] @ heap/1048576\n0: 8 [1: 8] @ 0x1\n", "line 2"),
        (b"heap profile: 1: 8 [1: 8] @ heapz_v9\n", "line 1"),
        (b"goroutine profile: total 3\n", "content"),
        (b"\x1f\x8b\x08\x00garbage", "content"),
    ],
)
def test_malformed_text_profiles_are_refused_with_a_path(text, path):
    with pytest.raises(InvalidUpload) as refused:
        convert(text)
    assert refused.value.path == path


def test_decompression_is_bounded():
    bomb = gzip.compress(b"\0" * 100_000)
    with pytest.raises(TooLarge):
        gunzip_limited(io.BytesIO(bomb), 10_000)
    assert len(gunzip_limited(io.BytesIO(bomb), 100_000)) == 100_000


# ------------------------------------------------------------------ profile.proto


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, value: int | bytes) -> bytes:
    if isinstance(value, bytes):
        return varint(number << 3 | 2) + varint(len(value)) + value
    return varint(number << 3) + varint(value)


def packed(number: int, values: list[int]) -> bytes:
    return field(number, b"".join(varint(v) for v in values))


STRINGS = [
    "",  # 0
    "alloc_objects",  # 1
    "count",  # 2
    "alloc_space",  # 3
    "bytes",  # 4
    "inuse_objects",  # 5
    "inuse_space",  # 6
    "main.main",  # 7
    "main.leak",  # 8
    "main.inlined",  # 9
    "/src/main.go",  # 10
    "/app/server",  # 11
    "abc123",  # 12
    "space",  # 13
]


def hand_profile(
    samples: list[bytes] | None = None, sample_types=((1, 2), (3, 4), (5, 2), (6, 4))
) -> bytes:
    """A heap profile like Go writes: two locations, the second with an inlined call."""
    parts = [field(1, field(1, t) + field(2, u)) for t, u in sample_types]
    bytes_label = field(3, field(1, 4) + field(3, 48))
    parts += samples or [
        # leaf first: main.leak (loc 1) called from loc 2; values alloc 10/480, in use 4/192
        field(2, packed(1, [1, 2]) + packed(2, [10, 480, 4, 192]) + bytes_label),
        # unpacked repeated fields; block size 1024: alloc 3/3072, in use 1/1024
        field(
            2,
            field(1, 2)
            + b"".join(field(2, v) for v in (3, 3072, 1, 1024))
            + field(3, field(1, 4) + field(3, 1024)),
        ),
        # no stack, in use above allocated (a delta profile): in use 2/64, allocated 0
        field(2, packed(2, [0, 0, 2, 64]) + field(3, field(1, 4) + field(3, 32))),
    ]
    parts.append(
        field(
            3, field(1, 1) + field(2, 0x400000) + field(3, 0x800000) + field(5, 11) + field(6, 12)
        )
    )
    parts.append(
        field(
            4, field(1, 1) + field(2, 1) + field(3, 0x401000) + field(4, field(1, 2) + field(2, 30))
        )
    )
    # location 2 inlines main.inlined into main.main: lines innermost first
    parts.append(
        field(
            4,
            field(1, 2)
            + field(2, 1)
            + field(3, 0x402000)
            + field(4, field(1, 3) + field(2, 41))
            + field(4, field(1, 1) + field(2, 7)),
        )
    )
    for function_id, name in ((1, 7), (2, 8), (3, 9)):
        parts.append(field(5, field(1, function_id) + field(2, name) + field(4, 10)))
    parts += [field(6, s.encode()) for s in STRINGS]
    parts.append(field(9, 1_700_000_000 * 10**9))
    parts.append(field(12, 524288))
    return b"".join(parts)


def test_hand_encoded_profile():
    raw = gzip.compress(hand_profile())
    assert pprof.detect(raw, None)
    doc = convert(raw)
    rows = doc["allocations"]
    assert rows == [
        # 10 - 4 = 6 objects, 480 - 192 = 288 bytes freed
        {
            "category": "Malloc 48 Bytes",
            "stack": 2,
            "persistent": 4,
            "persistent_bytes": 192,
            "transient": 6,
            "transient_bytes": 288,
        },
        {
            "category": "Malloc 1.00 KiB",
            "stack": 1,
            "persistent": 1,
            "persistent_bytes": 1024,
            "transient": 2,
            "transient_bytes": 2048,
        },
        # allocated 0 < in use 2: nothing transient, never negative
        {
            "category": "Malloc 32 Bytes",
            "stack": None,
            "persistent": 2,
            "persistent_bytes": 64,
            "transient": 0,
            "transient_bytes": 0,
        },
    ]
    image = {"name": "server", "load_address": "0x400000", "uuid": "abc123"}
    assert doc["images"] == [image]
    assert stack_frames(doc, 2) == [
        {"image": 0, "address": 0x402000, "symbol": "main.main", "file": "/src/main.go", "line": 7},
        {
            "image": 0,
            "address": 0x402000,
            "symbol": "main.inlined",
            "file": "/src/main.go",
            "line": 41,
        },
        {
            "image": 0,
            "address": 0x401000,
            "symbol": "main.leak",
            "file": "/src/main.go",
            "line": 30,
        },
    ]
    assert doc["stacks"][2][0] == 1  # the second sample's stack is the first one's caller node
    assert doc["captured_at"] == "2023-11-14T22:13:20+00:00"  # time_nanos
    # Already gunzipped (a gzip-encoded upload) gives the same document.
    assert convert(hand_profile()) == doc


def test_go_runtime_delta_profile_decodes():
    # A real Go profile decodes field by field; converting it is refused, for it is a delta
    # (test_pprof_forms).
    profile = pprof_proto.decode_profile(
        gzip.decompress((SAMPLES / "go_heap_delta.pb.gz").read_bytes())
    )
    assert len(profile.samples) == 38
    # The first sample: values [65536, 524292, 0, 0], bytes label 8.
    assert profile.samples[0].values == [65536, 524292, 0, 0]
    names = [profile.strings[t] for t, _unit in profile.sample_types]
    assert names == ["alloc_objects", "alloc_space", "inuse_objects", "inuse_space"]


@pytest.mark.parametrize(
    ("samples", "sample_types", "path"),
    [
        ([field(2, packed(1, [9]) + packed(2, [1, 8, 1, 8]))], None, "sample[0].location_id"),
        ([field(2, packed(2, [1, 8, 1]))], None, "sample[0].value"),
        ([field(2, packed(2, [1, 8, -1, 8]))], None, "sample[0].value"),
        (None, ((2, 2), (13, 4)), "sample_type"),  # types count/bytes: not a heap profile
    ],
)
def test_malformed_protobuf_is_refused_with_a_path(samples, sample_types, path):
    kwargs = {"sample_types": sample_types} if sample_types else {}
    with pytest.raises(InvalidUpload) as refused:
        convert(hand_profile(samples, **kwargs))
    assert refused.value.path == path


def test_truncated_protobuf_is_refused():
    with pytest.raises(InvalidUpload) as refused:
        convert(hand_profile()[:-5])
    assert refused.value.path
