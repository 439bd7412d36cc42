"""What the best profilers do to a call tree besides Instruments' options (no Django).

On the stacks, before the tree is built (`calltree_build` calls them; see `TreeOptions`):

- charge to caller (`charge`): the frames of the named libraries (image names) are removed from
  every stack, so what they allocated is counted in the frame that called into the library. A
  stack made only of such frames keeps its outermost frame (as hide_system does), so its
  allocations stay visible and the roots still add up to the total.
- flatten recursion (`flatten_recursion`): a frame already on the path (a call to itself,
  directly or through other frames) takes the path back to that node, so the cycle collapses into
  one node: A > B > A > C becomes A > C (B keeps only what it allocated outside the cycle).
- involves symbol (`search`): only the stacks with a frame whose label contains the text
  (case-insensitive) are kept, so every path of the tree goes through a match.

Rewritten stacks get new ids of their own (a trie of the rewritten frame paths); the tree then
names its nodes by their frame paths (`TreeOptions.uses_stack_ids` is false), so a node keeps
its id from one request to the next.

On a built tree: `FocusedTree`, a node's subtree as the tree (the node its only root).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Container, Iterable, Mapping

from memdash.allocations.logic.calltree.tree import (
    CallTree,
    FrameInfo,
    NodeView,
    StackInfo,
    TreeOptions,
    TreeRow,
    tree_percent,
)

Stacks = dict[int, StackInfo]


def matches(label: str, needle: str) -> bool:
    """Does a frame's label contain the searched text (case-insensitive)?"""
    return bool(needle) and needle.casefold() in label.casefold()


class _Trie:
    """The rewritten stacks: one node per distinct frame path, ids from 1."""

    def __init__(self) -> None:
        self.stacks: Stacks = {}
        self._index: dict[tuple[int | None, int], int] = {}

    def child(self, parent: int | None, frame: int) -> int:
        key = (parent, frame)
        node = self._index.get(key)
        if node is None:
            node = self._index[key] = len(self.stacks) + 1
            self.stacks[node] = StackInfo(parent, frame)
        return node

    def ancestor_with(self, node: int | None, frame: int) -> int | None:
        """The node of `frame` on the path from `node` up to its root, if any."""
        while node is not None:
            info = self.stacks[node]
            if info.frame_id == frame:
                return node
            node = info.parent_id
        return None


def _outermost_first(
    stack_id: int, stacks: Mapping[int, StackInfo], done: Container[int]
) -> list[int]:
    """The stack nodes from `stack_id` up to (not including) the first one already `done`,
    outermost first: the order in which each is worked out from its parent's result."""
    chain = []
    node: int | None = stack_id
    while node is not None and node not in done:
        chain.append(node)
        node = stacks[node].parent_id
    chain.reverse()
    return chain


def rewrite_stacks(
    rows: Iterable[TreeRow],
    stacks: Mapping[int, StackInfo],
    frames: Mapping[int, FrameInfo],
    charge: Iterable[str] = (),
    flatten_recursion: bool = False,
    hide_system: bool = False,
) -> tuple[list[TreeRow], Stacks]:
    """The rows on rewritten stacks (libraries charged to their callers, recursion flattened)
    and those stacks. `stacks` must hold every node on the path of each row's stack. With
    `hide_system`, system frames go as charged ones do (the tree hides them anyway; recursion is
    then flattened over the frames it shows)."""
    charged = frozenset(charge)
    trie = _Trie()
    # original stack node -> (rewritten node so far or None, outermost charged frame or None)
    state: dict[int, tuple[int | None, int | None]] = {}

    def place(stack_id: int) -> int:
        for step in _outermost_first(stack_id, stacks, state):
            parent = stacks[step].parent_id
            here, outermost = (None, None) if parent is None else state[parent]
            frame = stacks[step].frame_id
            info = frames[frame]
            if info.image in charged or (hide_system and info.is_system):
                if here is None and outermost is None:
                    outermost = frame
            else:
                again = trie.ancestor_with(here, frame) if flatten_recursion else None
                here = again if again is not None else trie.child(here, frame)
            state[step] = (here, outermost)
        here, outermost = state[stack_id]
        if here is None:  # only charged frames: the outermost one stands for the stack
            assert outermost is not None
            here = trie.child(None, outermost)
        return here

    rewritten = [
        row if row.stack_id is None else dataclasses.replace(row, stack_id=place(row.stack_id))
        for row in rows
    ]
    return rewritten, trie.stacks


def involving(
    rows: Iterable[TreeRow],
    stacks: Mapping[int, StackInfo],
    frames: Mapping[int, FrameInfo],
    needle: str,
    hide_system: bool = False,
) -> list[TreeRow]:
    """The rows whose stack has a frame whose label contains `needle` (case-insensitive); with
    system libraries hidden, only app frames count (a hidden frame cannot be shown as a match),
    but for the outermost frame of a stack made only of system frames, which the tree shows."""
    through: dict[int, bool] = {}  # stack node -> a visible frame on its path matches
    outermost_match: dict[int, bool] = {}  # the outermost frame matches
    app_frame: dict[int, bool] = {}  # an app frame is on the path

    def involves(stack_id: int) -> bool:
        for step in _outermost_first(stack_id, stacks, through):
            parent = stacks[step].parent_id
            frame = frames[stacks[step].frame_id]
            hit = matches(frame.label, needle)
            shown = not (hide_system and frame.is_system)
            through[step] = (parent is not None and through[parent]) or (shown and hit)
            outermost_match[step] = hit if parent is None else outermost_match[parent]
            app_frame[step] = not frame.is_system or (parent is not None and app_frame[parent])
        if through[stack_id]:
            return True
        # all-system stacks keep their outermost frame (see calltree: hide_system)
        return hide_system and not app_frame[stack_id] and outermost_match[stack_id]

    return [row for row in rows if row.stack_id is not None and involves(row.stack_id)]


def transform_rows(
    rows: Iterable[TreeRow],
    stacks: Mapping[int, StackInfo],
    frames: Mapping[int, FrameInfo],
    options: TreeOptions,
) -> tuple[list[TreeRow], Mapping[int, StackInfo]]:
    """The rows and stacks the tree is built from under the options' rewrites and search."""
    out_rows = list(rows)
    out_stacks: Mapping[int, StackInfo] = stacks
    if options.rewrites_stacks:
        out_rows, out_stacks = rewrite_stacks(
            out_rows, stacks, frames, options.charge, options.flatten_recursion,
            options.hide_system,
        )  # fmt: skip
    if options.search:
        out_rows = involving(out_rows, out_stacks, frames, options.search, options.hide_system)
    return out_rows, out_stacks


class FocusedTree(CallTree):
    """A node's subtree as a tree of its own: the node is the only root, its totals the tree's
    (percentages are of the node). Ids are those of the whole tree, so a node found in the
    focused tree opens in the whole one and back."""

    def __init__(self, tree: CallTree, root: NodeView) -> None:
        self.tree = tree
        self.root = root
        self.options = tree.options
        self.total_bytes = root.bytes
        self.total_count = root.count

    def _rescaled(self, view: NodeView) -> NodeView:
        percent = tree_percent(view.bytes, view.count, self.total_bytes, self.total_count)
        return dataclasses.replace(view, percent=percent)

    def children(
        self, node_id: str | None, offset: int = 0, limit: int = 100
    ) -> tuple[list[NodeView], int] | None:
        if node_id is None:
            return [self._rescaled(self.root)][offset : offset + limit], 1
        page = self.tree.children(node_id, offset, limit)
        if page is None:
            return None
        return [self._rescaled(v) for v in page[0]], page[1]

    def node(self, node_id: str) -> NodeView | None:
        view = self.tree.node(node_id)
        return None if view is None else self._rescaled(view)

    def ancestors(self, node_id: str) -> list[NodeView] | None:
        """From the root of the whole tree (what a flame graph draws above the focused node)."""
        return self.tree.ancestors(node_id)


def focus_tree(tree: CallTree, node_id: str) -> FocusedTree | None:
    """The subtree of a node as a tree (None when there is no such node)."""
    root = tree.node(node_id)
    return None if root is None else FocusedTree(tree, root)
