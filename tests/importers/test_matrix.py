"""Matrix (WeChat) memory-stat reports converted to memdash snapshot documents (pure, no DB).

matrix_foom_report.json follows memory_report_generator.cpp (protocol_ver 1): 17 categories sorted
by size, stacks only for the first 15 (each stack's frames innermost first, ending in
UIApplicationMain → main → start), the heaviest stacks only, so several items are not covered
entirely by their stacks; the last two items have no stacks at all.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memdash.core.logic.errors import InvalidUpload
from memdash.ingest.writes.parsers import matrix

REPORT = json.loads((Path(__file__).parent / "matrix_foom_report.json").read_text())
APP_UUID = "6A1F0C2D-8B3E-3F41-9C5A-2E7D4B8F1A03"
DYLD_UUID = "8C0E2A4F-6B1D-3F3E-A5C7-9D1B3F5A7C9E"
MALLOC_UUID = "0A3C7B52-1E4D-3B6A-8F29-5C1D7E9A4B60"
META = {
    "app_id": "com.example.chat",
    "platform": "ios",
    "app_name": "Chat",
    "build_version": "8.0.4",
    "build_number": "104",
    "received_at": datetime(2025, 11, 20, 10, 30, tzinfo=UTC),
}


def convert(report=None, **meta):
    report = REPORT if report is None else report
    return matrix.to_snapshot_document(json.dumps(report).encode(), report, {**META, **meta})


def rows_of(doc, category):
    return [row for row in doc["allocations"] if row["category"] == category]


def full_stack(doc, node):
    """Frames of a stack node, outermost first, as (image uuid, address)."""
    frames = []
    while node is not None:
        parent, frame_index = doc["stacks"][node]
        frame = doc["frames"][frame_index]
        frames.append((doc["images"][frame["image"]]["uuid"], frame["address"]))
        node = parent
    return list(reversed(frames))


def test_detects_matrix_reports_only():
    assert matrix.detect(b"", REPORT)
    assert not matrix.detect(b"", {"format": "memdash.snapshot", "version": 1})
    assert not matrix.detect(b"", [{"className": "A"}])
    assert not matrix.detect(b"", {"head": {}, "items": {}})


def test_totals_equal_the_items_of_the_report():
    doc = convert()
    rows = doc["allocations"]
    # Σ item sizes = 62914560 + 41943040 + 15728640 + 4915200 + 2359296 + 1048576 + 524288
    #   + 393216 + 327680 + 262144 + 196608 + 131072 + 98304 + 65536 + 49152 + 16384 + 8192
    #   = 130981888 bytes
    # Σ item counts = 15 + 2560 + 10240 + 102400 + 1536 + 4096 + 2048 + 8192 + 2560 + 64 + 6144
    #   + 4096 + 1024 + 4096 + 256 + 512 + 256 = 150095 allocations
    assert sum(r["persistent_bytes"] for r in rows) == 130981888
    assert sum(r["persistent"] for r in rows) == 150095
    # A FOOM report lists what was alive at the end: nothing transient.
    assert sum(r["transient"] + r["transient_bytes"] for r in rows) == 0
    assert doc["trigger"] == "foom"
    assert {r["category"] for r in rows} == {item["name"] for item in REPORT["items"]}


def test_part_not_covered_by_stacks_is_kept_under_no_stack():
    doc = convert()
    cache = rows_of(doc, "MMImageCacheItem")
    # item 41943040 B in 2560; stacks 31457280 B/1920 and 8388608 B/512
    # → no stack: 41943040 - 31457280 - 8388608 = 2097152 B, 2560 - 1920 - 512 = 128
    assert sorted((r["persistent_bytes"], r["persistent"]) for r in cache) == [
        (2097152, 128),
        (8388608, 512),
        (31457280, 1920),
    ]
    no_stack = [r for r in cache if r["stack"] is None]
    assert no_stack == [
        {
            "category": "MMImageCacheItem",
            "stack": None,
            "persistent": 128,
            "persistent_bytes": 2097152,
            "transient": 0,
            "transient_bytes": 0,
        }
    ]
    # Malloc 48 Bytes: 4915200 - 2457600 - 1228800 = 1228800 B; 102400 - 51200 - 25600 = 25600
    assert [
        (r["persistent_bytes"], r["persistent"])
        for r in rows_of(doc, "Malloc 48 Bytes")
        if r["stack"] is None
    ] == [(1228800, 25600)]
    # Fully covered item: no "no stack" row at all.
    assert [r["stack"] is None for r in rows_of(doc, "VM: IOSurface")] == [False]
    # Items without stacks are one "no stack" row each.
    assert rows_of(doc, "NSUUID") == [
        {
            "category": "NSUUID",
            "stack": None,
            "persistent": 256,
            "persistent_bytes": 8192,
            "transient": 0,
            "transient_bytes": 0,
        }
    ]
    # stacked rows: 1+2+1+2+1+1 (items 0-5) + 9 (items 6-14) = 17; no-stack rows: 6
    assert len(doc["allocations"]) == 23


def test_frames_are_reversed_into_outermost_first_stacks():
    doc = convert()
    (iosurface,) = rows_of(doc, "VM: IOSurface")
    stack = full_stack(doc, iosurface["stack"])
    reported = [(f["uuid"], f["offset"]) for f in REPORT["items"][0]["stacks"][0]["frames"]]
    assert stack == list(reversed(reported))
    assert stack[0] == (DYLD_UUID, 0x1A9B4)  # start, the outermost frame
    # Shared outer frames are stored once: every stack starts at the same root node.
    roots = [node for node, (parent, _frame) in enumerate(doc["stacks"]) if parent is None]
    assert len(roots) == 1


def test_images_are_uuids_loaded_at_zero_and_the_app_binary_is_named_after_the_app():
    doc = convert()
    images = {image["uuid"]: image for image in doc["images"] if not image.get("system")}
    assert images == {APP_UUID: {"name": "Chat", "uuid": APP_UUID, "load_address": "0x0"}}
    images = {image["uuid"]: image for image in doc["images"]}
    assert images[MALLOC_UUID] == {
        "name": MALLOC_UUID,
        "uuid": MALLOC_UUID,
        "load_address": "0x0",
        "system": True,
    }
    # address == offset in the image, so a frame shows as image + 0xoffset
    (row,) = [r for r in rows_of(doc, "Malloc 4.00 KiB") if r["stack"] is not None]
    assert full_stack(doc, row["stack"])[-1] == (MALLOC_UUID, 0x1B2F0)


def test_head_gives_time_device_and_session():
    doc = convert()
    assert doc["captured_at"] == "2025-11-20T10:23:01+00:00"  # report_time 1763634181000 ms
    assert doc["device"] == {"model": "iPhone12,1", "os": "15.4.1"}
    assert doc["session"] == "3f6c1a9e-2b7d-4e58-9a1c-5d8e7f0b2a64"
    assert doc["app"] == {"id": "com.example.chat", "platform": "ios", "name": "Chat"}
    assert doc["build"] == {"version": "8.0.4", "number": "104"}
    # The upload's own session field wins over the head's custom key.
    assert convert(session="from-upload")["session"] == "from-upload"


def test_seconds_timestamps_and_build_from_head_keys():
    report = copy.deepcopy(REPORT)
    report["head"].update(launch_time=1763630520, report_time=1763634181)
    report["head"].update(build_version="8.0.3", build_number="103")
    doc = convert(report, build_version="", build_number="")
    assert doc["captured_at"] == "2025-11-20T10:23:01+00:00"
    assert doc["build"] == {"version": "8.0.3", "number": "103"}


def test_alloc_fail_keeps_matrix_zero_size_and_anonymous_vm_is_renamed():
    report = {
        "head": {"protocol_ver": 1, "report_time": 1763634181000, "app_uuid": APP_UUID},
        "items": [
            {
                "tag": "iOS_MemStat",
                "name": "Alloc Fail",
                "size": 0,
                "count": 3,
                "stacks": [
                    {
                        "caller": f"{APP_UUID}@4096",
                        "size": 3 * 1048576,
                        "count": 2,
                        "frames": [{"uuid": APP_UUID, "offset": 4096}],
                    }
                ],
            },
            {"tag": "iOS_MemStat", "name": "All Anonymous VM", "size": 16384, "count": 1},
        ],
    }
    doc = convert(report)
    fail = rows_of(doc, "Alloc Fail")
    # Matrix reports 0 bytes for the category: its stack counts 2 objects, no bytes; 1 left over
    assert sorted((r["persistent"], r["persistent_bytes"]) for r in fail) == [(1, 0), (2, 0)]
    assert rows_of(doc, "VM: Anonymous VM")[0]["persistent_bytes"] == 16384


def test_no_build_anywhere_is_refused():
    with pytest.raises(InvalidUpload) as refused:
        convert(build_version="")
    assert refused.value.path == "build_version"


@pytest.mark.parametrize(
    ("break_it", "path"),
    [
        (lambda r: r.update(items={}), "items"),
        (lambda r: r.update(head=[]), "head"),
        (lambda r: r["head"].pop("app_uuid"), "head.app_uuid"),
        (lambda r: r["head"].update(report_time="yesterday"), "head.report_time"),
        (lambda r: r["items"][3].update(size=-1), "items[3].size"),
        (lambda r: r["items"][2].update(name=""), "items[2].name"),
        (lambda r: r["items"][4].update(tag="iOS_CPU"), "items[4].tag"),
        (
            lambda r: r["items"][1]["stacks"][0]["frames"][2].pop("offset"),
            "items[1].stacks[0].frames[2].offset",
        ),
        (lambda r: r["items"][1]["stacks"][1].update(frames=[]), "items[1].stacks[1].frames"),
        (
            lambda r: r["items"][1]["stacks"][0].update(caller="nowhere"),
            "items[1].stacks[0].caller",
        ),
        # stacks adding up to more than their item: 31457280 + 8388608 + 4194304 > 41943040
        (
            lambda r: r["items"][1]["stacks"].append(
                {**r["items"][1]["stacks"][1], "size": 4194304, "count": 1}
            ),
            "items[1].stacks[2]",
        ),
    ],
)
def test_malformed_reports_are_refused_with_a_path(break_it, path):
    report = copy.deepcopy(REPORT)
    break_it(report)
    with pytest.raises(InvalidUpload) as refused:
        convert(report)
    assert refused.value.path == path


def test_frames_below_matrix_caller_are_not_responsible():
    """Matrix skips its own alloc hook (in the app) when it picks the responsible caller; the
    frames between the allocation site and that caller are marked system, so that memdash's
    responsible caller — the first non-system frame from the site — is the same frame."""
    doc = convert()
    row = max(rows_of(doc, "MMImageCacheItem"), key=lambda r: r["persistent_bytes"])
    node, walk = row["stack"], []
    while node is not None:  # from the allocation site outward
        parent, frame_index = doc["stacks"][node]
        frame = doc["frames"][frame_index]
        walk.append((frame["address"], doc["images"][frame["image"]].get("system", False)))
        node = parent
    # malloc, malloc, objc, Matrix's hook (app image, 0x9d2a40): all system;
    # then the caller 0x5a31c8 (`caller` of the stack), the first non-system frame.
    assert walk[:5] == [
        (0x1B2F0, True),
        (0x19C44, True),
        (0x7E14, True),
        (0x9D2A40, True),
        (0x5A31C8, False),
    ]
    caller = REPORT["items"][1]["stacks"][0]["caller"]
    assert caller == f"{APP_UUID}@{0x5A31C8}"


def test_a_frame_in_no_known_image_is_kept_in_an_unknown_image():
    report = copy.deepcopy(REPORT)
    report["items"][0]["stacks"][0]["frames"][0]["uuid"] = ""
    doc = convert(report)
    unknown = [i for i, image in enumerate(doc["images"]) if image["name"] == "(unknown image)"]
    assert len(unknown) == 1
    assert doc["images"][unknown[0]] == {
        "name": "(unknown image)",
        "load_address": "0x0",
        "system": True,
    }
    assert sum(r["persistent_bytes"] for r in doc["allocations"]) == 130981888
