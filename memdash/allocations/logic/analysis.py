"""Pure functions over plain data: category names, byte formatting, event replay, tree totals.

Nothing here touches Django or the database, so each piece is unit-tested on its own.
"""

from __future__ import annotations

import string
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, NamedTuple

from memdash.core.logic.numbers import MAX_INT32, MAX_INT64, whole_number
from memdash.core.logic.units import malloc_category

# Mach VM tags (mach/vm_statistics.h, VM_MEMORY_*) with the names vmmap and Instruments show.
VM_TAG_NAMES: dict[int, str] = {
    1: "MALLOC", 2: "MALLOC_SMALL", 3: "MALLOC_LARGE", 4: "MALLOC_HUGE", 5: "SBRK",
    6: "REALLOC", 7: "MALLOC_TINY", 8: "MALLOC_LARGE_REUSABLE", 9: "MALLOC_LARGE_REUSED",
    10: "Performance tool data", 11: "MALLOC_NANO", 12: "MALLOC_MEDIUM",
    13: "MALLOC_PROB_GUARD", 20: "Mach message", 21: "IOKit", 30: "Stack", 31: "Guard",
    32: "Shared pmap", 33: "Dylib", 34: "ObjC dispatchers", 35: "Unshared pmap",
    40: "AppKit", 41: "Foundation", 42: "CoreGraphics", 43: "CoreServices", 44: "Java",
    45: "CoreData", 46: "CoreData Object IDs", 50: "ATS (font support)",
    51: "CoreAnimation", 52: "CG image", 53: "TCMalloc", 54: "CG raster data",
    55: "CG shared images", 56: "CG framebuffers", 57: "CG backingstores", 58: "CG xalloc",
    60: "dyld private memory", 61: "dyld malloc memory", 62: "SQLite page cache",
    63: "JavaScriptCore", 64: "JS JIT generated code", 65: "JS VM register file",
    66: "OpenGL GLSL", 67: "OpenCL", 68: "CoreImage", 69: "WebCore purgeable buffers",
    70: "ImageIO", 71: "CoreProfile", 72: "Assetsd", 73: "OS Alloc Once",
    74: "Dispatch continuations", 75: "Accelerate framework", 76: "CoreUI image data",
    77: "CoreUI image file", 78: "Genealogy", 79: "RawCamera", 80: "Corpse info", 81: "ASL",
    82: "Swift runtime", 83: "Swift metadata", 84: "DHMM", 86: "SceneKit", 87: "Skywalk",
    88: "IOSurface", 89: "libnetwork", 90: "Audio", 91: "Video bitstream",
    92: "CoreMedia XPC", 93: "CoreMedia RPC", 94: "CoreMedia memory pool",
    95: "CoreMedia read cache", 96: "CoreMedia crabs", 97: "QuickLook thumbnails",
    98: "Accounts", 99: "Sanitizer", 100: "IOAccelerator", 101: "CoreMedia regwarp",
    102: "EAR decoder", 103: "CoreUI cached image data", 104: "ColorSync", 105: "BTInfo",
}  # fmt: skip

SUMMARY_ALL, SUMMARY_HEAP, SUMMARY_VM = (
    "All Heap & Anonymous VM",
    "All Heap Allocations",
    "All Anonymous VM",
)

HEAP_FUNCTIONS = {"malloc", "calloc", "realloc"}
CREATE_FUNCTIONS = {"malloc", "calloc", "vm_allocate", "realloc"}
FREE_FUNCTIONS = {"free", "vm_deallocate"}
EVENT_FUNCTIONS = CREATE_FUNCTIONS | FREE_FUNCTIONS


def vm_category(tag: int | None) -> str:
    if tag is None:
        return "VM: Anonymous VM"
    if 240 <= tag <= 255:
        return f"VM: Application specific {tag - 240}"
    return f"VM: {VM_TAG_NAMES.get(tag, f'VM tag {tag}')}"


def category_kind(name: str) -> str:
    """A category whose name starts with `VM: ` is anonymous VM; every other one is heap."""
    return "vm" if name.startswith("VM: ") else "heap"


UINT64_MASK = 2**64 - 1


def as_signed64(value: int | None) -> int | None:
    """An unsigned 64-bit address or offset as the signed integer a BIGINT column holds (two's
    complement); `frame_label` reads either form back as the unsigned value."""
    if value is None or value <= MAX_INT64:
        return value
    return value - 2**64


def frame_label(symbol: str, image: str, offset: int | None, address: int | None) -> str:
    """A symbol when known, else `image + 0xoffset`; else the absolute address, with its image
    when known (`0x… in Chat`: not an offset, since the image's load address is not known)."""
    if symbol:
        return symbol
    if image and offset is not None:
        return f"{image} + 0x{offset & UINT64_MASK:x}"
    if address is not None:
        where = f" in {image}" if image else ""
        return f"0x{address & UINT64_MASK:x}{where}"
    return "<unknown>"


BASELINE_NAME = "Before first mark"
BASELINE = "baseline"  # a generation as URLs and refs name it: what was made before the first mark


def generation_index(text: str) -> int | str | None:
    """A generation as a URL or a ref names it: BASELINE for `baseline` (or `null`, the
    baseline's index as JSON writes it), else a mark's index (ASCII digits, at most a 32-bit
    column's maximum); None for anything else."""
    if text in (BASELINE, "null"):
        return BASELINE
    return whole_number(text, MAX_INT32)


def generation_name(index: int | None, name: str = "") -> str:
    """The mark's own name, else Instruments' `Generation A`, `Generation B`, … `AA`, … for the
    marks in order (index 0 is A); `Before first mark` for the baseline (index None)."""
    if name:
        return name
    if index is None:
        return BASELINE_NAME
    letters = ""
    n = index
    while True:
        letters = string.ascii_uppercase[n % 26] + letters
        n = n // 26 - 1
        if n < 0:
            break
    return f"Generation {letters}"


# --- Event replay -------------------------------------------------------------------------------

Key = tuple[str, int | None, int | None, int | None]  # (category, stack, thread, generation)
# A key and the time bucket its blocks were made in (`logic.timeline`)
TimedKey = tuple[str, int | None, int | None, int | None, int]


class Block(NamedTuple):
    """One allocation of an events run: where, when it was made and ended (None: still live
    at the end), its size and its row's key."""

    address: int
    made_ms: float
    ended_ms: float | None
    size: int
    key: Key


@dataclass
class Replay:
    timed_rows: dict[TimedKey, list[int]] = field(default_factory=dict)  # -> [p, pb, t, tb]
    blocks: list[Block] = field(default_factory=list)  # in the order they ended, live ones last
    # per time bucket: [blocks, bytes] that ended in it (freed, reallocated or replaced)
    ended: list[list[int]] = field(default_factory=list)
    events: int = 0
    unmatched_frees: int = 0
    replaced_live_blocks: int = 0

    @property
    def rows(self) -> dict[Key, list[int]]:
        """The rows summed over the time buckets."""
        rows: dict[Key, list[int]] = {}
        for (category, stack, thread, generation, _bucket), counts in self.timed_rows.items():
            acc = rows.setdefault((category, stack, thread, generation), [0, 0, 0, 0])
            for k in range(4):
                acc[k] += counts[k]
        return rows


def generation_of(t_ms: float, mark_times: Sequence[float]) -> int | None:
    """The last mark with at_ms <= t_ms, or None before the first mark."""
    index = bisect_right(mark_times, t_ms) - 1
    return index if index >= 0 else None


def event_category(event: dict[str, Any]) -> str:
    category: str | None = event.get("category")
    if category:
        return category
    if event["fn"] == "vm_allocate":
        return vm_category(event.get("vm_tag"))
    return malloc_category(event.get("size") or 0)


def replay_events(
    events: Sequence[dict[str, Any]],
    mark_times: Sequence[float],
    buckets: Sequence[int] | None = None,
    bucket_count: int = 1,
) -> Replay:
    """Replay validated allocator events in order (snapshot-v1 "Events (raw)").

    Live blocks at the end are persistent; ended ones transient. A free with no live block is an
    unmatched free; an allocation at a still-live address ends the old block first. `buckets`
    gives each event's time bucket (`timeline.Buckets.of`, all 0 without): the rows are kept
    by the bucket their blocks were made in, and `ended` counts what ended in each.
    """
    result = Replay(ended=[[0, 0] for _ in range(bucket_count)])
    rows = result.timed_rows
    ended = result.ended
    live: dict[int, tuple[TimedKey, int, float]] = {}

    def end_block(address: int, bucket: int, at: float) -> bool:
        block = live.pop(address, None)
        if block is None:
            return False
        key, size, made = block
        result.blocks.append(Block(address, made, at, size, key[:4]))
        acc = rows.get(key)
        if acc is None:
            rows[key] = [0, 0, 1, size]
        else:
            acc[2] += 1
            acc[3] += size
        gone = ended[bucket]
        gone[0] += 1
        gone[1] += size
        return True

    for event, bucket in zip(events, buckets if buckets is not None else repeat(0), strict=False):
        result.events += 1
        fn = event["fn"]
        if fn in FREE_FUNCTIONS:
            if not end_block(event["address"], bucket, event["t_ms"]):
                result.unmatched_frees += 1
            continue
        old_address = event.get("old_address") if fn == "realloc" else None
        if old_address is not None and not end_block(old_address, bucket, event["t_ms"]):
            result.unmatched_frees += 1
        address = event["address"]
        if address in live:
            end_block(address, bucket, event["t_ms"])
            result.replaced_live_blocks += 1
        key = (
            event_category(event),
            event.get("stack"),
            event.get("thread"),
            generation_of(event["t_ms"], mark_times),
            bucket,
        )
        live[address] = (key, event.get("size") or 0, event["t_ms"])

    for address, (key, size, made) in live.items():
        result.blocks.append(Block(address, made, None, size, key[:4]))
        acc = rows.get(key)
        if acc is None:
            rows[key] = [1, size, 0, 0]
        else:
            acc[0] += 1
            acc[1] += size
    return result


# --- Tree totals --------------------------------------------------------------------------------


def inclusive_totals(
    order: Sequence[int], parent_of: dict[int, int | None], self_counts: dict[int, list[int]]
) -> dict[int, list[int]]:
    """Inclusive counters per node: its own plus everything below it.

    `order` lists node ids parents first; `self_counts` maps a node to [p, pb, t, tb] of the
    allocations made in it. Nodes with nothing at or below them are left out.
    """
    inclusive: dict[int, list[int]] = {n: list(c) for n, c in self_counts.items()}
    for node in reversed(order):
        counts = inclusive.get(node)
        if counts is None:
            continue
        parent = parent_of.get(node)
        if parent is None:
            continue
        up = inclusive.get(parent)
        if up is None:
            inclusive[parent] = list(counts)
        else:
            up[0] += counts[0]
            up[1] += counts[1]
            up[2] += counts[2]
            up[3] += counts[3]
    return inclusive


def responsible_frame(
    stack: int | None,
    parent_of: Mapping[int, int | None] | Sequence[int | None],
    frame_of: Mapping[int, int] | Sequence[int],
    is_system: Mapping[int, bool] | Sequence[bool],
) -> int | None:
    """Matrix's responsible caller: walking from the allocation site outward, the first frame
    that is not in a system image. Each node and frame is a key (or an index) of the tables:
    a document's own lists serve as they are, without a dict over a million nodes."""
    node = stack
    while node is not None:
        frame = frame_of[node]
        if not is_system[frame]:
            return frame
        node = parent_of[node]
    return None


LIFESPANS = ("all", "persistent", "transient")


def lifespan_counts(counts: Sequence[int], lifespan: str) -> tuple[int, int, int, int]:
    """(persistent, persistent_bytes, transient, transient_bytes) under a lifespan filter:
    "Created & Persistent" keeps persistent only, "Created & Destroyed" transient only."""
    p, pb, t, tb = counts
    if lifespan == "persistent":
        return p, pb, 0, 0
    if lifespan == "transient":
        return 0, 0, t, tb
    return p, pb, t, tb


def table_summary(
    per_category: Iterable[tuple[str, Sequence[int]]],
) -> dict[str, dict[str, list[int]]]:
    """What the statistics table of a snapshot shows besides its rows, under each lifespan
    filter: per kind (heap, vm), [categories listed, persistent, persistent bytes, transient,
    transient bytes]. Computed once at ingest from the (name, counts) of each category, so
    that a page of the table reads its rows and nothing else."""
    out = {lifespan: {"heap": [0] * 5, "vm": [0] * 5} for lifespan in LIFESPANS}
    for name, counts in per_category:
        kind = category_kind(name)
        for lifespan, by_kind in out.items():
            p, pb, t, tb = lifespan_counts(counts, lifespan)
            if p or pb or t or tb:
                acc = by_kind[kind]
                acc[0] += 1
                acc[1] += p
                acc[2] += pb
                acc[3] += t
                acc[4] += tb
    return out
