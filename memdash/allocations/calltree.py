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

Two shapes, one interface (`children`, `node`, `heaviest_path`, totals):

- `MergedCallTree` (not inverted) is built whole: it has at most as many nodes as there are
  stack nodes, and one pass from the leaves up gives every inclusive total.
- `InvertedCallTree` is lazy: an inverted tree repeats every caller chain under each allocation
  site and can have many times more nodes than there are stacks, so it keeps only the weight of
  each allocation site and works out the children of a node when asked, by following the
  sites' stacks outward (cost: the number of stacks that pass through the node). Its path ids are
  what make that possible: a node is found again from its frames alone.
"""

from __future__ import annotations

import base64
import binascii
import struct
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from memdash.allocations.analysis import frame_label

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


@dataclass(frozen=True, slots=True)
class TreeOptions:
    inverted: bool = False
    hide_system: bool = False
    by_thread: bool = False

    @property
    def uses_stack_ids(self) -> bool:
        return not self.inverted and not self.hide_system


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

    def as_dict(self) -> dict:
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
        }


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


class CallTree:
    """What both tree shapes answer."""

    options: TreeOptions
    total_bytes: int
    total_count: int

    def children(
        self, node_id: str | None, offset: int = 0, limit: int = 100
    ) -> tuple[list[NodeView], int] | None:
        """Children of the node (the roots for None) from `offset`, at most `limit`, and how many
        there are in all; None when the id is malformed or not in this tree."""
        raise NotImplementedError

    def node(self, node_id: str) -> NodeView | None:
        raise NotImplementedError

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


def _order_key(nbytes: int, count: int, label: str, frame: int | None) -> tuple:
    return (-nbytes, -count, label, frame or 0)


# --- the merged (not inverted) tree ---------------------------------------------------------------


@dataclass
class MergedCallTree(CallTree):
    """Nodes in parallel columns, parents always before children. Built in lists, then frozen
    into arrays (a tree of 200,000 nodes pickles into the cache and back in milliseconds)."""

    options: TreeOptions
    frames: dict[int, FrameInfo]
    parent: list[int] | array = field(default_factory=list)  # -1 at the root level
    kind: list[int] | array = field(default_factory=list)
    frame: list[int] | array = field(default_factory=list)  # frame id (0 for thread/no stack)
    thread: dict[int, str | None] = field(default_factory=dict)  # thread roots -> thread name
    stack: dict[int, int] = field(default_factory=dict)  # plain tree: node -> stack node id
    # plain tree: the reverse, per base (-1, or the thread root): stack node id -> node
    by_stack: dict[int, dict[int, int]] = field(default_factory=dict)
    bytes: list[int] | array = field(default_factory=list)
    count: list[int] | array = field(default_factory=list)
    self_bytes: list[int] | array = field(default_factory=list)
    self_count: list[int] | array = field(default_factory=list)
    roots: list[int] = field(default_factory=list)
    # children of node n: child_flat[child_start[n] : child_start[n + 1]] once frozen
    child_start: array = field(default_factory=lambda: array("q"))
    child_flat: array = field(default_factory=lambda: array("q"))
    total_bytes: int = 0
    total_count: int = 0
    # While building only: (parent, kind, frame) -> node, and each node's children.
    _building: dict[tuple, int] = field(default_factory=dict, repr=False)
    _child_lists: list[list[int]] = field(default_factory=list, repr=False)

    def __len__(self) -> int:
        return len(self.parent)

    # --- construction ------------------------------------------------------------------------

    def _child(self, parent: int, kind: int, frame: int | None) -> int:
        """The child of `parent` (-1: the root level) for this frame, created when new."""
        key = (parent, kind, frame)
        node = self._building.get(key)
        if node is None:
            node = self._building[key] = self._new_node(parent, kind, frame)
        return node

    def _new_node(self, parent: int, kind: int, frame: int | None) -> int:
        siblings = self.roots if parent < 0 else self._child_lists[parent]
        node = len(self.parent)
        self.parent.append(parent)
        self.kind.append(kind)
        self.frame.append(frame or 0)
        for column in (self.bytes, self.count, self.self_bytes, self.self_count):
            column.append(0)
        self._child_lists.append([])
        siblings.append(node)
        return node

    def _freeze(self) -> None:
        start, flat = array("q", [0]), array("q")
        for siblings in self._child_lists:
            flat.extend(siblings)
            start.append(len(flat))
        self.child_start, self.child_flat = start, flat
        for name in ("parent", "frame", "bytes", "count", "self_bytes", "self_count"):
            setattr(self, name, array("q", getattr(self, name)))
        self.kind = array("b", self.kind)
        self._building, self._child_lists = {}, []

    def child_nodes(self, node: int) -> array:
        return self.child_flat[self.child_start[node] : self.child_start[node + 1]]

    # --- reading -----------------------------------------------------------------------------

    def label(self, node: int) -> str:
        kind = self.kind[node]
        if kind == THREAD:
            return thread_label(self.thread[node])
        if kind == NO_STACK:
            return NO_STACK_LABEL
        return self.frames[self.frame[node]].label

    def node_id(self, node: int) -> str:
        chain: list[int] = []
        while node >= 0:
            chain.append(node)
            node = self.parent[node]
        chain.reverse()
        prefix = ""
        if self.kind[chain[0]] == THREAD:
            prefix = thread_key(self.thread[chain[0]])
            chain = chain[1:]
            if not chain:
                return prefix
            prefix += "."
        last = chain[-1]
        if self.kind[last] == NO_STACK:
            return prefix + "n"
        if self.options.uses_stack_ids:
            return prefix + str(self.stack[last])
        return prefix + pack_frames(self.frame[n] for n in chain)

    def find(self, node_id: str) -> int | None:
        """The node with this id, or None for an id that is malformed or not in this tree."""
        key, body = split_node_id(node_id)
        base = -1
        if key is not None:
            base = next(
                (r for r in self.roots if self.kind[r] == THREAD
                 and thread_key(self.thread[r]) == key),
                -2,
            )  # fmt: skip
            if base == -2:
                return None
            if not body:
                return base
        siblings = self.roots if base < 0 else self.child_nodes(base)
        if body == "n":
            return next((n for n in siblings if self.kind[n] == NO_STACK), None)
        if self.options.uses_stack_ids:
            try:
                stack_id = int(body)
            except ValueError:
                return None
            return self.by_stack.get(base, {}).get(stack_id)
        frames = unpack_frames(body)
        if frames is None:
            return None
        node = base
        for frame in frames:
            siblings = self.roots if node < 0 else self.child_nodes(node)
            node = next(
                (n for n in siblings if self.kind[n] == FRAME and self.frame[n] == frame), None
            )
            if node is None:
                return None
        return node

    def view(self, node: int) -> NodeView:
        kind = self.kind[node]
        frame = self.frames.get(self.frame[node]) if kind == FRAME else None
        return NodeView(
            id=self.node_id(node),
            symbol=self.label(node),
            image=frame.image if frame else "",
            bytes=self.bytes[node],
            count=self.count[node],
            self_bytes=self.self_bytes[node],
            self_count=self.self_count[node],
            has_children=self.child_start[node + 1] > self.child_start[node],
            percent=tree_percent(
                self.bytes[node], self.count[node], self.total_bytes, self.total_count
            ),
            kind=KIND_NAMES[kind],
            system=bool(frame and frame.is_system),
        )

    def children(
        self, node_id: str | None, offset: int = 0, limit: int = 100
    ) -> tuple[list[NodeView], int] | None:
        if node_id is None:
            children = self.roots
        else:
            node = self.find(node_id)
            if node is None:
                return None
            children = self.child_nodes(node)
        return [self.view(n) for n in children[offset : offset + limit]], len(children)

    def node(self, node_id: str) -> NodeView | None:
        node = self.find(node_id)
        return None if node is None else self.view(node)


# --- the inverted tree (lazy) -------------------------------------------------------------------


@dataclass
class _Group:
    """One node of the inverted tree while it is being listed: its frame path and the stack
    nodes (cursors) that reach it, each with the (bytes, count) of the allocations behind it."""

    kind: int
    thread: str | None
    path: tuple[int, ...] = ()
    cursors: dict[int, tuple[int, int]] = field(default_factory=dict)
    bytes: int = 0
    count: int = 0
    is_site: bool = False


@dataclass
class InvertedCallTree(CallTree):
    options: TreeOptions
    frames: dict[int, FrameInfo]
    parent_of: dict[int, int | None]  # stack node -> parent stack node
    frame_of: dict[int, int]  # stack node -> frame
    # thread (None unless separated by thread) -> frame of the allocation site ->
    # allocation-site stack node -> (bytes, count)
    sites: dict[str | None, dict[int, dict[int, tuple[int, int]]]] = field(default_factory=dict)
    no_stack: dict[str | None, tuple[int, int]] = field(default_factory=dict)
    # thread -> its roots, heaviest first: (site frame, or None for no stack; bytes; count).
    # Sorted once when built, so listing the roots of a large tree costs no sort per request.
    site_order: dict[str | None, list[tuple[int | None, int, int]]] = field(default_factory=dict)
    total_bytes: int = 0
    total_count: int = 0
    _callers: dict[int, int | None] = field(default_factory=dict, repr=False)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_callers"] = {}  # a memo, rebuilt on demand
        return state

    # --- stepping outward ----------------------------------------------------------------------

    def _caller(self, stack_id: int) -> int | None:
        """The stack node of the caller shown below `stack_id` in the inverted tree: its parent,
        or with system libraries hidden, its nearest app ancestor."""
        try:
            return self._callers[stack_id]
        except KeyError:
            pass
        node = self.parent_of[stack_id]
        if self.options.hide_system:
            while node is not None and self.frames[self.frame_of[node]].is_system:
                node = self.parent_of[node]
        self._callers[stack_id] = node
        return node

    def _site_groups(self, thread: str | None) -> list[_Group]:
        """The allocation sites of a thread (of all threads for None), merged by frame."""
        sites = self.sites.get(thread, {})
        return [
            _Group(FRAME, thread, (frame,), sites[frame], nbytes, count, is_site=True)
            if frame is not None
            else _Group(NO_STACK, thread, bytes=nbytes, count=count, is_site=True)
            for frame, nbytes, count in self.site_order.get(thread, ())
        ]

    def _sort_sites(self) -> None:
        for thread in set(self.sites) | set(self.no_stack):
            entries: list[tuple[int | None, int, int]] = []
            for frame, cursors in self.sites.get(thread, {}).items():
                entries.append(
                    (frame, sum(w[0] for w in cursors.values()),
                     sum(w[1] for w in cursors.values()))
                )  # fmt: skip
            if thread in self.no_stack:
                entries.append((None, *self.no_stack[thread]))
            entries.sort(
                key=lambda e: _order_key(
                    e[1], e[2], self.frames[e[0]].label if e[0] is not None else NO_STACK_LABEL,
                    e[0],
                )
            )  # fmt: skip
            self.site_order[thread] = entries

    def _caller_groups(self, group: _Group, only_frame: int | None = None) -> list[_Group]:
        """The callers of a node, merged by frame (only those of one frame when given)."""
        groups: dict[int, _Group] = {}
        for cursor, (nbytes, count) in group.cursors.items():
            caller = self._caller(cursor)
            if caller is None:
                continue
            frame = self.frame_of[caller]
            if only_frame is not None and frame != only_frame:
                continue
            child = groups.get(frame)
            if child is None:
                child = groups[frame] = _Group(FRAME, group.thread, group.path + (frame,))
            known = child.cursors.get(caller)
            child.cursors[caller] = (
                (nbytes, count) if known is None else (known[0] + nbytes, known[1] + count)
            )
            child.bytes += nbytes
            child.count += count
        return self._sorted(list(groups.values()))

    def _thread_groups(self) -> list[_Group]:
        groups = []
        for thread, entries in self.site_order.items():
            group = _Group(THREAD, thread)
            group.bytes = sum(e[1] for e in entries)
            group.count = sum(e[2] for e in entries)
            groups.append(group)
        return self._sorted(groups)

    def _sorted(self, groups: list[_Group]) -> list[_Group]:
        groups.sort(key=lambda g: _order_key(g.bytes, g.count, self._label(g), _last(g.path)))
        return groups

    def _children_of(self, group: _Group | None) -> list[_Group]:
        if group is None:
            if self.options.by_thread:
                return self._thread_groups()
            return self._site_groups(None)
        if group.kind == THREAD:
            return self._site_groups(group.thread)
        if group.kind == NO_STACK:
            return []
        return self._caller_groups(group)

    def _find(self, node_id: str) -> _Group | None:
        key, body = split_node_id(node_id)
        thread: str | None = None
        if (key is not None) != self.options.by_thread:
            return None
        if key is not None:
            thread_group = next((g for g in self._thread_groups() if _key(g) == key), None)
            if thread_group is None or not body:
                return thread_group
            thread = thread_group.thread
        if body == "n":
            if thread not in self.no_stack:
                return None
            nbytes, count = self.no_stack[thread]
            return _Group(NO_STACK, thread, bytes=nbytes, count=count, is_site=True)
        frames = unpack_frames(body)
        if not frames:
            return None
        cursors = self.sites.get(thread, {}).get(frames[0])
        if cursors is None:
            return None
        group = _Group(FRAME, thread, (frames[0],), cursors, is_site=True)
        for frame in frames[1:]:
            found = self._caller_groups(group, only_frame=frame)
            if not found:
                return None
            group = found[0]
        if group.is_site:
            group.bytes = sum(w[0] for w in cursors.values())
            group.count = sum(w[1] for w in cursors.values())
        return group

    # --- views ---------------------------------------------------------------------------------

    def _label(self, group: _Group) -> str:
        if group.kind == THREAD:
            return thread_label(group.thread)
        if group.kind == NO_STACK:
            return NO_STACK_LABEL
        return self.frames[group.path[-1]].label

    def _id(self, group: _Group) -> str:
        prefix = ""
        if self.options.by_thread:
            prefix = _key(group)
            if group.kind == THREAD:
                return prefix
            prefix += "."
        if group.kind == NO_STACK:
            return prefix + "n"
        return prefix + pack_frames(group.path)

    def _has_children(self, group: _Group) -> bool:
        if group.kind == THREAD:
            return True
        return any(self._caller(c) is not None for c in group.cursors)

    def _view(self, group: _Group) -> NodeView:
        frame = self.frames[group.path[-1]] if group.kind == FRAME else None
        return NodeView(
            id=self._id(group),
            symbol=self._label(group),
            image=frame.image if frame else "",
            bytes=group.bytes,
            count=group.count,
            self_bytes=group.bytes if group.is_site else 0,
            self_count=group.count if group.is_site else 0,
            has_children=self._has_children(group),
            percent=tree_percent(group.bytes, group.count, self.total_bytes, self.total_count),
            kind=KIND_NAMES[group.kind],
            system=bool(frame and frame.is_system),
        )

    def children(
        self, node_id: str | None, offset: int = 0, limit: int = 100
    ) -> tuple[list[NodeView], int] | None:
        group = None
        if node_id is not None:
            group = self._find(node_id)
            if group is None:
                return None
        children = self._children_of(group)
        return [self._view(g) for g in children[offset : offset + limit]], len(children)

    def node(self, node_id: str) -> NodeView | None:
        group = self._find(node_id)
        return None if group is None else self._view(group)

    # Both walk the groups directly rather than finding each node again from the root.

    def heaviest_path(self) -> list[str]:
        path: list[str] = []
        children = self._children_of(None)
        while children:
            path.append(self._id(children[0]))
            children = self._children_of(children[0])
        return path

    def heaviest_pages(self, limit: int) -> list[tuple[str, list[NodeView], int]]:
        levels: list[tuple[str, list[NodeView], int]] = []
        children = self._children_of(None)
        while children and self._has_children(children[0]):
            parent = children[0]
            children = self._children_of(parent)
            levels.append((self._id(parent), [self._view(g) for g in children[:limit]],
                           len(children)))  # fmt: skip
        return levels


def _last(path: tuple[int, ...]) -> int | None:
    return path[-1] if path else None


def _key(group: _Group) -> str:
    return thread_key(group.thread)


# --- building ------------------------------------------------------------------------------------


def build_call_tree(
    rows: Iterable[TreeRow],
    stacks: Mapping[int, StackInfo],
    frames: Mapping[int, FrameInfo],
    options: TreeOptions = TreeOptions(),
) -> CallTree:
    """The merged call tree of `rows` under `options` (see the module docstring).

    `stacks` must hold every node on the path of each row's stack, and `frames` their frames;
    a missing one raises KeyError (the data is inconsistent, not the user's input).
    """
    merged = _merge_rows(rows, options.by_thread)
    if options.inverted:
        return _build_inverted(merged, stacks, frames, options)
    return _build_merged(merged, stacks, frames, options)


def _merge_rows(rows: Iterable[TreeRow], by_thread: bool) -> dict[tuple, list[int]]:
    """Rows with the same stack (and thread, when separating by thread) add up; rows with
    nothing in them are left out."""
    merged: dict[tuple, list[int]] = {}
    for row in rows:
        if not row.bytes and not row.count:
            continue
        key = (row.thread if by_thread else None, row.stack_id)
        acc = merged.get(key)
        if acc is None:
            merged[key] = [row.bytes, row.count]
        else:
            acc[0] += row.bytes
            acc[1] += row.count
    return merged


def _build_inverted(
    merged: dict[tuple, list[int]],
    stacks: Mapping[int, StackInfo],
    frames: Mapping[int, FrameInfo],
    options: TreeOptions,
) -> InvertedCallTree:
    tree = InvertedCallTree(options=options, frames={}, parent_of={}, frame_of={})
    sites: dict[tuple[str | None, int], list[int]] = {}
    no_stack: dict[str | None, list[int]] = {}
    for (thread, stack_id), (nbytes, count) in merged.items():
        tree.total_bytes += nbytes
        tree.total_count += count
        if stack_id is None:
            acc = no_stack.setdefault(thread, [0, 0])
        else:
            site = _allocation_site(stack_id, stacks, frames, options.hide_system)
            acc = sites.setdefault((thread, site), [0, 0])
        acc[0] += nbytes
        acc[1] += count
    for (thread, site), (nbytes, count) in sites.items():
        frame = stacks[site].frame_id
        tree.sites.setdefault(thread, {}).setdefault(frame, {})[site] = (nbytes, count)
        _keep_path(tree, site, stacks, frames)
    tree.no_stack = {thread: (w[0], w[1]) for thread, w in no_stack.items()}
    tree._sort_sites()
    return tree


def _keep_path(
    tree: InvertedCallTree,
    stack_id: int,
    stacks: Mapping[int, StackInfo],
    frames: Mapping[int, FrameInfo],
) -> None:
    """Copy the stack nodes and frames from a site outward (only what the tree can reach)."""
    node: int | None = stack_id
    while node is not None and node not in tree.parent_of:
        info = stacks[node]
        tree.parent_of[node] = info.parent_id
        tree.frame_of[node] = info.frame_id
        tree.frames[info.frame_id] = frames[info.frame_id]
        node = info.parent_id


def _allocation_site(
    stack_id: int,
    stacks: Mapping[int, StackInfo],
    frames: Mapping[int, FrameInfo],
    hide_system: bool,
) -> int:
    """The stack node where the allocation is counted: the stack's innermost node, or with
    system libraries hidden its innermost app node (the outermost node when it has none)."""
    if not hide_system:
        return stack_id
    node: int | None = stack_id
    outermost = stack_id
    while node is not None:
        if not frames[stacks[node].frame_id].is_system:
            return node
        outermost = node
        node = stacks[node].parent_id
    return outermost


def _build_merged(
    merged: dict[tuple, list[int]],
    stacks: Mapping[int, StackInfo],
    frames: Mapping[int, FrameInfo],
    options: TreeOptions,
) -> MergedCallTree:
    tree = MergedCallTree(options=options, frames=dict(frames))
    thread_roots: dict[str | None, int] = {}
    placed_plain: dict[tuple[int, int], int] = {}
    placed_folded: dict[tuple[int, int], tuple[int | None, int]] = {}

    for (thread, stack_id), (nbytes, ncount) in merged.items():
        base = -1
        if options.by_thread:
            base = thread_roots.get(thread, -1)
            if base < 0:
                base = thread_roots[thread] = tree._new_node(-1, THREAD, None)
                tree.thread[base] = thread
        if stack_id is None:
            site = tree._child(base, NO_STACK, None)
        elif options.hide_system:
            site = _place_folded(tree, base, stack_id, stacks, frames, placed_folded)
        else:
            site = _place_plain(tree, base, stack_id, stacks, placed_plain)
        tree.self_bytes[site] += nbytes
        tree.self_count[site] += ncount
        tree.total_bytes += nbytes
        tree.total_count += ncount

    _sum_inclusive(tree)
    _sort_children(tree)
    tree._freeze()
    return tree


def _chain_to_placed(stack_id: int, base: int, stacks: Mapping[int, StackInfo], placed) -> list:
    """Stack nodes from `stack_id` outward up to (not including) the first one already placed
    under `base`, innermost first."""
    chain = []
    node: int | None = stack_id
    while node is not None and (base, node) not in placed:
        chain.append(node)
        node = stacks[node].parent_id
    return chain


def _place_plain(
    tree: MergedCallTree, base: int, stack_id: int, stacks: Mapping[int, StackInfo], placed: dict
) -> int:
    """The tree node of a stack in the plain tree: the same prefix tree as the stack nodes, with
    nodes of identical frame paths merged (the smallest stack id names the merged node)."""
    chain = _chain_to_placed(stack_id, base, stacks, placed)
    for node in reversed(chain):
        parent = stacks[node].parent_id
        above = base if parent is None else placed[(base, parent)]
        placed[(base, node)] = here = tree._child(above, FRAME, stacks[node].frame_id)
        known = tree.stack.get(here)
        if known is None or node < known:
            tree.stack[here] = node
        tree.by_stack.setdefault(base, {})[node] = here
    return placed[(base, stack_id)]


def _place_folded(
    tree: MergedCallTree,
    base: int,
    stack_id: int,
    stacks: Mapping[int, StackInfo],
    frames: Mapping[int, FrameInfo],
    placed: dict,
) -> int:
    """The tree node of a stack with system frames hidden. For each stack node we remember
    (tree node of its app frames so far or None, its outermost frame)."""
    chain = _chain_to_placed(stack_id, base, stacks, placed)
    for node in reversed(chain):
        parent = stacks[node].parent_id
        above_app, outermost = (None, None) if parent is None else placed[(base, parent)]
        frame = stacks[node].frame_id
        if not frames[frame].is_system:
            above_app = tree._child(base if above_app is None else above_app, FRAME, frame)
        placed[(base, node)] = (above_app, frame if outermost is None else outermost)
    app_node, outermost = placed[(base, stack_id)]
    if app_node is not None:
        return app_node
    return tree._child(base, FRAME, outermost)


def _sum_inclusive(tree: MergedCallTree) -> None:
    """Inclusive counts: a node's self counts plus everything below it. Children are always
    created after their parent, so one pass from the last node up is enough."""
    tree.bytes = list(tree.self_bytes)
    tree.count = list(tree.self_count)
    for node in range(len(tree.parent) - 1, -1, -1):
        parent = tree.parent[node]
        if parent >= 0:
            tree.bytes[parent] += tree.bytes[node]
            tree.count[parent] += tree.count[node]


def _sort_children(tree: MergedCallTree) -> None:
    def order(node: int) -> tuple:
        return _order_key(tree.bytes[node], tree.count[node], tree.label(node), tree.frame[node])

    tree.roots.sort(key=order)
    for siblings in tree._child_lists:
        if len(siblings) > 1:
            siblings.sort(key=order)
