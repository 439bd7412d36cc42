"""Validation of a memdash.snapshot v1 document into plain data (no Django, no database).

Everything is checked before anything is stored: the first offending value raises
`InvalidUpload` with its JSON path, e.g. `allocations[1203].stack: index 99001 is outside stacks
(99000 nodes)`. Allocation rows with the same (category, stack, thread, generation) add up;
events are replayed into such rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memdash.allocations.logic.analysis import (
    CREATE_FUNCTIONS,
    EVENT_FUNCTIONS,
    FREE_FUNCTIONS,
    Block,
    Key,
    generation_name,
    replay_events,
)
from memdash.allocations.logic.columns import BlockColumns, RowColumns
from memdash.allocations.logic.document.contract import (
    ARCH_LENGTH,
    FORMAT,
    MAX_UINT64,
    MAX_VM_TAG,
    PLATFORMS,
    SESSION_ID_LENGTH,
    TRIGGERS,
    VERSIONS,
)
from memdash.allocations.logic.document.rows import (
    COUNTERS,
    NeedsRowByRow,
    aggregate_rows,
    check_sums,
)
from memdash.allocations.logic.timeline import Buckets
from memdash.core.logic.errors import InvalidUpload
from memdash.core.logic.numbers import MAX_INT32, MAX_INT64
from memdash.core.logic.rfc3339 import timestamp_field


@dataclass
class ImageInfo:
    name: str
    uuid: str = ""
    load_address: int | None = None
    system: bool = False
    arch: str = ""


@dataclass
class FrameInfo:
    symbol: str = ""
    image: str = ""
    offset: int | None = None
    address: int | None = None
    file: str = ""
    line: int | None = None
    is_system: bool = False
    debug_id: str = ""  # the UUID (or build id) of its image, to find the image's debug file
    # Named from a debug file (memdash.allocations.logic.symbolicate): one frame per function.
    symbolicated: bool = False
    inlined: bool = False
    known_id: int | None = None  # read back from the database: the id it is stored under


@dataclass
class TimelineParts:
    buckets: Buckets
    ended: NDArray[np.int64]  # per bucket: [blocks, bytes] ended in it


@dataclass
class ParsedSnapshot:
    app_id: str
    platform: str
    app_name: str
    build_version: str
    build_number: str
    build_commit: str
    captured_at: datetime
    device_id: str = ""
    device_model: str = ""
    device_os: str = ""
    session: str = ""
    trigger: str = "manual"
    images: list[ImageInfo] = field(default_factory=list)
    frames: list[FrameInfo] = field(default_factory=list)
    stack_parents: list[int | None] = field(default_factory=list)
    stack_frames: list[int] = field(default_factory=list)
    threads: list[str] = field(default_factory=list)
    generations: list[tuple[str, float]] = field(default_factory=list)
    event_count: int = 0
    unmatched_frees: int = 0
    replaced_live_blocks: int = 0
    # what the producing tool reported beyond the rows: label -> {"value", "unit", "order"}
    tool_figures: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The rows, {key: [p, pb, t, tb]} as small importers and tests make them, or, once
    # `columns` is set (a large document's form, `document_raw`), those columns and no dict.
    rows: dict[Key, list[int]] = field(default_factory=dict)
    columns: RowColumns | None = None
    # The events shape's time buckets and what ended in each (the rows carry their bucket),
    # and its allocations one by one (address, times, size, row key)
    timeline: TimelineParts | None = None
    blocks: list[Block] = field(default_factory=list)
    block_columns: BlockColumns | None = None  # a file of millions of them (heaptrack)

    def row_dict(self) -> dict[Key, list[int]]:
        """The rows as a dict, to read (made from the columns when they are columns)."""
        return self.columns.to_dict() if self.columns is not None else self.rows

    def to_columns(self) -> RowColumns:
        """The rows as columns from now on (a dict of rows becomes columns; `rows` empty)."""
        if self.columns is None:
            self.columns, self.rows = RowColumns.from_dict(self.rows), {}
        return self.columns


def fail(path: str, message: str) -> InvalidUpload:
    return InvalidUpload(message, path)


def _str(
    obj: dict[str, Any], key: str, path: str, required: bool = False, max_length: int | None = 255
) -> str:
    """A string field; `max_length` matches the column it is stored in (None: a text column)."""
    where = f"{path}.{key}" if path else key
    value = obj.get(key)
    if value is None:
        if required:
            raise fail(where, "is required")
        return ""
    if not isinstance(value, str):
        raise fail(where, "must be a string")
    if max_length is not None and len(value) > max_length:
        raise fail(where, f"is longer than {max_length} characters")
    _no_nul(value, where)
    return value


def _no_nul(value: str, path: str) -> None:
    if "\x00" in value:  # PostgreSQL text cannot hold it
        raise fail(path, "must not contain NUL characters")


def _object(value: Any, path: str, required: bool = True) -> dict[str, Any]:
    if value is None and not required:
        return {}
    if value is None:
        raise fail(path, "is required")
    if not isinstance(value, dict):
        raise fail(path, "must be an object")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise fail(path, "must be a list")
    return value


def _index(value: Any, size: int, path: str, what: str) -> int | None:
    if value is None:
        return None
    if type(value) is not int:
        raise fail(path, "must be an integer index or null")
    if not 0 <= value < size:
        raise fail(path, f"index {value} is outside {what} ({size} entries)")
    return value


def _count(value: Any, path: str) -> int:
    if type(value) is not int:
        if type(value) is float and not math.isfinite(value):
            raise fail(path, "must be a finite integer, not NaN or infinity")
        raise fail(path, "must be an integer")
    if value < 0:
        raise fail(path, "must not be negative")
    if value > MAX_INT64:
        raise fail(path, "is larger than a 64-bit integer")
    return value


def _address(value: Any, path: str) -> int | None:
    """An absolute address: any unsigned 64-bit value, since arm64 Android tags heap pointers in
    the top byte (0xb4…) and kernels map the upper half."""
    if value is None:
        return None
    if type(value) is int and 0 <= value <= MAX_UINT64:
        return value
    if isinstance(value, str) and value.lower().startswith("0x"):
        try:
            number = int(value, 16)
        except ValueError:
            pass
        else:
            if number <= MAX_UINT64:
                return number
    raise fail(path, 'must be an unsigned 64-bit integer or a "0x…" hex string')


def _finite_number(value: Any, path: str) -> float:
    if type(value) not in (int, float) or not math.isfinite(value):
        raise fail(path, "must be a finite number")
    number: float = value  # an int or a float, as checked
    return number


def parse_header(doc: Any) -> ParsedSnapshot:
    """The top-level keys other than the big lists."""
    if not isinstance(doc, dict):
        raise fail("", "the document must be a JSON object")
    if doc.get("format") != FORMAT:
        raise fail("format", f'must be "{FORMAT}"')
    version = doc.get("version")
    if type(version) is not int or version not in VERSIONS:
        raise fail("version", f"unsupported version {version!r}; this server reads version 1")
    app = _object(doc.get("app"), "app")
    app_id = _str(app, "id", "app", required=True)
    platform = _str(app, "platform", "app", required=True)
    if platform not in PLATFORMS:
        raise fail("app.platform", f"must be one of {', '.join(sorted(PLATFORMS))}")
    build = _object(doc.get("build"), "build")
    device = _object(doc.get("device"), "device", required=False)
    trigger = _str(doc, "trigger", "") or "manual"
    if trigger not in TRIGGERS:
        raise fail("trigger", f"must be one of {', '.join(sorted(TRIGGERS))}")
    if "captured_at" not in doc:
        raise fail("captured_at", "is required")
    return ParsedSnapshot(
        app_id=app_id,
        platform=platform,
        app_name=_str(app, "name", "app"),
        build_version=_str(build, "version", "build", required=True, max_length=64),
        build_number=_str(build, "number", "build", max_length=64),
        build_commit=_str(build, "commit", "build", max_length=64),
        device_id=_str(device, "id", "device"),
        device_model=_str(device, "model", "device", max_length=128),
        device_os=_str(device, "os", "device", max_length=128),
        session=_str(doc, "session", "", max_length=SESSION_ID_LENGTH),
        captured_at=timestamp_field(doc["captured_at"], "captured_at"),
        trigger=trigger,
    )


def parse_images(raw: Any) -> list[ImageInfo]:
    images = []
    for i, image in enumerate(_list(raw, "images")):
        path = f"images[{i}]"
        image = _object(image, path)
        system = image.get("system")
        if system is None:  # absent or null, as every optional field
            system = False
        if not isinstance(system, bool):
            raise fail(f"{path}.system", "must be true or false")
        images.append(
            ImageInfo(
                name=_str(image, "name", path, required=True, max_length=None),
                uuid=_str(image, "uuid", path),
                load_address=_address(image.get("load_address"), f"{path}.load_address"),
                system=system,
                arch=_str(image, "arch", path, max_length=ARCH_LENGTH),
            )
        )
    return images


def parse_frames(raw: Any, images: list[ImageInfo]) -> list[FrameInfo]:
    frames = []
    for i, frame in enumerate(_list(raw, "frames")):
        path = f"frames[{i}]"
        if isinstance(frame, str):
            _no_nul(frame, path)
            frames.append(FrameInfo(symbol=frame))
            continue
        frame = _object(frame, path)
        image_index = _index(frame.get("image"), len(images), f"{path}.image", "images")
        address = _address(frame.get("address"), f"{path}.address")
        line = frame.get("line")
        if line is not None and (type(line) is not int or not 0 <= line <= MAX_INT32):
            raise fail(f"{path}.line", "must be a non-negative 32-bit integer")
        info = FrameInfo(
            symbol=_str(frame, "symbol", path, max_length=None),
            file=_str(frame, "file", path, max_length=None),
        )
        info.line = line
        if image_index is not None:
            image = images[image_index]
            info.image, info.is_system, info.debug_id = image.name, image.system, image.uuid
            if address is not None and image.load_address is not None:
                if address < image.load_address:
                    raise fail(f"{path}.address", "is below its image's load_address")
                info.offset = address - image.load_address
            else:
                info.address = address
        else:
            info.address = address
        frames.append(info)
    return frames


def parse_stacks(raw: Any, frame_count: int) -> tuple[list[int | None], list[int]]:
    parents: list[int | None] = []
    frames: list[int] = []
    for i, node in enumerate(_list(raw, "stacks")):
        if type(node) is not list or len(node) != 2:
            raise fail(f"stacks[{i}]", "must be a [parent, frame] pair")
        parent, frame = node
        if parent is not None:
            if type(parent) is not int:
                raise fail(f"stacks[{i}][0]", "must be an integer index or null")
            if not 0 <= parent < i:
                raise fail(f"stacks[{i}][0]", f"parent {parent} must come before its child {i}")
        if type(frame) is not int:
            raise fail(f"stacks[{i}][1]", "must be an integer index into frames")
        if not 0 <= frame < frame_count:
            raise fail(f"stacks[{i}][1]", f"index {frame} is outside frames ({frame_count})")
        parents.append(parent)
        frames.append(frame)
    return parents, frames


def parse_threads(raw: Any) -> list[str]:
    threads = _list(raw, "threads")
    for i, name in enumerate(threads):
        if not isinstance(name, str):
            raise fail(f"threads[{i}]", "must be a string")
        _no_nul(name, f"threads[{i}]")
    return threads


def parse_generations(raw: Any) -> list[tuple[str, float]]:
    marks = []
    previous = -math.inf
    for i, mark in enumerate(_list(raw, "generations")):
        path = f"generations[{i}]"
        mark = _object(mark, path)
        if "at_ms" not in mark:
            raise fail(f"{path}.at_ms", "is required")
        at_ms = _finite_number(mark["at_ms"], f"{path}.at_ms")
        if not 0 <= at_ms <= MAX_INT64:
            raise fail(f"{path}.at_ms", "must be between 0 and 2^63 - 1")
        if at_ms < previous:
            raise fail(f"{path}.at_ms", "generation marks must be in time order")
        previous = at_ms
        marks.append((_str(mark, "name", path) or generation_name(i), at_ms))
    return marks


def aggregate_rows_one_by_one(
    raw: list[Any], stack_count: int, thread_count: int, generation_count: int
) -> dict[Key, list[int]]:
    """Validate allocation rows one at a time, in document order, adding up those with the same
    key: what a document the vectorised checks (`document_rows.aggregate_rows`) refuse is read
    with, so that the first offending value is named with its path."""
    rows: dict[Key, list[int]] = {}
    get = rows.get
    small = MAX_INT64 // (2 * max(1, len(raw)))
    large_values = False
    for i, row in enumerate(raw):
        if type(row) is not dict:
            raise fail(f"allocations[{i}]", "must be an object")
        category = row.get("category")
        if type(category) is not str or not category:
            raise fail(f"allocations[{i}].category", "must be a non-empty string")
        where = f"allocations[{i}]"
        stack = _index(row.get("stack"), stack_count, f"{where}.stack", "stacks")
        thread = _index(row.get("thread"), thread_count, f"{where}.thread", "threads")
        generation = _index(
            row.get("generation"), generation_count, f"{where}.generation", "generations"
        )
        counts = [_count(row.get(name, 0), f"{where}.{name}") for name in COUNTERS]
        large_values = large_values or max(counts) > small
        key = (category, stack, thread, generation)
        acc = get(key)
        if acc is None:
            rows[key] = counts
        else:
            for k in range(4):
                acc[k] += counts[k]
    if large_values:
        check_sums([sum(counts[k] for counts in rows.values()) for k in range(4)], "allocations")
    if any("\x00" in key[0] for key in rows):  # names checked once each, then the first row
        first = next(i for i, row in enumerate(raw) if "\x00" in row["category"])
        _no_nul(raw[first]["category"], f"allocations[{first}].category")
    return rows


def validate_events(raw: list[Any], stack_count: int, thread_count: int) -> bool:
    """Checks every event (sizes and addresses read as integers in place). True when a size is
    large enough that the replayed totals could pass 64 bits and must be checked."""
    small = MAX_INT64 // (2 * max(1, len(raw)))
    large_values = False
    for i, event in enumerate(raw):
        path = f"events[{i}]"
        if type(event) is not dict:
            raise fail(path, "must be an object")
        fn = event.get("fn")
        if type(fn) is not str or fn not in EVENT_FUNCTIONS:
            raise fail(f"{path}.fn", f"must be one of {', '.join(sorted(EVENT_FUNCTIONS))}")
        _finite_number(event.get("t_ms"), f"{path}.t_ms")
        if event.get("address") is None:
            raise fail(f"{path}.address", f"is required for {fn}")
        address = _address(event["address"], f"{path}.address")
        if type(event["address"]) is not int:
            event["address"] = address
        if fn in CREATE_FUNCTIONS:
            if "size" not in event:
                raise fail(f"{path}.size", f"is required for {fn}")
            large_values |= _count(event["size"], f"{path}.size") > small
        if fn == "realloc" and event.get("old_address") is not None:
            event["old_address"] = _address(event["old_address"], f"{path}.old_address")
        if fn not in FREE_FUNCTIONS:
            category = event.get("category")
            if category is not None and (type(category) is not str or not category):
                raise fail(f"{path}.category", "must be a non-empty string")
            if category is not None:
                _no_nul(category, f"{path}.category")
            _index(event.get("stack"), stack_count, f"{path}.stack", "stacks")
            _index(event.get("thread"), thread_count, f"{path}.thread", "threads")
            tag = event.get("vm_tag")
            if tag is not None and (type(tag) is not int or not 0 <= tag <= MAX_VM_TAG):
                raise fail(f"{path}.vm_tag", f"must be an integer from 0 to {MAX_VM_TAG}")
    return large_values


def parse_snapshot(doc: Any) -> ParsedSnapshot:
    """The whole document, validated, with its rows aggregated (or its events replayed)."""
    parsed = parse_header(doc)
    parsed.images = parse_images(doc.get("images"))
    parsed.frames = parse_frames(doc.get("frames"), parsed.images)
    parsed.stack_parents, parsed.stack_frames = parse_stacks(doc.get("stacks"), len(parsed.frames))
    parsed.threads = threads = parse_threads(doc.get("threads"))
    parsed.generations = parse_generations(doc.get("generations"))
    has_rows, has_events = doc.get("allocations") is not None, doc.get("events") is not None
    if has_rows == has_events:
        raise fail("allocations", "exactly one of `allocations` and `events` is required")
    stack_count = len(parsed.stack_parents)
    if has_rows:
        raw = _list(doc["allocations"], "allocations")
        sizes = (stack_count, len(threads), len(parsed.generations))
        try:
            parsed.columns = aggregate_rows(raw, *sizes)  # checked as columns
        except NeedsRowByRow:  # something is wrong: the first offending value, by its path
            parsed.rows = aggregate_rows_one_by_one(raw, *sizes)
    else:
        events = _list(doc["events"], "events")
        large_values = validate_events(events, stack_count, len(threads))
        times = np.fromiter((e["t_ms"] for e in events), np.float64, len(events))
        buckets = Buckets.of_run(times)
        replay = replay_events(
            events, [at for _, at in parsed.generations], buckets.of(times).tolist(), buckets.count
        )
        del times
        if large_values:
            check_sums([sum(c[k] for c in replay.timed_rows.values()) for k in range(4)], "events")
        parsed.columns = RowColumns.from_timed(replay.timed_rows)
        parsed.timeline = TimelineParts(buckets, np.array(replay.ended, dtype=np.int64))
        parsed.event_count, parsed.blocks = replay.events, replay.blocks
        parsed.unmatched_frees = replay.unmatched_frees
        parsed.replaced_live_blocks = replay.replaced_live_blocks
    return parsed
