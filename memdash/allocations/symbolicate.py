"""Naming a snapshot's frames from debug files, over plain data (no Django, no database).

A frame that arrived as `image + offset` and whose image has a debug file becomes the frames the
symcache answers at that offset: the function, then each call inlined into it, as their own
frames (marked inlined), so an inlined call is its own row in every tree. Named frames are keyed
by function and image only (`frame_id`), not by offset, file or line: every call site of a
function is one frame, and it is the very frame an upload that named the function itself got.
The stack tree is then rebuilt over the new frames, and the rows follow their stacks, so that
what arrived once by name and once by address is one path in every view (trees, inverted trees,
responsible callers, diffs, build compare: all of them are keyed by stack node, whose id chains
from these frame ids).

The same `symbolicate_parsed` runs on a document at ingest and on a stored snapshot read back as
a document when a debug file arrives later (memdash.allocations.resymbolicate).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from memdash.allocations.analysis import Key, hash64
from memdash.allocations.document import FrameInfo, ImageInfo, ParsedSnapshot


class Location(Protocol):
    """What a debug file answers for an offset (memdash.symbols.lookup.Located)."""

    @property
    def function(self) -> str: ...
    @property
    def file(self) -> str: ...
    @property
    def line(self) -> int | None: ...
    @property
    def inlined(self) -> bool: ...
    @property
    def image(self) -> str: ...


# (image id, offset) -> the frames there, outermost first; empty when unknown.
Resolver = Callable[[str, int], Sequence[Location]]
ImageKey = tuple[str, str]  # (image name, debug id) as the snapshot names the image


def frame_id(app_id: int, frame: FrameInfo) -> int:
    """The id of a frame of an app. A frame named from a debug file is one per function and
    image (and inlined or not), so it is the frame an upload that named that function gets."""
    if frame.known_id is not None:
        return frame.known_id
    if frame.symbolicated:
        if frame.inlined:
            return hash64("f", app_id, frame.symbol, frame.image, None, None, "", None, "inlined")
        return hash64("f", app_id, frame.symbol, frame.image, None, None, "", None)
    return hash64(
        "f", app_id, frame.symbol, frame.image, frame.offset, frame.address, frame.file,
        frame.line,
    )  # fmt: skip


def needs_name(frame: FrameInfo) -> bool:
    """A frame a debug file can name: no name, an offset in an image with an id."""
    return not frame.symbol and frame.offset is not None and bool(frame.debug_id)


def image_ids(parsed: ParsedSnapshot) -> set[str]:
    """The ids of the images that frames without a name are in (what to look debug files up by)."""
    return {f.debug_id for f in parsed.frames if needs_name(f)}


def symbolicate_parsed(parsed: ParsedSnapshot, resolve: Resolver) -> int:
    """Name the frames `resolve` knows, rebuilding stacks and rows over the named frames (in
    place). Returns how many frames were named (0: nothing changed)."""
    expansion: dict[int, list[int]] = {}
    named_at: dict[tuple[str, str, bool], int] = {}
    for index, frame in enumerate(list(parsed.frames)):
        if not needs_name(frame) or frame.offset is None:
            continue
        chain = []
        for place in resolve(frame.debug_id, frame.offset):
            key = (place.function, place.image, place.inlined)
            at = named_at.get(key)
            if at is None:
                at = named_at[key] = len(parsed.frames)
                parsed.frames.append(
                    FrameInfo(
                        symbol=place.function, image=place.image, file=place.file,
                        line=place.line, is_system=frame.is_system, debug_id=frame.debug_id,
                        symbolicated=True, inlined=place.inlined,
                    )
                )  # fmt: skip
            chain.append(at)
        if chain:
            expansion[index] = chain
    if not expansion:
        return 0
    remap = _rebuild_stacks(parsed, expansion)
    rows: dict[Key, list[int]] = {}
    for (category, stack, thread, generation), counts in parsed.rows.items():
        row_key = (category, remap[stack] if stack is not None else None, thread, generation)
        acc = rows.get(row_key)
        if acc is None:
            rows[row_key] = list(counts)
        else:
            for k in range(4):
                acc[k] += counts[k]
    parsed.rows = rows
    return len(expansion)


def _rebuild_stacks(parsed: ParsedSnapshot, expansion: dict[int, list[int]]) -> list[int]:
    """The stack tree over the named frames (a frame with inlined calls becomes a chain of
    nodes); answers where each old node went."""
    parents: list[int | None] = []
    frames: list[int] = []
    placed: dict[tuple[int | None, int], int] = {}
    remap: list[int] = []
    for parent, frame in zip(parsed.stack_parents, parsed.stack_frames, strict=True):
        above = remap[parent] if parent is not None else None
        for named in expansion.get(frame, (frame,)):
            node = placed.get((above, named))
            if node is None:
                node = placed[(above, named)] = len(parents)
                parents.append(above)
                frames.append(named)
            above = node
        assert above is not None  # every old node has a frame, so it lands on a node
        remap.append(above)
    parsed.stack_parents, parsed.stack_frames = parents, frames
    return remap


@dataclass
class ImageUsage:
    """An image of a snapshot and what is unnamed in it."""

    name: str
    debug_id: str
    arch: str = ""
    system: bool = False
    frames: int = 0  # frames without a name on the snapshot's stacks
    bytes: int = 0  # of the allocations with such a frame on their stack


def image_usage(parsed: ParsedSnapshot) -> tuple[dict[ImageKey, ImageUsage], int]:
    """Per image (as the snapshot names it), its unnamed frames and the bytes on stacks through
    them; and the bytes on stacks with any unnamed frame. Every image a frame is in is listed,
    named or not, so a debug file's page can tell which builds use it."""
    usage: dict[ImageKey, ImageUsage] = {}
    by_name: dict[str, ImageInfo] = {i.name: i for i in parsed.images}
    for frame in parsed.frames:
        info = by_name.get(frame.image)
        if frame.symbolicated or info is None:  # named frames are in their debug file's image
            continue
        key = (frame.image, frame.debug_id)
        if key not in usage:
            usage[key] = ImageUsage(frame.image, frame.debug_id, info.arch, info.system)
    # The unnamed images on the path from the root to each node; shared while unchanged.
    unnamed_on: list[frozenset[ImageKey]] = []
    counted: set[int] = set()
    empty: frozenset[ImageKey] = frozenset()
    for parent, index in zip(parsed.stack_parents, parsed.stack_frames, strict=True):
        above = unnamed_on[parent] if parent is not None else empty
        frame = parsed.frames[index]
        key = (frame.image, frame.debug_id)
        if not frame.symbol and key in usage:
            if index not in counted:
                counted.add(index)
                usage[key].frames += 1
            above = above | {key} if key not in above else above
        unnamed_on.append(above)
    total = 0
    for (_, stack, _, _), counts in parsed.rows.items():
        if stack is None or not unnamed_on[stack]:
            continue
        size = counts[1] + counts[3]
        total += size
        for key in unnamed_on[stack]:
            usage[key].bytes += size
    return usage, total
