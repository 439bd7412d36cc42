"""Pure pieces: category names, frame labels, tree totals (byte units: tests/core/test_units.py)."""

from __future__ import annotations

from memdash.allocations.logic.analysis import (
    category_kind,
    frame_label,
    inclusive_totals,
    replay_events,
    vm_category,
)


def test_category_names():
    assert vm_category(51) == "VM: CoreAnimation"
    assert vm_category(None) == "VM: Anonymous VM"
    assert category_kind("VM: IOKit") == "vm" and category_kind("Malloc 16 Bytes") == "heap"


def test_frame_label_never_a_bare_address_when_the_image_is_known():
    assert frame_label("main", "Chat", 16, None) == "main"
    assert frame_label("", "Chat", 0x12F40, None) == "Chat + 0x12f40"


def test_inclusive_totals():
    # a → b → c, and a → d. Self: c 1 block of 10, d 2 of 5; inclusive a = 3 blocks, 20 bytes.
    parents = {"a": None, "b": "a", "c": "b", "d": "a"}
    totals = inclusive_totals(
        ["a", "b", "c", "d"], parents, {"c": [1, 10, 0, 0], "d": [2, 10, 1, 4]}
    )
    assert totals["a"] == [3, 20, 1, 4]
    assert totals["b"] == [1, 10, 0, 0]


def test_replay_generation_boundaries():
    events = [
        {"t_ms": 99, "fn": "malloc", "address": 1, "size": 8},
        {"t_ms": 100, "fn": "malloc", "address": 2, "size": 8},
    ]
    rows = replay_events(events, [100]).rows
    # created at 99 ms: before the first mark; at exactly 100 ms: in generation 0.
    assert rows[("Malloc 8 Bytes", None, None, None)] == [1, 8, 0, 0]
    assert rows[("Malloc 8 Bytes", None, None, 0)] == [1, 8, 0, 0]
