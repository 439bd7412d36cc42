"""The merged (not inverted) call tree, built whole (no Django; see `calltree` for the shared
types and the node ids).

It has at most as many nodes as there are stack nodes, and one pass from the leaves up gives
every inclusive total.
"""

from __future__ import annotations

from array import array
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field

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
class MergedCallTree(CallTree):
    """Nodes in parallel columns, parents always before children. Built in lists, then frozen
    into arrays (a tree of 200,000 nodes pickles into the cache and back in milliseconds)."""

    options: TreeOptions
    frames: dict[int, FrameInfo]
    parent: list[int] | array[int] = field(default_factory=list)  # -1 at the root level
    kind: list[int] | array[int] = field(default_factory=list)
    frame: list[int] | array[int] = field(default_factory=list)  # frame id (0 for thread/no stack)
    thread: dict[int, str | None] = field(default_factory=dict)  # thread roots -> thread name
    stack: dict[int, int] = field(default_factory=dict)  # plain tree: node -> stack node id
    # plain tree: the reverse, per base (-1, or the thread root): stack node id -> node
    by_stack: dict[int, dict[int, int]] = field(default_factory=dict)
    bytes: list[int] | array[int] = field(default_factory=list)
    count: list[int] | array[int] = field(default_factory=list)
    self_bytes: list[int] | array[int] = field(default_factory=list)
    self_count: list[int] | array[int] = field(default_factory=list)
    roots: list[int] = field(default_factory=list)
    # children of node n: child_flat[child_start[n] : child_start[n + 1]] once frozen
    child_start: array[int] = field(default_factory=lambda: array("q"))
    child_flat: array[int] = field(default_factory=lambda: array("q"))
    total_bytes: int = 0
    total_count: int = 0
    # While building only: (parent, kind, frame) -> node, and each node's children.
    _building: dict[tuple[int, int, int | None], int] = field(default_factory=dict, repr=False)
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

    def finish(self) -> None:
        """Once every node and its self counts are in: inclusive counts, siblings in order,
        the columns frozen into arrays."""
        _sum_inclusive(self)
        _drop_empty(self)
        _sort_children(self)
        self._freeze()

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

    def child_nodes(self, node: int) -> array[int]:
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
            found = next(
                (n for n in siblings if self.kind[n] == FRAME and self.frame[n] == frame), None
            )
            if found is None:
                return None
            node = found
        return node

    def view(self, node: int) -> NodeView:
        kind = self.kind[node]
        frame = self.frames.get(self.frame[node]) if kind == FRAME else None
        return NodeView(
            id=self.node_id(node),
            symbol=self.label(node),
            bytes=self.bytes[node],
            count=self.count[node],
            self_bytes=self.self_bytes[node],
            self_count=self.self_count[node],
            has_children=self.child_start[node + 1] > self.child_start[node],
            percent=tree_percent(
                self.bytes[node], self.count[node], self.total_bytes, self.total_count
            ),
            kind=KIND_NAMES[kind],
            **frame_fields(frame),
        )

    def children(
        self, node_id: str | None, offset: int = 0, limit: int = 100
    ) -> tuple[list[NodeView], int] | None:
        children: Sequence[int]
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

    def ancestors(self, node_id: str) -> list[NodeView] | None:
        node = self.find(node_id)
        if node is None:
            return None
        chain = []
        node = self.parent[node]
        while node >= 0:
            chain.append(self.view(node))
            node = self.parent[node]
        return chain[::-1]


def build_merged_tree(
    merged: dict[MergeKey, list[int]],
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

    tree.finish()
    return tree


def _chain_to_placed(
    stack_id: int, base: int, stacks: Mapping[int, StackInfo], placed: Container[tuple[int, int]]
) -> list[int]:
    """Stack nodes from `stack_id` outward up to (not including) the first one already placed
    under `base`, innermost first."""
    chain = []
    node: int | None = stack_id
    while node is not None and (base, node) not in placed:
        chain.append(node)
        node = stacks[node].parent_id
    return chain


def _place_plain(
    tree: MergedCallTree,
    base: int,
    stack_id: int,
    stacks: Mapping[int, StackInfo],
    placed: dict[tuple[int, int], int],
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
    placed: dict[tuple[int, int], tuple[int | None, int]],
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


def _drop_empty(tree: MergedCallTree) -> None:
    """Nodes with nothing at or below them are not listed (paths a data-mining rule emptied:
    a tree built from rows has none, and costs one pass to find so)."""
    empty = [n for n, (b, c) in enumerate(zip(tree.bytes, tree.count, strict=True)) if not (b or c)]
    for node in empty:
        parent = tree.parent[node]
        siblings = tree.roots if parent < 0 else tree._child_lists[parent]
        siblings.remove(node)


def _sort_children(tree: MergedCallTree) -> None:
    def order(node: int) -> tuple[int, int, str, int]:
        return order_key(tree.bytes[node], tree.count[node], tree.label(node), tree.frame[node])

    tree.roots.sort(key=order)
    for siblings in tree._child_lists:
        if len(siblings) > 1:
            siblings.sort(key=order)
