"""profile.proto read in bulk (pprof_columns, pprof_convert, pprof_stacks) and stored without a
document in between.

The bulk decoder is checked against the field-by-field reader of pprof_proto, an independent
implementation, on the Go runtime's go_heap_delta.pb.gz and on the hand-encoded profile of
test_pprof (packed and unpacked fields); the snapshot the upload stores is checked against the
same profile's document, whose figures test_pprof works out by hand.
"""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from google.protobuf.internal import api_implementation

from memdash.allocations.logic.document.parse import parse_header, parse_snapshot
from memdash.allocations.models import Snapshot
from memdash.core.logic.errors import InvalidUpload
from memdash.ingest.logic.pprof import (
    columns as pprof_columns,
)
from memdash.ingest.logic.pprof import (
    convert as pprof_convert,
)
from memdash.ingest.logic.pprof import (
    proto as pprof_proto,
)
from memdash.ingest.logic.pprof import (
    stacks as pprof_stacks,
)
from memdash.ingest.logic.pprof import (
    streams as pprof_streams,
)
from memdash.ingest.writes.parsers import pprof
from tests.importers.test_pprof import STRINGS, field, hand_profile, packed

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "pprof"
GO_PROFILE = gzip.decompress((SAMPLES / "go_heap_delta.pb.gz").read_bytes())
META = {
    "app_id": "com.example.server",
    "platform": "linux",
    "build_version": "1.4.0",
    "received_at": datetime(2026, 11, 20, 9, 0, tzinfo=UTC),
}
UNPACKED = [  # test_pprof's first sample with every repeated field written one by one
    field(2, field(1, 1) + field(1, 2) + b"".join(field(2, v) for v in (10, 480, 4, 192))),
    field(2, packed(1, []) + packed(2, [1, 8, 1, 8])),  # and an empty packed run
]


def written_otherwise(raw: bytes, *, locations_first: bool = False, long_lengths: bool = False):
    """`raw` with its fields in another order (its locations first) or with each sample's
    length as a two-byte varint (0x80 | n, 0x00: n < 128), as a protobuf reader must accept."""
    fields = []
    for number, wire, value in pprof_proto.iter_fields(raw, "profile"):
        encoded = field(number, bytes(value) if wire == pprof_proto.LENGTH else value)
        if long_lengths and number == 2:
            encoded = b"\x12" + bytes([len(value) | 0x80, 0]) + bytes(value)
        fields.append((number, encoded))
    if locations_first:
        fields.sort(key=lambda number_encoded: number_encoded[0] != 4)  # (stable)
    return b"".join(encoded for _, encoded in fields)


LOCATIONS_FIRST = written_otherwise(hand_profile(), locations_first=True)
LONG_LENGTHS = written_otherwise(hand_profile(), long_lengths=True)


def test_protobuf_parses_with_its_compiled_backend():
    # not its pure-Python fallback, which would make a large profile's import many times slower
    assert api_implementation.Type() == "upb"


@pytest.mark.parametrize(
    "raw", [GO_PROFILE, hand_profile(), hand_profile(UNPACKED), LOCATIONS_FIRST, LONG_LENGTHS]
)
def test_bulk_decoder_reads_what_the_field_by_field_reader_reads(raw):
    bulk, one_by_one = pprof_columns.decode(raw), pprof_proto.decode_profile(raw)
    samples = one_by_one.samples
    assert bulk.sample_count == len(samples)
    assert bulk.location_counts.tolist() == [len(s.location_ids) for s in samples]
    assert bulk.location_ids.tolist() == [i for s in samples for i in s.location_ids]
    assert bulk.value_counts.tolist() == [len(s.values) for s in samples]
    assert bulk.values.tolist() == [v for s in samples for v in s.values]
    labels = [(i, label) for i, s in enumerate(samples) for label in s.labels]
    assert bulk.label_sample.tolist() == [i for i, _ in labels]
    assert bulk.label_key.tolist() == [label.key for _, label in labels]
    assert bulk.label_num.tolist() == [label.num for _, label in labels]
    locations = one_by_one.locations
    assert bulk.location_id.tolist() == [loc.id for loc in locations]
    assert bulk.location_mapping.tolist() == [loc.mapping_id for loc in locations]
    assert bulk.location_address.tolist() == [loc.address for loc in locations]
    assert bulk.line_counts.tolist() == [len(loc.lines) for loc in locations]
    assert bulk.line_function.tolist() == [x.function_id for loc in locations for x in loc.lines]
    assert bulk.line_number.tolist() == [x.line for loc in locations for x in loc.lines]
    assert bulk.function_name.tolist() == [f.name for f in one_by_one.functions]
    assert bulk.strings == one_by_one.strings
    assert bulk.time_nanos == one_by_one.time_nanos
    assert bulk.duration_nanos == one_by_one.duration_nanos


@pytest.mark.parametrize(
    ("raw", "in_place"),
    [(GO_PROFILE, True), (hand_profile(), True), (LOCATIONS_FIRST, False), (LONG_LENGTHS, False)],
)
def test_messages_are_read_where_they_lie_when_written_as_go_writes_them(raw, in_place):
    """Samples, locations and functions written in one run each, in number order, are read in
    the profile's own bytes; written otherwise, from copies; the same messages either way."""
    lazy = pprof_columns._parse(raw)
    kinds = (lazy.sample, lazy.location, lazy.function)
    found = pprof_streams.streams(raw, kinds)
    for stream, messages in zip(found, kinds, strict=True):
        read = [bytes(stream.buf[a:b]) for a, b in zip(stream.starts, stream.stops, strict=True)]
        assert read == list(messages)
        assert (len(stream.buf) == len(raw)) == in_place


def test_go_profile_content_adds_up_to_its_samples():
    # The delta check aside (test_pprof_forms), the Go runtime's profile converts: its stored
    # totals are the sums over its samples as the field-by-field reader reads them
    # (alloc_objects, alloc_space, inuse_objects, inuse_space).
    content = pprof_convert.heap_content(pprof_columns.decode(GO_PROFILE))
    values = [s.values for s in pprof_proto.decode_profile(GO_PROFILE).samples]
    expected = [
        sum(v[2] for v in values),
        sum(v[3] for v in values),
        sum(max(0, v[0] - v[2]) for v in values),
        sum(max(0, v[1] - v[3]) for v in values),
    ]
    assert content.row_counts.sum(axis=0).tolist() == expected


@pytest.mark.parametrize("raw", [GO_PROFILE, hand_profile(), hand_profile(UNPACKED)])
def test_the_stored_snapshot_is_the_documents(raw):
    """What the upload stores (no document) is what the snapshot pipeline makes of the
    document `to_snapshot_document` gives (the one test_pprof checks by hand)."""
    content = pprof_convert.heap_content(pprof_columns.decode(raw))
    header = {
        "format": "memdash.snapshot",
        "version": 1,
        "app": {"id": "com.example.server", "platform": "linux"},
        "build": {"version": "1.4.0"},
        "captured_at": "2026-11-20T09:00:00+00:00",
    }
    direct = content.fill(parse_header(dict(header)))
    via_document = parse_snapshot(content.document(dict(header)))
    assert direct.images == via_document.images
    assert direct.frames == via_document.frames
    assert (direct.stack_parents, direct.stack_frames) == (
        via_document.stack_parents,
        via_document.stack_frames,
    )
    assert direct.rows == via_document.rows


def test_equal_location_lists_share_a_stack():
    lists = [[3, 1], [3, 1], [1, 3], [], [3, 1, 2], []]
    flat = np.array([i for one in lists for i in one], np.int32)
    counts = np.array([len(one) for one in lists], np.int64)
    group, first = pprof_stacks.distinct_lists(flat, np.cumsum(counts) - counts, counts)
    assert group[0] == group[1] and group[3] == group[5]
    assert len({group[0], group[2], group[3], group[4]}) == 4
    assert sorted(first.tolist()) == [0, 2, 3, 4]  # each group's first list


def test_a_hash_collision_costs_only_the_grouping(monkeypatch):
    """With weights of 0 every list hashes alike: the check against each group's first list
    finds it, every sample keeps a group of its own, and the tree is the same."""
    raw = hand_profile()
    expected = pprof_convert.heap_content(pprof_columns.decode(raw))

    monkeypatch.setattr(pprof_stacks, "hash_weights", lambda count: np.zeros(count, np.uint64))
    collided = pprof_convert.heap_content(pprof_columns.decode(raw))
    assert collided.stack_parents.tolist() == expected.stack_parents.tolist()
    assert collided.stack_frames.tolist() == expected.stack_frames.tolist()
    assert collided.row_stack.tolist() == expected.row_stack.tolist()


def convert(raw: bytes) -> dict:
    return pprof.to_snapshot_document(raw, None, META)


BAD_LOCATION_RUN = b"\x0a\x02\x01\x81"  # location_id run: 1, then a varint with no last byte
LONG_VARINT = b"\x12\x0b" + b"\xff" * 10 + b"\x01"  # value run: one varint of 11 bytes


@pytest.mark.parametrize(
    ("sample", "path", "message"),
    [
        (BAD_LOCATION_RUN, "sample[0].location_id", "truncated varint (at byte 3 of sample[0])"),
        (LONG_VARINT, "sample[0].value", "varint longer than 10 bytes (at byte 2 of sample[0])"),
        (b"\x00\x01", "sample[0]", "field number 0 (at byte 0 of sample[0])"),
        (b"\x09" + bytes(8), "sample[0].location_id", "expected a number (at byte 0 of"),
        (field(3, b"\x08"), "sample[0]", "truncated varint (at byte 3 of sample[0])"),
    ],
)
def test_broken_samples_are_refused_at_their_byte(sample, path, message):
    with pytest.raises(InvalidUpload) as refused:
        convert(hand_profile([field(2, sample)]))
    assert refused.value.path == path
    assert message in str(refused.value)


def with_strings(raw: bytes, *texts: str) -> bytes:
    return raw + b"".join(field(6, text.encode()) for text in texts)


def test_what_a_column_cannot_hold_is_refused_where_the_profile_holds_it():
    # A function named with a NUL: main.leak's name (function 2 → string 8) made string 14.
    named = len(STRINGS)
    sample = field(2, packed(1, [1]) + packed(2, [1, 8, 1, 8]))
    raw = hand_profile([sample]).replace(
        field(5, field(1, 2) + field(2, 8) + field(4, 10)),
        field(5, field(1, 2) + field(2, named) + field(4, 10)),
    )
    with pytest.raises(InvalidUpload) as refused:
        convert(with_strings(raw, "main.\x00leak"))
    assert refused.value.path == "function[1].name"
    # A build id longer than the 255 characters an image id is stored in (mapping's string 12).
    long_id = hand_profile([sample]).replace(field(6, b"abc123"), field(6, b"b" * 256))
    with pytest.raises(InvalidUpload) as refused:
        convert(long_id)
    assert refused.value.path == "mapping[0].build_id"


def test_an_address_below_its_mapping_is_refused():
    # location 1 at 0x3ff000, below the mapping loaded at 0x400000
    raw = hand_profile([field(2, packed(1, [1]) + packed(2, [1, 8, 1, 8]))]).replace(
        field(3, 0x401000), field(3, 0x3FF000)
    )
    with pytest.raises(InvalidUpload) as refused:
        convert(raw)
    assert refused.value.path == "location[0].address"


def test_totals_past_64_bits_are_refused():
    # Two samples of 2^62 in-use bytes each: their sum is 2^63, one past the largest total.
    big = 2**62
    samples = [field(2, packed(1, [1]) + packed(2, [1, big, 1, big])) for _ in range(2)]
    with pytest.raises(InvalidUpload) as refused:
        convert(hand_profile(samples))
    assert refused.value.path == "sample"
    assert "persistent_bytes of all samples add up to 9223372036854775808" in str(refused.value)


@pytest.mark.django_db
def test_a_profile_upload_is_stored_without_a_document(upload):
    # test_pprof's hand profile: in use 4 + 1 + 2 = 7 objects, 192 + 1024 + 64 = 1280 bytes;
    # transient 6 + 2 + 0 objects, 288 + 2048 + 0 bytes; three rows; stack nodes main.main →
    # main.inlined → main.leak.
    response = upload(
        gzip.compress(hand_profile()),
        query="build_version=1.0",
        content_type="application/octet-stream",
    )
    assert response.json()["status"] == "done", response.content
    snapshot = Snapshot.objects.get(source_format="pprof")
    assert (snapshot.persistent, snapshot.persistent_bytes) == (7, 1280)
    assert (snapshot.transient, snapshot.transient_bytes) == (8, 2336)
    assert (snapshot.row_count, snapshot.stack_node_count) == (3, 3)


def test_location_and_function_ids_need_not_count_from_one():
    # Ids are any unsigned 64-bit numbers (a producer may use addresses): one sample of 2
    # objects, 64 bytes in use (no `bytes` label: 64 / 2 = 32-byte blocks) at a location whose
    # id is 2^40 + 3, in function 2^63 + 7, outside every mapping.
    location_id, function_id = 2**40 + 3, 2**63 + 7
    strings = ["", "inuse_objects", "count", "inuse_space", "bytes", "main.f"]
    raw = b"".join(
        [
            field(1, field(1, 1) + field(2, 2)),
            field(1, field(1, 3) + field(2, 4)),
            field(2, packed(1, [location_id]) + packed(2, [2, 64])),
            field(4, field(1, location_id) + field(3, 0x1000) + field(4, field(1, function_id))),
            field(5, field(1, function_id) + field(2, 5)),
            *(field(6, text.encode()) for text in strings),
        ]
    )
    doc = convert(raw)
    assert doc["allocations"] == [
        {
            "category": "Malloc 32 Bytes",
            "stack": 0,
            "persistent": 2,
            "persistent_bytes": 64,
            "transient": 0,
            "transient_bytes": 0,
        }
    ]
    assert doc["images"] == [{"name": "(unknown image)", "load_address": "0x0"}]
    assert doc["frames"] == [{"image": 0, "address": 0x1000, "symbol": "main.f"}]


def one_location_profile(samples: list[list[int]], location: int, line_function: int) -> bytes:
    """Samples of 2 objects and 64 bytes in use at the given location ids, beside one location
    (id `location`, its line in function `line_function`) and one function, id 2 (main.f)."""
    strings = ["", "inuse_objects", "count", "inuse_space", "bytes", "main.f"]
    return b"".join(
        [
            field(1, field(1, 1) + field(2, 2)),
            field(1, field(1, 3) + field(2, 4)),
            *(field(2, packed(1, ids) + packed(2, [2, 64])) for ids in samples),
            field(4, field(1, location) + field(3, 0x1000) + field(4, field(1, line_function))),
            field(5, field(1, 2) + field(2, 5)),
            *(field(6, text.encode()) for text in strings),
        ]
    )


@pytest.mark.parametrize("location", [1, 2**40 + 3])  # ids numbered 1.. and ids far apart
def test_a_location_or_function_the_profile_lacks_is_refused_where_it_is_named(location):
    # The second sample's outer location, location + 4, is in no location message.
    with pytest.raises(InvalidUpload) as refused:
        convert(one_location_profile([[location], [location, location + 4]], location, 2))
    assert refused.value.path == "sample[1].location_id"
    assert f"location {location + 4} is not in the profile" in str(refused.value)
    # The location's line names function 9; the one function is 2.
    with pytest.raises(InvalidUpload) as refused:
        convert(one_location_profile([[location]], location, 9))
    assert refused.value.path == "location[0].line[0].function_id"
    assert "function 9 is not in the profile" in str(refused.value)
    # Both present: one row of 2 objects, 64 bytes (32-byte blocks) at main.f.
    doc = convert(one_location_profile([[location]], location, 2))
    assert [(r["category"], r["persistent_bytes"]) for r in doc["allocations"]] == [
        ("Malloc 32 Bytes", 64)
    ]
    assert doc["frames"] == [{"image": 0, "address": 0x1000, "symbol": "main.f"}]
