"""The inverted call tree, lazy (no Django; see `calltree` for the shared types and the node ids).

An inverted tree repeats every caller chain under each allocation site and can have many times
more nodes than there are stacks, so it keeps only the weight of each allocation site and works
out the children of a node when asked, by following the sites' stacks outward (cost: the number
of stacks that pass through the node). Its path ids are what make that possible: a node is found
again from its frames alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memdash.allocations.logic.calltree.tree import (
    FRAME,
    KIND_NAMES,
    NO_STACK,
    NO_STACK_LABEL,
    THREAD,
    CallTree,
    FrameInfo,
    MergeKey,
    NodeView,
    StackInfo,
    TreeOptions,
    frame_fields,
    order_key,
    pack_frames,
    split_node_id,
    thread_key,
    thread_label,
    tree_percent,
    unpack_frames,
)


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

    def __getstate__(self) -> dict[str, Any]:
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
                key=lambda e: order_key(
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
        groups.sort(key=lambda g: order_key(g.bytes, g.count, self._label(g), _last(g.path)))
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
            bytes=group.bytes,
            count=group.count,
            self_bytes=group.bytes if group.is_site else 0,
            self_count=group.count if group.is_site else 0,
            has_children=self._has_children(group),
            percent=tree_percent(group.bytes, group.count, self.total_bytes, self.total_count),
            kind=KIND_NAMES[group.kind],
            **frame_fields(frame),
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

    # For what walks many nodes at once (a flame graph): the groups themselves, rather than each
    # node found again from its id.

    def child_groups(self, group: _Group | None) -> list[_Group]:
        """The children of a group (the roots for None), heaviest first."""
        return self._children_of(group)

    def group(self, node_id: str) -> _Group | None:
        return self._find(node_id)

    def group_view(self, group: _Group) -> NodeView:
        return self._view(group)


def _last(path: tuple[int, ...]) -> int | None:
    return path[-1] if path else None


def _key(group: _Group) -> str:
    return thread_key(group.thread)


def build_inverted_tree(
    merged: dict[MergeKey, list[int]],
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
