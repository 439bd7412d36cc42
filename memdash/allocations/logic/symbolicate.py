"""Naming a snapshot's frames from debug files, and keying named frames by function, over plain
data (no Django, no database).

A frame that arrived as `image + offset` and whose image has a debug file becomes the frames the
symcache answers at that offset: the function, then each call inlined into it, as their own
frames (marked inlined), so an inlined call is its own row in every tree.

Every named frame of an app, whether the device named it or a debug file did, is keyed by its
function (`frame_id`: symbol, image, inlined), not by offset, address, file or line, as pprof's
default `function` granularity and Instruments' call tree merge call sites: every call site of a
function is one frame (`key_by_function`), which keeps a representative file, and a line only
where every use agrees. Frames without a name keep their offset (or address) identity. The
stack tree is then rebuilt over the merged frames, and the rows follow their stacks, so that
what arrived once by name and once by address is one path in every view (trees, inverted trees,
responsible callers, diffs, build compare: all of them are keyed by stack node, whose id chains
from these frame ids).

The rule has a version, `FRAME_IDENTITY`, stored with each snapshot (`Snapshot.frame_identity`):
a snapshot stored under an older rule is keyed again by
memdash.allocations.writes.resymbolicate (when a debug file arrives, or by `manage.py
resymbolicate --all`). The same `symbolicate_parsed` and `key_by_function` run on a document at
ingest and on a stored snapshot read back as a document.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from memdash.allocations.logic.analysis import Key
from memdash.allocations.logic.columns import (
    NONE,
    RowColumns,
    by_depth,
    depths,
    index_ints,
    ints,
    merged_tree,
    stack_arrays,
)
from memdash.allocations.logic.document.parse import FrameInfo, ImageInfo, ParsedSnapshot
from memdash.allocations.logic.node_ids import node_ids
from memdash.allocations.logic.totals import Nodes, nodes_of
from memdash.core.logic.numbers import hash64


class Location(Protocol):
    """What a debug file answers for an offset (memdash.symbols.logic.lookup.Located)."""

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
FunctionKey = tuple[str, str, bool]  # (symbol, image, inlined): what a named frame is keyed by

# The version of the frame identity rule (`frame_id`, `key_by_function`, `node_ids`); a snapshot
# stored under an older one is keyed again (memdash.allocations.writes.resymbolicate). 0: named
# frames were keyed by offset, address, file and line too; 1: every named frame by its function;
# 2: stack nodes by a 64-bit mix over arrays (memdash.allocations.logic.node_ids), no longer a
# blake2b digest of their text per node.
FRAME_IDENTITY = 2
NODES_BY_MIX = 2  # the first rule whose node ids `node_ids` gives: every node of an older one moves


def frame_id(app_id: int, frame: FrameInfo) -> int:
    """The id of a frame of an app. A named frame is one per function and image (and inlined or
    not), however it was named and wherever it was called from; a frame without a name is one
    per place (offset in its image, else address), and keeps the id it is stored under."""
    if frame.symbol:
        if frame.inlined:
            return hash64("f", app_id, frame.symbol, frame.image, None, None, "", None, "inlined")
        return hash64("f", app_id, frame.symbol, frame.image, None, None, "", None)
    if frame.known_id is not None:
        return frame.known_id
    return hash64(
        "f", app_id, frame.symbol, frame.image, frame.offset, frame.address, frame.file,
        frame.line,
    )  # fmt: skip


def frame_ids_and_nodes(app_id: int, parsed: ParsedSnapshot) -> tuple[list[int], Nodes]:
    """The ids of a document's frames (`frame_id`, one digest per frame) and its distinct stack
    nodes (`totals.nodes_of`), whose ids chain from their parents' and their frames'
    (`node_ids.node_ids`, over arrays), so a path has one id in every upload of the app."""
    frame_ids = [frame_id(app_id, f) for f in parsed.frames]
    stacks = stack_arrays(parsed.stack_parents, parsed.stack_frames)
    node_frame_ids = np.array(frame_ids, dtype=np.int64)[stacks.frames]
    ids = node_ids(app_id, stacks.parents, node_frame_ids, stacks.levels[::-1])
    return frame_ids, nodes_of(stacks, ids, node_frame_ids)


def needs_name(frame: FrameInfo) -> bool:
    """A frame a debug file can name: no name, an offset in an image with an id."""
    return not frame.symbol and frame.offset is not None and bool(frame.debug_id)


def image_ids(parsed: ParsedSnapshot) -> set[str]:
    """The ids of the images that frames without a name are in (what to look debug files up by)."""
    return {f.debug_id for f in parsed.frames if needs_name(f)}


def symbolicate_parsed(parsed: ParsedSnapshot, resolve: Resolver) -> int:
    """Name the frames `resolve` knows, rebuilding stacks and rows over the named frames (in
    place). Returns how many frames were named (0: nothing changed). A function named at several
    offsets is one frame, with the line of its call sites where they all agree."""
    expansion: dict[int, list[int]] = {}
    named_at: dict[FunctionKey, int] = {}
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
            else:
                _another_use(parsed.frames[at], place.file, place.line)
            chain.append(at)
        if chain:
            expansion[index] = chain
    if not expansion:
        return 0
    _restack(parsed, expansion)
    return len(expansion)


def _another_use(frame: FrameInfo, file: str, line: int | None) -> None:
    """A function's frame seen at another call site: the first file known stays its file, its
    line only while every use that gives one agrees."""
    if not frame.file and file:
        frame.file, frame.line = file, line
    elif line is not None and (file or frame.file, line) != (frame.file, frame.line):
        frame.line = None


def key_by_function(parsed: ParsedSnapshot) -> int:
    """Make every named frame its function's frame (in place): the frames of one (symbol,
    image, inlined) become one, without offset or address, with the first file a use gives and
    the line every use agrees on (else none); stacks and rows are merged over them. Returns how
    many frames changed (0: the document was keyed so already)."""
    uses: dict[FunctionKey, list[int]] = {}
    for index, frame in enumerate(parsed.frames):
        if frame.symbol:
            uses.setdefault((frame.symbol, frame.image, frame.inlined), []).append(index)
    expansion: dict[int, list[int]] = {}
    changed = 0
    for indices in uses.values():
        first = parsed.frames[indices[0]]
        others = [i for i in indices[1:] if parsed.frames[i] is not first]
        if not others and first.offset is None and first.address is None:
            continue  # a function's only frame, already without a place
        one = replace(first, offset=None, address=None, known_id=None)
        for index in others:
            other = parsed.frames[index]
            _another_use(one, other.file, other.line)
            one.is_system = one.is_system or other.is_system
            one.symbolicated = one.symbolicated or other.symbolicated
            one.debug_id = one.debug_id or other.debug_id
            expansion[index] = [indices[0]]
        changed += 1 + len(others)
        for index in indices:
            parsed.frames[index] = one
    if expansion:
        _restack(parsed, expansion)
    return changed


def _restack(parsed: ParsedSnapshot, expansion: dict[int, list[int]]) -> None:
    """Rebuild the stacks over what each frame index expands to, and move the rows to the nodes
    their stacks became (adding up rows that land on the same key)."""
    old_nodes = len(parsed.stack_parents)
    if all(len(chain) == 1 for chain in expansion.values()):  # frames merged, no chain grown
        merged_to = list(range(len(parsed.frames)))
        for index, (to,) in expansion.items():
            merged_to[index] = to
        tree = merged_tree(parsed.stack_parents, parsed.stack_frames, merged_to)
        parsed.stack_parents, parsed.stack_frames, remap = tree
    else:
        remap = _rebuild_stacks(parsed, expansion)
    if len(parsed.stack_parents) == old_nodes and all(n == i for i, n in enumerate(remap)):
        return  # no node merged or grew a chain: the rows stay on their nodes
    move_rows(parsed, remap)


def move_rows(parsed: ParsedSnapshot, remap: Sequence[int | None]) -> None:
    """Move the rows to the nodes their stacks became (`remap[old]`, None: no stack any more),
    adding up rows that land on the same key; an events run's blocks move with them."""
    parsed.blocks = [
        b._replace(key=(b.key[0], None if b.key[1] is None else remap[b.key[1]], *b.key[2:]))
        for b in parsed.blocks
    ]
    if parsed.block_columns is not None:
        to = [NONE if n is None else n for n in remap]
        parsed.block_columns = parsed.block_columns.with_stacks(to)
    if parsed.columns is not None:
        parsed.columns = parsed.columns.with_stacks([NONE if n is None else n for n in remap])
        return
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


def _rebuild_stacks(parsed: ParsedSnapshot, expansion: dict[int, list[int]]) -> list[int]:
    """The stack tree over the frames each frame expands to (a frame with inlined calls becomes
    a chain of nodes, frames merged into one merge their nodes); answers where each old node
    went."""
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
    if not usage or not parsed.stack_parents:
        return usage, 0
    keys = list(usage)
    number = {key: k for k, key in enumerate(keys)}
    # Each frame's unnamed image, by its number among `keys` (NONE: named, or in no image).
    unnamed = ints(
        [NONE if f.symbol else number.get((f.image, f.debug_id), NONE) for f in parsed.frames],
        len(parsed.frames),
    )
    node_frame = ints(parsed.stack_frames, len(parsed.stack_frames))
    node_image = unnamed[node_frame]
    used = np.unique(node_frame[node_image >= 0])  # the unnamed frames on some stack
    if not len(used):  # every frame on the stacks is named (a Go profile): no path to walk
        return usage, 0
    for k, frames in enumerate(np.bincount(unnamed[used], minlength=len(keys)).tolist()):
        usage[keys[k]].frames = frames
    on_path = _images_on_paths(index_ints(parsed.stack_parents), node_image, len(keys))
    rows = parsed.columns if parsed.columns is not None else RowColumns.from_dict(parsed.rows)
    with_stack = rows.stack >= 0
    on_stack = np.zeros(len(node_frame), dtype=np.int64)  # bytes per stack node
    np.add.at(
        on_stack, rows.stack[with_stack], rows.counts[with_stack, 1] + rows.counts[with_stack, 3]
    )
    for k, key in enumerate(keys):
        word, bit = divmod(k, 64)
        through = (on_path[:, word] >> np.uint64(bit)) & np.uint64(1) == 1
        usage[key].bytes = int(on_stack[through].sum())
    return usage, int(on_stack[on_path.any(axis=1)].sum())


def _images_on_paths(parents: np.ndarray, node_image: np.ndarray, images: int) -> np.ndarray:
    """Per stack node, the unnamed images on its path from the root, as bits (image k: bit k%64
    of word k//64): a node's are its parent's and its own frame's, a depth level at a time."""
    on_path = np.zeros((len(parents), (images + 63) // 64), dtype=np.uint64)
    marked = np.flatnonzero(node_image >= 0)
    image = node_image[marked]
    on_path[marked, image // 64] = np.uint64(1) << (image % 64).astype(np.uint64)  # their own
    for level in reversed(by_depth(depths(parents))):  # roots first: parents before children
        below = level[parents[level] >= 0]
        on_path[below] |= on_path[parents[below]]
    return on_path
