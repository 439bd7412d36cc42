"""Merged call trees of allocations, built from plain data (no Django).

Input: allocation rows (the innermost stack node of each, its thread and its counts under the
chosen lifespan), the call-stack prefix tree (node id -> parent id, frame id) and the frames
(id -> symbol, image, offset, is_system). Output: a call tree in which identical frame paths are
merged, every node carries inclusive counts (everything at or below it) and self counts
(allocations made in the frame itself), and children are sorted by bytes (then count, then
label, so the order is the same on every run).

Options, as Instruments offers them:

- inverted: the allocation sites are the roots and their callers are below them. A node's self
  counts are still "allocations made in this frame itself", so in an inverted tree they sit on
  the roots (self == inclusive there) and callers have none.
- hide_system: frames of system images are dropped and what they allocated is counted in their
  nearest app caller. A stack made only of system frames (a thread the OS started and that never
  entered app code) keeps its outermost frame (`start_wqthread`, `_pthread_start`, ...), so its
  allocations stay visible, merge with others started the same way, and still add up to the
  total.
- by_thread: a root per thread (named by the thread; rows without a thread under
  "(unknown thread)"), each with its own tree below it.
- flatten_recursion, charge (libraries charged to their callers), search (Involves Symbol): what
  profilers add, done on the stacks before the tree is built (`calltree_transform`).

Rows without a stack are gathered in one "(no stack)" node at the root level (under their
thread's root when separated by thread), so the roots always add up to the total.

Node ids are strings that can be passed back in a URL (`?node=`):

- `<stack node id>` (decimal, may be negative) in the plain tree (not inverted, not folded): the
  id of the stack node itself, the same id the precomputed default tree uses;
- `p<chunks>` in inverted or folded trees: the node's frame ids from the root down, each packed
  as a signed 64-bit big-endian integer in unpadded base64url (11 characters a level);
- `n` for the "(no stack)" node;
- with by_thread, `t<base64url of the thread name>` (`t~` for an unknown thread) is the thread's
  root and `t<…>.<id>` a node below it.

Two shapes, one interface (`CallTree`: `children`, `node`, `heaviest_path`, totals):
`calltree_merged.MergedCallTree` (not inverted, built whole) and
`calltree_inverted.InvertedCallTree` (lazy); `calltree_build.build_call_tree` builds the one the
options ask for. This module holds what they share: the input and output types, the node ids and
the order of siblings.
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypedDict

from memdash.allocations.logic.analysis import frame_label

FRAME, THREAD, NO_STACK = 0, 1, 2
KIND_NAMES = ("frame", "thread", "no_stack")
NO_STACK_LABEL = "(no stack)"
UNKNOWN_THREAD_LABEL = "(unknown thread)"
_UNKNOWN_THREAD_KEY = "t~"
_CHUNK = 11  # base64url characters of one packed 64-bit frame id, without padding


@dataclass(frozen=True, slots=True)
class FrameInfo:
    symbol: str = ""
    image: str = ""
    offset: int | None = None
    is_system: bool = False
    address: int | None = None
    file: str = ""
    line: int | None = None
    inlined: bool = False  # a call inlined into its caller (named from a debug file)

    @property
    def label(self) -> str:
        return frame_label(self.symbol, self.image, self.offset, self.address)


@dataclass(frozen=True, slots=True)
class StackInfo:
    parent_id: int | None
    frame_id: int


@dataclass(frozen=True, slots=True)
class TreeRow:
    """Allocations of one stack (innermost node; None = no stack) on one thread (by name)."""

    stack_id: int | None
    thread: str | None
    bytes: int
    count: int


# (thread name when separating by thread, else None; innermost stack node, None for no stack)
MergeKey = tuple[str | None, int | None]


@dataclass(frozen=True, slots=True)
class TreeOptions:
    inverted: bool = False
    hide_system: bool = False
    by_thread: bool = False
    # What profilers add (`calltree_transform`): recursion collapsed into one node, the frames
    # of these libraries (image names) charged to their callers, only the stacks through a frame
    # whose label contains `search` (case-insensitive).
    flatten_recursion: bool = False
    charge: tuple[str, ...] = ()
    search: str = ""
    # A tree made of another by `calltree_mining` (symbols charged, pruned, removed; a
    # sandwich's halves): it names its nodes by their frame paths.
    mined: bool = False

    @property
    def rewrites_stacks(self) -> bool:
        return self.flatten_recursion or bool(self.charge)

    @property
    def uses_stack_ids(self) -> bool:
        return not (self.inverted or self.hide_system or self.rewrites_stacks or self.mined)


@dataclass(frozen=True, slots=True)
class NodeView:
    """One node as the API returns it."""

    id: str
    symbol: str
    image: str
    bytes: int
    count: int
    self_bytes: int
    self_count: int
    has_children: bool
    percent: float
    kind: str = "frame"  # frame | thread | no_stack
    system: bool = False
    # The frame names a function (false: `image + 0xoffset`, an address, a thread, no stack),
    # its source location where known, and whether it is a call inlined into its caller.
    symbolicated: bool = False
    file: str = ""
    line: int | None = None
    inlined: bool = False

    @property
    def fields(self) -> FrameFields:
        """What the node shows of its frame, as `frame_fields` gives it."""
        return FrameFields(
            image=self.image, system=self.system, symbolicated=self.symbolicated,
            file=self.file, line=self.line, inlined=self.inlined,
        )  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "symbol": self.symbol,
            "image": self.image,
            "bytes": self.bytes,
            "count": self.count,
            "self_bytes": self.self_bytes,
            "self_count": self.self_count,
            "has_children": self.has_children,
            "percent": self.percent,
            "kind": self.kind,
            "system": self.system,
            "symbolicated": self.symbolicated,
            "file": self.file,
            "line": self.line,
            "inlined": self.inlined,
        }


class FrameFields(TypedDict):
    """What a node view takes from its frame (`frame_fields`)."""

    image: str
    system: bool
    symbolicated: bool
    file: str
    line: int | None
    inlined: bool


def frame_fields(frame: FrameInfo | None) -> FrameFields:
    """A node's frame as its view shows it (a node without a frame: a thread, no stack)."""
    if frame is None:
        return FrameFields(
            image="", system=False, symbolicated=False, file="", line=None, inlined=False
        )
    return FrameFields(
        image=frame.image, system=frame.is_system, symbolicated=bool(frame.symbol),
        file=frame.file, line=frame.line, inlined=frame.inlined,
    )  # fmt: skip


def percent_of(value: int, total: int) -> float:
    return round(100.0 * value / total, 2) if total else 0.0


def tree_percent(nbytes: int, count: int, total_bytes: int, total_count: int) -> float:
    """% of the tree's total bytes (of its count when nothing has a size)."""
    if total_bytes:
        return percent_of(nbytes, total_bytes)
    return percent_of(count, total_count)


def thread_key(name: str | None) -> str:
    if name is None:
        return _UNKNOWN_THREAD_KEY
    return "t" + base64.urlsafe_b64encode(name.encode()).decode().rstrip("=")


def thread_label(name: str | None) -> str:
    return UNKNOWN_THREAD_LABEL if name is None else name


def pack_frames(frame_ids: Iterable[int]) -> str:
    return "p" + "".join(
        base64.urlsafe_b64encode(struct.pack(">q", f)).decode()[:_CHUNK] for f in frame_ids
    )


def unpack_frames(body: str) -> list[int] | None:
    """Frame ids of a `p…` id body, or None when it is not one."""
    if not body.startswith("p"):
        return None
    text = body[1:]
    if not text or len(text) % _CHUNK:
        return None
    frames = []
    for start in range(0, len(text), _CHUNK):
        try:
            packed = base64.urlsafe_b64decode(text[start : start + _CHUNK] + "=")
        except (binascii.Error, ValueError):
            return None
        if len(packed) != 8:
            return None
        frames.append(struct.unpack(">q", packed)[0])
    return frames


def split_node_id(node_id: str) -> tuple[str | None, str]:
    """(thread key or None, the rest) of a node id; the rest is "" for a thread's root."""
    if node_id.startswith("t"):
        key, _, body = node_id.partition(".")
        return key, body
    return None, node_id


def parent_ids(node_id: str) -> list[str]:
    """The ids of the callers of a node named by its path (`p…`, under its thread's root when
    there is one), from the root down; [] for an id of another kind."""
    key, body = split_node_id(node_id)
    frames = unpack_frames(body) or []
    ids = [] if key is None or not body else [key]
    prefix = "" if key is None else key + "."
    ids.extend(prefix + pack_frames(frames[:depth]) for depth in range(1, len(frames)))
    return ids


class CallTree:
    """What both tree shapes answer."""

    options: TreeOptions
    total_bytes: int
    total_count: int
    # A node holds what its children hold (its figures are sums); False for medians, whose
    # children may outweigh their parent (`per_snapshot.PerSnapshotTree`).
    additive: bool = True

    def children(
        self, node_id: str | None, offset: int = 0, limit: int = 100
    ) -> tuple[list[NodeView], int] | None:
        """Children of the node (the roots for None) from `offset`, at most `limit`, and how many
        there are in all; None when the id is malformed or not in this tree."""
        raise NotImplementedError

    def node(self, node_id: str) -> NodeView | None:
        raise NotImplementedError

    def ancestors(self, node_id: str) -> list[NodeView] | None:
        """The nodes from the root down to the node's parent (None when there is no such node).
        This default knows the callers of path ids (`p…`) only; a tree named by stack ids says
        its own."""
        if self.node(node_id) is None:
            return None
        return [v for v in (self.node(i) for i in parent_ids(node_id)) if v is not None]

    def heaviest_path(self) -> list[str]:
        """Ids from the heaviest root, following the heaviest child, down to a leaf."""
        path: list[str] = []
        parent: str | None = None
        while True:
            page = self.children(parent, 0, 1)
            if not page or not page[0]:
                return path
            parent = page[0][0].id
            path.append(parent)

    def heaviest_pages(self, limit: int) -> list[tuple[str, list[NodeView], int]]:
        """For each node of the heaviest path that has children: (its id, the first `limit` of
        its children, how many there are), so a page can open the path in one request."""
        levels: list[tuple[str, list[NodeView], int]] = []
        page = self.children(None, 0, limit)
        while page and page[0] and page[0][0].has_children:
            parent = page[0][0].id
            page = self.children(parent, 0, limit)
            if page is None:
                break
            levels.append((parent, page[0], page[1]))
        return levels


def order_key(nbytes: int, count: int, label: str, frame: int | None) -> tuple[int, int, str, int]:
    """Siblings by bytes, then count, then label (then frame id): the same order on every run."""
    return (-nbytes, -count, label, frame or 0)
