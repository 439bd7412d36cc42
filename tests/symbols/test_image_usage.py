"""`symbolicate.image_usage` over plain data: per image the unnamed frames on the snapshot's
stacks and the bytes (persistent + transient) of the rows whose stack passes through one, and
the bytes on stacks with any unnamed frame. Figures worked out by hand from the documents."""

from memdash.allocations.logic.document.parse import parse_snapshot
from memdash.allocations.logic.symbolicate import image_usage
from tests.samples import spec_example


def usage_of(doc):
    usage, total = image_usage(parse_snapshot(doc))
    return {key: (u.frames, u.bytes) for key, u in usage.items()}, total


def test_bytes_through_each_unnamed_image():
    doc = spec_example(
        images=[
            {"name": "Chat", "uuid": "6A1F", "load_address": "0x100000000"},
            {"name": "libsystem", "uuid": "77B0", "load_address": "0x200000000", "system": True},
        ],
        frames=[
            "main",  # 0: named
            {"image": 0, "address": "0x100001000"},  # 1: Chat + 0x1000
            {"image": 1, "address": "0x200000040"},  # 2: libsystem + 0x40
            {"image": 0, "address": "0x100002000"},  # 3: Chat + 0x2000
            {"image": 0, "address": "0x100003000"},  # 4: Chat + 0x3000, on no stack
        ],
        # n0 main; n1 main > Chat+0x1000; n2 … > libsystem+0x40; n3 main > Chat+0x2000
        stacks=[[None, 0], [0, 1], [1, 2], [0, 3]],
        allocations=[
            {"category": "A", "stack": 2, "persistent": 1, "persistent_bytes": 100,
             "transient": 1, "transient_bytes": 10},
            {"category": "B", "stack": 3, "persistent": 1, "persistent_bytes": 50},
            {"category": "C", "stack": 0, "persistent": 1, "persistent_bytes": 7},
            {"category": "D", "persistent": 1, "persistent_bytes": 1000},
        ],
    )  # fmt: skip
    usage, total = usage_of(doc)
    # Chat: frames 1 and 3 on stacks (4 is on none); n2 (110) and n3 (50) pass through it.
    # libsystem: frame 2; n2 only. Any unnamed: n2 and n3; n0 and the stackless row do not.
    assert usage == {("Chat", "6A1F"): (2, 160), ("libsystem", "77B0"): (1, 110)}
    assert total == 160


def test_more_images_than_a_word_of_bits():
    count = 70  # images 0..69, each with one unnamed frame in a chain under main
    doc = spec_example(
        images=[
            {"name": f"lib{i}", "uuid": f"{i:04X}", "load_address": "0x1000"} for i in range(count)
        ],
        frames=["main"] + [{"image": i, "address": "0x1010"} for i in range(count)],
        stacks=[[None, 0]] + [[i, i + 1] for i in range(count)],  # node i+1: frame of lib i
        allocations=[
            {"category": "Leaf", "stack": count, "persistent": 1, "persistent_bytes": 64},
            {"category": "Mid", "stack": 66, "persistent": 1, "persistent_bytes": 8},
        ],
    )
    usage, total = usage_of(doc)
    # Node 66's path holds lib0..lib65; the leaf's (node 70) every library.
    assert usage[("lib0", "0000")] == (1, 72)
    assert usage[("lib65", "0041")] == (1, 72)
    assert usage[("lib66", "0042")] == (1, 64)
    assert usage[("lib69", "0045")] == (1, 64)
    assert total == 72


def test_images_of_named_frames_only_are_listed_with_nothing_unnamed():
    doc = spec_example(
        images=[{"name": "Chat", "uuid": "6A1F", "load_address": "0x100000000"}],
        # Both named by the device, one of them in Chat (its image listed all the same);
        # the other unnamed frame is on no stack.
        frames=[
            "main",
            {"symbol": "-[Chat send]", "image": 0, "address": "0x100001000"},
            {"image": 0, "address": "0x100002000"},
        ],
        stacks=[[None, 0], [0, 1]],
        allocations=[{"category": "A", "stack": 1, "persistent": 1, "persistent_bytes": 100}],
    )
    assert usage_of(doc) == ({("Chat", "6A1F"): (0, 0)}, 0)
