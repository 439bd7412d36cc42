"""Matrix (WeChat) memory-stat reports (WCMemoryStatPlugin, tag `iOS_MemStat`) as memdash snapshots.

Matrix records every allocation of a run on disk and, when the next launch finds that the run
ended in a FOOM, writes one JSON report of what was still allocated at the end
(memory_report_generator.cpp):

    {"head": {"protocol_ver": 1, "phone": "iPhone12,1", "os_ver": "15.4.1",
              "launch_time": <ms>, "report_time": <ms>, "app_uuid": "<uuid>", <custom: "string">…},
     "items": [{"tag": "iOS_MemStat", "info": "", "scene": "<view>", "name": "<category>",
                "size": <bytes>, "count": <n>,
                "stacks": [{"caller": "<uuid>@<offset>", "size": <bytes>, "count": <n>,
                            "frames": [{"uuid": "<uuid>", "offset": <n>}, …]}, …]}, …]}

Mapping:
- the snapshot is a `foom` capture of the key's app; every item is persistent (live at the end);
- `name` is the category (Matrix's `All Anonymous VM` is memdash's `VM: Anonymous VM`: the spec
  reserves the former for the summary row);
- each stack becomes a row of its `size`/`count`; what the stacks of an item do not cover
  (Matrix serializes stacks only for its largest categories, and only their heaviest stacks) is
  one row with no stack, so the item's totals are kept exactly;
- Matrix writes `size: 0` for `Alloc Fail` and `Unknow` items whatever their stacks hold; the
  item's 0 is kept and the stacks of those items count objects only;
- frames are listed innermost first (Matrix's responsible-caller search starts at frame 0 and
  skips the last two, `main` and `start`); they are reversed into the outermost-first prefix tree;
- each image UUID becomes an image loaded at 0, so a frame's address is its offset and it shows
  as `image + 0xoffset`; the image of `app_uuid` is the app's binary (named after the app), every
  other image is marked as a system library;
- a stack's `caller` is Matrix's responsible caller (the first app frame, skipping Matrix's own
  `+[NSObject event_logging_alloc]` hook for Objective-C objects); app frames between the
  allocation site and it are put in a twin of the app image marked system, so that memdash's
  responsible caller (the first non-system frame) is Matrix's;
- captured_at = `report_time`, and `launch_time`/`report_time` are milliseconds (Matrix multiplies
  its seconds by 1000; values below 10^11 are taken as seconds, as older versions wrote);
- device model = `phone`, os = `os_ver`;
- the upload's own fields (`build_version`, `build_number`, `build_commit`, `device_id`,
  `session`) win; each may also come from a custom head key of the same name (Matrix passes the
  app's custom info into `head` as strings), so `session` links the report to its run.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memdash.core.logic.errors import InvalidUpload
from memdash.core.logic.numbers import whole_number
from memdash.ingest.logic.monitor_common import (
    SnapshotBuilder,
    build_section,
    document_header,
    require_int,
    require_str,
    type_name,
)
from memdash.ingest.writes.parsers.snapshot import converting_handler

FORMAT_NAME = "matrix"
DESCRIPTION = "Matrix (WeChat) memory-stat report: JSON with `head` and `items` tagged iOS_MemStat"
TAG = "iOS_MemStat"
# Matrix zeroes the size of these two categories in its report (memory_report_generator.cpp).
ZERO_SIZE_CATEGORIES = ("Alloc Fail", "Unknow")
CATEGORY_RENAMES = {"All Anonymous VM": "VM: Anonymous VM"}
HEAD_META_KEYS = ("build_version", "build_number", "build_commit", "device_id", "session")
UNKNOWN_IMAGE = "(unknown image)"
SECONDS_BEFORE = 10**11  # a timestamp below this is in seconds, not milliseconds


def detect(raw: bytes, doc: Any) -> bool:
    if not isinstance(doc, dict):
        return False
    head, items = doc.get("head"), doc.get("items")
    if not isinstance(head, dict) or not isinstance(items, list):
        return False
    first = items[0] if items else None
    return "protocol_ver" in head or (isinstance(first, dict) and first.get("tag") == TAG)


def timestamp(value: Any, path: str) -> datetime:
    number = require_int(value, path)
    seconds = number if number < SECONDS_BEFORE else number / 1000
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError) as exc:
        raise InvalidUpload(f"not a usable timestamp: {number}", path) from exc


def head_strings(head: dict[str, Any]) -> dict[str, str]:
    """The head's custom keys that memdash reads (all optional strings)."""
    found = {}
    for key in HEAD_META_KEYS:
        if key in head and head[key] not in (None, ""):
            found[key] = require_str(head[key], f"head.{key}")
    return found


def parse_caller(caller: Any, path: str) -> tuple[str, int] | None:
    """Matrix's responsible caller `<uuid>@<offset>` (sprintf "%s@%u": offset as uint32)."""
    if caller is None:
        return None
    uuid, separator, offset = require_str(caller, path).rpartition("@")
    number = whole_number(offset, 2**64 - 1)
    if not separator or not uuid or number is None:
        raise InvalidUpload("must be `<uuid>@<offset>` (an unsigned 64-bit offset)", path)
    return uuid, number


def image_index(
    builder: SnapshotBuilder, uuid: str, app: tuple[str, str], below_caller: bool
) -> int:
    """The image of a UUID, loaded at 0 (so a frame's address is its offset). `app` is the
    app binary's (uuid, display name); app frames below Matrix's responsible caller (its own
    allocation hook) get a twin image marked system, so that memdash's responsible caller
    (the first non-system frame from the allocation site) is the one Matrix chose."""
    app_uuid, app_name = app
    if not uuid:  # an address Matrix found in no loaded image
        entry = {"name": UNKNOWN_IMAGE, "load_address": "0x0", "system": True}
        return builder.image(("unknown",), entry)
    if uuid != app_uuid:
        entry = {"name": uuid, "uuid": uuid, "load_address": "0x0", "system": True}
        return builder.image(uuid, entry)
    entry = {"name": app_name or uuid, "uuid": uuid, "load_address": "0x0"}
    if below_caller:
        return builder.image((uuid, "below caller"), {**entry, "system": True})
    return builder.image(uuid, entry)


def stack_frames(
    builder: SnapshotBuilder,
    frames: Any,
    path: str,
    app: tuple[str, str],
    caller: tuple[str, int] | None,
) -> list[int]:
    """Frame indices outermost first from Matrix's innermost-first `frames`."""
    if not isinstance(frames, list) or not frames:
        raise InvalidUpload("must be a non-empty list of {uuid, offset}", path)
    parsed = []
    for position, frame in enumerate(frames):
        frame_path = f"{path}[{position}]"
        if not isinstance(frame, dict):
            raise InvalidUpload(
                f"must be an object {{uuid, offset}}, found {type_name(frame)}", frame_path
            )
        uuid = require_str(frame.get("uuid"), f"{frame_path}.uuid", allow_empty=True).strip()
        parsed.append((uuid, require_int(frame.get("offset"), f"{frame_path}.offset")))
    # Position of the caller's frame; 0 (nothing re-marked) when none is named or found.
    caller_at = 0
    if caller is not None:
        caller_at = next(
            (
                position
                for position, (uuid, offset) in enumerate(parsed)
                if uuid == caller[0] and offset & 0xFFFFFFFF == caller[1]
            ),
            0,
        )
    indices = [
        builder.frame(
            {"image": image_index(builder, uuid, app, position < caller_at), "address": offset}
        )
        for position, (uuid, offset) in enumerate(parsed)
    ]
    indices.reverse()
    return indices


def item_rows(builder: SnapshotBuilder, item: Any, path: str, app: tuple[str, str]) -> None:
    if not isinstance(item, dict):
        raise InvalidUpload(f"must be an object, found {type_name(item)}", path)
    tag = item.get("tag", TAG)
    if tag != TAG:
        raise InvalidUpload(f"expected tag {TAG!r}, found {tag!r}", f"{path}.tag")
    name = require_str(item.get("name"), f"{path}.name").strip()
    category = CATEGORY_RENAMES.get(name, name)
    size = require_int(item.get("size"), f"{path}.size")
    count = require_int(item.get("count"), f"{path}.count")
    stacks = item.get("stacks", [])
    if stacks is None:
        stacks = []
    if not isinstance(stacks, list):
        raise InvalidUpload(f"must be a list, found {type_name(stacks)}", f"{path}.stacks")
    sizes_are_zeroed = name in ZERO_SIZE_CATEGORIES and size == 0
    covered_size = covered_count = 0
    for position, stack in enumerate(stacks):
        stack_path = f"{path}.stacks[{position}]"
        if not isinstance(stack, dict):
            raise InvalidUpload(f"must be an object, found {type_name(stack)}", stack_path)
        caller = parse_caller(stack.get("caller"), f"{stack_path}.caller")
        stack_size = require_int(stack.get("size"), f"{stack_path}.size")
        if sizes_are_zeroed:
            stack_size = 0  # keep the item's figure: Matrix reports these categories as 0 bytes
        stack_count = require_int(stack.get("count"), f"{stack_path}.count")
        frames = stack_frames(builder, stack.get("frames"), f"{stack_path}.frames", app, caller)
        covered_size += stack_size
        covered_count += stack_count
        if covered_size > size or covered_count > count:
            raise InvalidUpload(
                f"the stacks of this item add up to more than the item ({covered_size} bytes in "
                f"{covered_count} allocations; the item has {size} bytes in {count})",
                stack_path,
            )
        builder.add_row(
            category,
            stack=builder.stack(frames),
            persistent=stack_count,
            persistent_bytes=stack_size,
        )
    # What the reported stacks do not cover stays in the category, under "no stack".
    builder.add_row(
        category, persistent=count - covered_count, persistent_bytes=size - covered_size
    )


def matrix_device(
    head: dict[str, Any], meta_fields: dict[str, Any], from_head: dict[str, str]
) -> dict[str, Any]:
    """The report names the phone it came from (`phone`, `os_ver`); the upload's fields fill gaps.
    The device id is the upload's, else a `device_id` custom key."""
    device = {}
    device_id = meta_fields.get("device_id") or from_head.get("device_id")
    model = (
        require_str(head["phone"], "head.phone")
        if head.get("phone")
        else meta_fields.get("device_model")
    )
    os_version = (
        require_str(head["os_ver"], "head.os_ver") if head.get("os_ver") else meta_fields.get("os")
    )
    for key, value in (("id", device_id), ("model", model), ("os", os_version)):
        if value:
            device[key] = str(value)
    return device


def to_snapshot_document(raw: bytes, doc: Any, meta_fields: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise InvalidUpload(f"a Matrix report must be a JSON object, found {type_name(doc)}", "")
    head = doc.get("head")
    if not isinstance(head, dict):
        raise InvalidUpload(f"must be an object, found {type_name(head)}", "head")
    items = doc.get("items")
    if not isinstance(items, list):
        raise InvalidUpload(f"must be a list, found {type_name(items)}", "items")
    require_int(head.get("protocol_ver", 1), "head.protocol_ver")
    app_uuid = require_str(head.get("app_uuid"), "head.app_uuid")
    report_time = timestamp(head.get("report_time"), "head.report_time")
    if "launch_time" in head:
        launch_time = timestamp(head["launch_time"], "head.launch_time")
        if launch_time > report_time:
            raise InvalidUpload("is after head.report_time", "head.launch_time")
    from_head = head_strings(head)
    device = matrix_device(head, meta_fields, from_head)

    builder = SnapshotBuilder()
    app_name = meta_fields.get("app_name") or ""
    for position, item in enumerate(items):
        item_rows(builder, item, f"items[{position}]", (app_uuid, app_name))

    header = document_header(
        meta_fields,
        build=build_section(meta_fields, "Matrix report", from_head),
        captured_at=report_time,
        trigger="foom",
        device=device,
        session=meta_fields.get("session") or from_head.get("session", ""),
    )
    return builder.document(header)


HANDLER = converting_handler(FORMAT_NAME, DESCRIPTION, detect, to_snapshot_document)
