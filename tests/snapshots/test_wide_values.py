"""Values the snapshot format allows at the edges of their ranges are stored as sent, on SQLite
and PostgreSQL alike (the expected values are those in the documents)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memdash.allocations.models import AllocationRow, Frame, Snapshot, StackNode
from tests.samples import spec_example

pytestmark = pytest.mark.django_db

TAGGED = 0xB400007A1C2F3010  # an arm64 Android heap pointer, tag 0xb4 in the top byte


def stored(response) -> Snapshot:
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "done", body
    return Snapshot.objects.get(pk=body["snapshot"]["id"])


@pytest.mark.slow  # 40,001 threads and generations
def test_thread_and_generation_indexes_past_a_small_integer(upload):
    threads = [f"t{i}" for i in range(40_001)]
    generations = [{"at_ms": i} for i in range(40_001)]
    row = {"category": "X", "thread": 40_000, "generation": 40_000, "persistent": 1}
    snapshot = stored(upload(spec_example(threads=threads, generations=generations,
                                          allocations=[row])))  # fmt: skip
    assert list(AllocationRow.objects.filter(snapshot=snapshot).values_list(
        "thread", "generation")) == [(40_000, 40_000)]  # fmt: skip


@pytest.mark.slow  # a stack 40,001 frames deep
def test_stack_deeper_than_a_small_integer(upload):
    depth = 40_001
    doc = spec_example(
        frames=["f"], stacks=[[None, 0]] + [[i, 0] for i in range(depth - 1)],
        allocations=[{"category": "X", "stack": depth - 1, "persistent": 1}],
    )  # fmt: skip
    stored(upload(doc))
    assert StackNode.objects.order_by("-depth").values_list("depth", flat=True)[0] == depth - 1


def test_addresses_in_the_upper_half_of_64_bits(upload):
    """A frame in no image keeps its absolute address; one in an image with a load address keeps
    its offset. Both read back unsigned."""
    doc = spec_example(
        images=[{"name": "libc.so", "load_address": "0xb400000000000000"}],
        frames=[{"address": f"0x{TAGGED:x}"}, {"image": 0, "address": TAGGED}],
        stacks=[[None, 0], [0, 1]],
        allocations=[{"category": "X", "stack": 1, "persistent": 1}],
    )
    stored(upload(doc))
    labels = sorted(frame.label for frame in Frame.objects.all())
    assert labels == ["0xb400007a1c2f3010", "libc.so + 0x7a1c2f3010"]


def test_address_without_a_load_address_is_not_shown_as_an_offset(upload):
    doc = spec_example(
        images=[{"name": "Chat"}], frames=[{"image": 0, "address": "0x100004a2c"}],
        stacks=[[None, 0]], allocations=[{"category": "X", "stack": 0, "persistent": 1}],
    )  # fmt: skip
    stored(upload(doc))
    assert Frame.objects.get().label == "0x100004a2c in Chat"


def test_long_symbols_files_and_image_names(upload):
    symbol = "std::__1::basic_string<char, std::__1::char_traits<char>>::" * 10  # 590 characters
    path = "/Users/ci/builds/" + "nested/" * 60 + "Chat.swift"
    image = "lib" + "x" * 300 + ".dylib"
    doc = spec_example(
        images=[{"name": image, "system": None}],  # null reads as absent, like every field
        frames=[{"symbol": symbol, "file": path, "image": 0}],
        stacks=[[None, 0]],
        allocations=[{"category": "X", "stack": 0, "persistent": 1}],
    )
    stored(upload(doc))
    frame = Frame.objects.get()
    assert (frame.symbol, frame.file, frame.image, frame.is_system) == (symbol, path, image, False)


def test_session_ids_as_long_as_the_sessions_format_allows(upload):
    snapshot = stored(upload(spec_example(session="s" * 200)))
    assert snapshot.session_id == "s" * 200


@pytest.mark.parametrize(
    ("captured_at", "instant"),
    [
        ("2026-11-20T10:12:03z", datetime(2026, 11, 20, 10, 12, 3, tzinfo=UTC)),
        ("2026-11-20t10:12:03.5+01:00", datetime(2026, 11, 20, 9, 12, 3, 500_000, tzinfo=UTC)),
        # a leap second, read as the last microsecond of its minute
        ("2016-12-31T23:59:60Z", datetime(2016, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)),
    ],
)
def test_rfc_3339_forms(upload, captured_at, instant):
    assert stored(upload(spec_example(captured_at=captured_at))).captured_at == instant
