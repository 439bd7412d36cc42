"""Instruments' data mining and Pyroscope's sandwich, on a call tree already built (no Django).

They work on a merged (not inverted) tree built whole, the one kept in the cache, so applying
or taking one back rebuilds nothing from the database: one pass over its nodes makes another
tree (`mine_tree`), or a view over it (`ConstrainedTree`).

Rules (`Rule`), on a symbol (a frame's label) or a library (a frame's image):

- charge: the frames are removed from the paths and what they allocated themselves is counted
  in their caller; their callees are attached to that caller. Totals stay. (A frame at the root,
  with no caller to charge, keeps a node for what it allocated itself.)
- prune: the frames and everything below them are removed, their cost taken off every caller
  and off the total.
- remove (flatten): the frames are removed from the paths, their callees attached to their
  caller; what they allocated themselves is taken off the total (charge keeps it).

A frame named by several rules takes prune first, then remove, then charge. Paths left with
nothing in them go.

Constraints (`ConstrainedTree`): a node lighter than the minimum bytes or count is not listed;
each parent's such children are merged into one "other" line, so the totals stay true.

Sandwich (`sandwich`): one function's callers (an inverted tree, merged by caller, weighed by
the function's total below each) above, its callees (its subtrees merged) below, and its totals.

(Focus keeping the path from the root is `CallTree.ancestors`, which the flame graph draws.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from memdash.allocations.logic.calltree.inverted import InvertedCallTree, build_inverted_tree
from memdash.allocations.logic.calltree.merged import MergedCallTree
from memdash.allocations.logic.calltree.tree import (
    FRAME,
    THREAD,
    CallTree,
    FrameInfo,
    MergeKey,
    NodeView,
    StackInfo,
    TreeOptions,
    tree_percent,
)

CHARGE, PRUNE, REMOVE = "charge", "prune", "remove"
SYMBOL, LIBRARY = "symbol", "library"
PRECEDENCE = (PRUNE, REMOVE, CHARGE)  # a frame named by several rules takes the first
# The query parameter of each kind of rule. A library is charged on the stacks before the tree
# is built (`calltree_transform`, the `charge` parameter), which is the same as this.
RULE_PARAMETERS: dict[str, tuple[str, str]] = {
    "charge_symbol": (CHARGE, SYMBOL),
    "prune_symbol": (PRUNE, SYMBOL),
    "prune_library": (PRUNE, LIBRARY),
    "remove_symbol": (REMOVE, SYMBOL),
    "remove_library": (REMOVE, LIBRARY),
}
SMALL_SUFFIX = "~small"  # id of a parent's line of children under the minimums


class Rule(NamedTuple):
    """One data-mining rule: what to do (charge, prune, remove) to the frames of a symbol (their
    label) or of a library (their image)."""

    action: str
    target: str
    name: str

    @property
    def parameter(self) -> str:
        return f"{self.action}_{self.target}"

    def names(self, frame: FrameInfo) -> bool:
        return (frame.label if self.target == SYMBOL else frame.image) == self.name


def frame_actions(frames: Mapping[int, FrameInfo], rules: Iterable[Rule]) -> dict[int, str]:
    """The action each frame named by a rule takes (`PRECEDENCE` when several name it)."""
    wanted: dict[tuple[str, str], set[str]] = {}
    for rule in rules:
        wanted.setdefault((rule.action, rule.target), set()).add(rule.name)
    by_symbol = any(target == SYMBOL for _, target in wanted)
    actions: dict[int, str] = {}
    for frame_id, frame in frames.items():
        label = frame.label if by_symbol else ""  # a label is worked out: only when needed
        for action in PRECEDENCE:
            if label in wanted.get((action, SYMBOL), ()) or (
                frame.image and frame.image in wanted.get((action, LIBRARY), ())
            ):
                actions[frame_id] = action
                break
    return actions


_PRUNED = -2  # a node under a pruned one: not in the mined tree


def mine_tree(tree: MergedCallTree, rules: Iterable[Rule]) -> MergedCallTree:
    """The tree under the rules, as a tree of its own (the same tree when no rule names one of
    its frames). One pass over the nodes, parents before children."""
    actions = frame_actions(tree.frames, rules)
    if not actions:
        return tree
    out = MergedCallTree(options=dataclasses.replace(tree.options, mined=True), frames=tree.frames)
    place = [0] * len(tree)  # node -> the node of the mined tree its children go under
    kind, frame, parent = tree.kind, tree.frame, tree.parent
    for node in range(len(tree)):
        up = parent[node]
        above = -1 if up < 0 else place[up]
        if above == _PRUNED:
            place[node] = _PRUNED
            continue
        action = actions.get(frame[node]) if kind[node] == FRAME else None
        if action == PRUNE:
            place[node] = _PRUNED
            continue
        if action == REMOVE:
            place[node] = above
            continue
        if action == CHARGE:
            place[node] = above
            if above < 0 or out.kind[above] != FRAME:  # no caller: a node of its own
                above = out._child(above, FRAME, frame[node])
            _add_self(out, above, tree.self_bytes[node], tree.self_count[node])
            continue
        if kind[node] == THREAD:
            here = out._new_node(above, THREAD, None)
            out.thread[here] = tree.thread[node]
        else:
            here = out._child(above, kind[node], frame[node] if kind[node] == FRAME else None)
        place[node] = here
        _add_self(out, here, tree.self_bytes[node], tree.self_count[node])
    out.finish()
    return out


def _add_self(tree: MergedCallTree, node: int, nbytes: int, count: int) -> None:
    tree.self_bytes[node] += nbytes
    tree.self_count[node] += count
    tree.total_bytes += nbytes
    tree.total_count += count


def inverted_of(tree: MergedCallTree) -> InvertedCallTree:
    """The inverted tree of a merged one (a mined tree inverted): its nodes are the stacks,
    what each allocated itself the rows."""
    merged: dict[MergeKey, list[int]] = {}
    stacks: dict[int, StackInfo] = {}
    thread_of: list[str | None] = [None] * len(tree)
    by_thread = tree.options.by_thread
    for node in range(len(tree)):
        up = tree.parent[node]
        if tree.kind[node] == THREAD:
            thread_of[node] = tree.thread[node]
            continue
        thread_of[node] = thread_of[up] if up >= 0 else None
        stack_id: int | None = None
        if tree.kind[node] == FRAME:
            stack_id = node + 1
            caller = up + 1 if up >= 0 and tree.kind[up] == FRAME else None
            stacks[stack_id] = StackInfo(caller, tree.frame[node])
        if tree.self_bytes[node] or tree.self_count[node]:
            key = (thread_of[node] if by_thread else None, stack_id)
            acc = merged.setdefault(key, [0, 0])
            acc[0] += tree.self_bytes[node]
            acc[1] += tree.self_count[node]
    options = dataclasses.replace(tree.options, inverted=True, mined=True)
    return build_inverted_tree(merged, stacks, tree.frames, options)


# --- constraints --------------------------------------------------------------------------------


class ConstrainedTree(CallTree):
    """A tree whose nodes lighter than `min_bytes` or `min_count` are merged, under each parent,
    into one "other" line (kind "other", no children): what is listed still adds up."""

    def __init__(self, tree: CallTree, min_bytes: int = 0, min_count: int = 0) -> None:
        self.tree = tree
        self.min_bytes = min_bytes
        self.min_count = min_count
        self.options = tree.options
        self.total_bytes = tree.total_bytes
        self.total_count = tree.total_count

    def kept(self, view: NodeView) -> bool:
        return view.bytes >= self.min_bytes and view.count >= self.min_count

    def _listed(self, node_id: str | None) -> list[NodeView] | None:
        """The children of a node as listed: those kept, then the other line if any."""
        if node_id is not None and node_id.endswith(SMALL_SUFFIX):
            parent = node_id[: -len(SMALL_SUFFIX)] or None
            return None if self._other(parent) is None else []
        first = self.tree.children(node_id, 0, 1)  # how many there are, then all of them
        page = first if first is None or first[1] <= 1 else self.tree.children(node_id, 0, first[1])
        if page is None:
            return None
        kept = [v for v in page[0] if self.kept(v)]
        rest = [v for v in page[0] if not self.kept(v)]
        if rest:
            kept.append(self._merged(node_id, rest))
        return kept

    def _merged(self, parent: str | None, rest: list[NodeView]) -> NodeView:
        nbytes, count = sum(v.bytes for v in rest), sum(v.count for v in rest)
        plural = "s" if len(rest) != 1 else ""
        return NodeView(
            id=(parent or "") + SMALL_SUFFIX,
            symbol=f"other ({len(rest)} node{plural} under the minimum)",
            image="", bytes=nbytes, count=count,
            self_bytes=sum(v.self_bytes for v in rest), self_count=sum(v.self_count for v in rest),
            has_children=False,
            percent=tree_percent(nbytes, count, self.total_bytes, self.total_count),
            kind="other",
        )  # fmt: skip

    def _other(self, parent: str | None) -> NodeView | None:
        listed = self._listed(parent)
        if not listed or listed[-1].kind != "other" or not listed[-1].id.endswith(SMALL_SUFFIX):
            return None
        return listed[-1]

    def children(
        self, node_id: str | None, offset: int = 0, limit: int = 100
    ) -> tuple[list[NodeView], int] | None:
        listed = self._listed(node_id)
        if listed is None:
            return None
        return listed[offset : offset + limit], len(listed)

    def node(self, node_id: str) -> NodeView | None:
        if node_id.endswith(SMALL_SUFFIX):
            return self._other(node_id[: -len(SMALL_SUFFIX)] or None)
        return self.tree.node(node_id)

    def ancestors(self, node_id: str) -> list[NodeView] | None:
        return self.tree.ancestors(node_id)


# --- sandwich -----------------------------------------------------------------------------------


@dataclass
class Sandwich:
    """A function's callers and callees, and its totals (bytes and count while it is on the
    stack, counted once under recursion; what its own frames allocated)."""

    symbol: str
    image: str
    bytes: int
    count: int
    self_bytes: int
    self_count: int
    callers: MergedCallTree
    callees: MergedCallTree


def sandwich(tree: MergedCallTree, symbol: str) -> Sandwich | None:
    """The sandwich of the function named `symbol` (a frame label) in a merged tree, or None
    when no frame of the tree has that label. Its outermost frames on each path (a call of
    itself below is part of its callees) give its callers and callees."""
    hits = {f for f, info in tree.frames.items() if info.label == symbol}
    used = {tree.frame[n] for n in range(len(tree)) if tree.kind[n] == FRAME} & hits
    if not used:
        return None
    root_frame = min(used)
    options = TreeOptions(mined=True)
    callers = MergedCallTree(options=options, frames=tree.frames)
    callees = MergedCallTree(options=options, frames=tree.frames)
    inside = [-1] * len(tree)  # node -> its node in the callees (-1: not below the function)
    self_bytes = self_count = 0
    for node in range(len(tree)):
        hit = tree.kind[node] == FRAME and tree.frame[node] in hits
        if hit:
            self_bytes += tree.self_bytes[node]
            self_count += tree.self_count[node]
        up = tree.parent[node]
        above = inside[up] if up >= 0 else -1
        if above >= 0:
            kind = tree.kind[node]
            here = callees._child(above, kind, tree.frame[node] if kind == FRAME else None)
        elif hit:  # an outermost call: its callers, and the top of the callees
            here = callees._child(-1, FRAME, root_frame)
            _add_callers(callers, tree, node, root_frame)
        else:
            continue
        inside[node] = here
        _add_self(callees, here, tree.self_bytes[node], tree.self_count[node])
    callers.finish()
    callees.finish()
    first = tree.frames[root_frame]
    return Sandwich(
        symbol, first.image, callees.total_bytes, callees.total_count, self_bytes, self_count,
        callers, callees,
    )  # fmt: skip


def _add_callers(callers: MergedCallTree, tree: MergedCallTree, node: int, root: int) -> None:
    """One call's callers, outward from the function (threads aside), weighed by its total."""
    here = callers._child(-1, FRAME, root)
    up = tree.parent[node]
    while up >= 0:
        if tree.kind[up] == FRAME:
            here = callers._child(here, FRAME, tree.frame[up])
        up = tree.parent[up]
    _add_self(callers, here, tree.bytes[node], tree.count[node])
