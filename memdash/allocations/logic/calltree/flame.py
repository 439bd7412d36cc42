"""A call tree as a flame graph, and its Top Functions (no Django).

A flame (icicle) graph draws a node as wide as its inclusive bytes: of a tree of 200,000 nodes
only a few thousand are wider than a pixel. `prune` keeps the heaviest nodes (by inclusive
weight) up to a limit and merges the rest of each parent's children into one "other" node with
their summed weight, so what is sent and drawn stays small whatever the tree. Since a node never
weighs more than its parent, the heaviest nodes always form a tree, and taking them best first
(a heap over the next unseen child of each kept node, children given heaviest first) touches only
the kept nodes and their next siblings.

`flame_graph` answers the columns plotly's icicle trace takes (ids, labels, parents, values) for
a call tree; `top_functions` the flat table of functions by self and total bytes.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memdash.allocations.logic.calltree.inverted import InvertedCallTree
from memdash.allocations.logic.calltree.merged import MergedCallTree
from memdash.allocations.logic.calltree.transform import FocusedTree, matches
from memdash.allocations.logic.calltree.tree import (
    FRAME,
    NO_STACK,
    THREAD,
    CallTree,
    FrameFields,
    FrameInfo,
    NodeView,
    frame_fields,
)

FLAME_LIMIT = 3000  # nodes drawn at most, "other" nodes and the top one included
TOP_ID = "~all"  # the node above the roots when the whole tree is drawn
OTHER_SUFFIX = "~other"  # id of a parent's "other" node: the parent's id and this


@dataclass(frozen=True, slots=True)
class Kept[N]:
    node: N
    parent: int  # index in Pruned.kept of its parent, -1 for a root


@dataclass
class Pruned[N]:
    """The heaviest nodes, parents before children, and what is merged under each parent."""

    kept: list[Kept[N]] = field(default_factory=list)
    rest: dict[int, Sequence[N]] = field(default_factory=dict)  # parent index (-1: roots) -> rest


def prune[N](
    roots: Sequence[N],
    children: Callable[[N], Sequence[N]],
    weight: Callable[[N], int],
    limit: int,
) -> Pruned[N]:
    """The heaviest nodes of a tree by inclusive `weight` such that they and one "other" node per
    parent with children left out number at most `limit`. `roots` and each `children(node)` come
    heaviest first; nodes of weight 0 or less are left out (nothing to draw)."""
    out: Pruned[N] = Pruned()
    siblings: dict[int, Sequence[N]] = {}  # parent index -> its children of weight > 0
    taken: dict[int, int] = {}  # parent index -> how many of them are kept (a prefix)
    heap: list[tuple[int, int, int]] = []  # (-weight, order, parent index) of each next child
    order = itertools.count()

    def offer(parent: int, nodes: Sequence[N]) -> bool:
        shown = _positive_prefix(nodes, weight)
        if not shown:
            return False
        siblings[parent], taken[parent] = shown, 0
        heapq.heappush(heap, (-weight(shown[0]), next(order), parent))
        return True

    others = 1 if offer(-1, roots) else 0  # parents with children not (yet) kept
    while heap:
        _, _, parent = heap[0]
        index = taken[parent]
        node = siblings[parent][index]
        below = children(node)
        last = index + 1 == len(siblings[parent])
        has_below = bool(below) and weight(below[0]) > 0
        if len(out.kept) + 1 + others - last + has_below > limit:
            break
        heapq.heappop(heap)
        out.kept.append(Kept(node, parent))
        taken[parent] = index + 1
        if last:
            others -= 1
        else:
            heapq.heappush(heap, (-weight(siblings[parent][index + 1]), next(order), parent))
        if offer(len(out.kept) - 1, below):
            others += 1
    for parent, nodes in siblings.items():
        if taken[parent] < len(nodes):
            out.rest[parent] = nodes[taken[parent] :]
    return out


def _positive_prefix[N](nodes: Sequence[N], weight: Callable[[N], int]) -> Sequence[N]:
    """The nodes of positive weight (a prefix: they come heaviest first)."""
    end = len(nodes)
    while end and weight(nodes[end - 1]) <= 0:
        end -= 1
    return nodes[:end]


@dataclass
class FlameColumns:
    """Columns of an icicle trace, one entry a node (the top one first)."""

    ids: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    parents: list[str] = field(default_factory=list)
    values: list[int] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # frame | thread | no_stack | other | all
    images: list[str] = field(default_factory=list)
    system: list[bool] = field(default_factory=list)  # a frame of a system library
    merged: list[int] = field(default_factory=list)  # nodes an "other" node stands for
    # Of a frame's node, as a call tree's node says them (false, "", None, false for the rest).
    symbolicated: list[bool] = field(default_factory=list)
    file: list[str] = field(default_factory=list)
    line: list[int | None] = field(default_factory=list)
    inlined: list[bool] = field(default_factory=list)
    # Each node's own figure where it is not its width (the callers drawn above a focused node)
    sizes: list[int] | None = None

    def add(
        self, node_id: str, label: str, parent: str, value: int, kind: str,
        frame: FrameFields | None = None, merged: int = 0,
    ) -> None:  # fmt: skip
        shown = frame or frame_fields(None)
        self.ids.append(node_id)
        self.labels.append(label)
        self.parents.append(parent)
        self.values.append(value)
        self.kinds.append(kind)
        self.images.append(shown["image"])
        self.system.append(shown["system"])
        self.merged.append(merged)
        self.symbolicated.append(shown["symbolicated"])
        self.file.append(shown["file"])
        self.line.append(shown["line"])
        self.inlined.append(shown["inlined"])

    def as_dict(self) -> dict[str, Any]:
        return {
            "ids": self.ids,
            "labels": self.labels,
            "parents": self.parents,
            "values": self.values,
            "kinds": self.kinds,
            "images": self.images,
            "system": self.system,
            "merged": self.merged,
            "symbolicated": self.symbolicated,
            "file": self.file,
            "line": self.line,
            "inlined": self.inlined,
        }


def other_label(merged: int) -> str:
    return f"other ({merged} node{'s' if merged != 1 else ''})"


Described = tuple[str, str, str, FrameFields]  # id, label, kind, what it shows of its frame


@dataclass(frozen=True, slots=True)
class Top:
    """The node drawn above the roots: the whole tree, or the focused node."""

    id: str
    label: str
    kind: str
    value: int
    frame: FrameFields | None = None


def pruned_columns[N](
    pruned: Pruned[N],
    describe: Callable[[N], Described],
    weight: Callable[[N], int],
    top: Top,
) -> FlameColumns:
    """The icicle columns of a pruned tree: the top node, then each kept node (`describe` gives
    its id, label, kind and what it shows of its frame), then the "other" node of each parent,
    its weight the sum of what it merges."""
    columns = FlameColumns()
    columns.add(top.id, top.label, "", top.value, top.kind, top.frame)
    ids: list[str] = []
    for kept in pruned.kept:
        node_id, label, kind, frame = describe(kept.node)
        ids.append(node_id)
        columns.add(node_id, label, top.id if kept.parent < 0 else ids[kept.parent],
                    weight(kept.node), kind, frame)  # fmt: skip
    for parent_index, rest in pruned.rest.items():
        parent = top.id if parent_index < 0 else ids[parent_index]
        value = sum(weight(n) for n in rest)
        columns.add(parent + OTHER_SUFFIX, other_label(len(rest)), parent, value, "other",
                    merged=len(rest))  # fmt: skip
    return columns


def remainders(ids: list[str], parents: list[str], widths: list[int]) -> list[int]:
    """Each node's width beyond the widths of its drawn children (never below 0): plotly's
    "remainder" branch values, for trees whose children may outweigh their parent."""
    below: dict[str, int] = {}
    for parent, size in zip(parents, widths, strict=True):
        if parent:
            below[parent] = below.get(parent, 0) + size
    return [max(0, size - below.get(node_id, 0)) for node_id, size in zip(ids, widths, strict=True)]


def flame_graph(tree: CallTree, limit: int = FLAME_LIMIT, search: str = "") -> dict[str, Any]:
    """A call tree (whole, or focused on a node) as icicle columns, pruned to `limit` nodes,
    sized by bytes (by count when nothing in it has a size); `match` marks the nodes whose
    label contains `search`."""
    by_count = not tree.total_bytes
    if isinstance(tree, FocusedTree):
        root = tree.root
        top = Top(
            root.id, root.symbol, root.kind, root.count if by_count else root.bytes, root.fields
        )
    else:
        top = Top(
            TOP_ID, "All allocations", "all", tree.total_count if by_count else tree.total_bytes
        )
    base = tree.tree if isinstance(tree, FocusedTree) else tree
    if isinstance(base, MergedCallTree):
        columns = _merged_flame(tree, base, limit, by_count, top)
    elif isinstance(base, InvertedCallTree):
        columns = _inverted_flame(tree, base, limit, by_count, top)
    else:
        columns = _view_flame(tree, limit, by_count, top)
    if isinstance(tree, FocusedTree):
        columns = _on_path(columns, tree, by_count)
    data = columns.as_dict()
    if columns.sizes is not None:
        data["sizes"] = columns.sizes
    if not base.additive:  # medians: children may outweigh their parent (`per_snapshot`)
        data.update(
            sizes=columns.sizes or columns.values,
            values=remainders(columns.ids, columns.parents, columns.values),
            branchvalues="remainder",
        )
    data["match"] = [matches(label, search) for label in columns.labels]
    for i, kind in enumerate(columns.kinds):
        if kind in ("other", "all"):
            data["match"][i] = False
    data.update(
        unit="count" if by_count else "bytes",
        nodes=len(columns.ids),
        total_bytes=tree.total_bytes,
        total_count=tree.total_count,
    )
    return data


def _on_path(columns: FlameColumns, tree: FocusedTree, by_count: bool) -> FlameColumns:
    """A focused graph below the path from the root (`on_path`), its nodes' own figures in
    `sizes`."""
    path = tree.ancestors(tree.root.id) or []
    out = on_path(columns, [_described(view) for view in path])
    whole = tree.tree.total_count if by_count else tree.tree.total_bytes
    out.sizes = [whole, *(view.count if by_count else view.bytes for view in path), *columns.values]
    return out


def on_path(columns: FlameColumns, path: Sequence[Described]) -> FlameColumns:
    """The columns of a graph focused on a node (its top one) with the path from the root above
    it: the whole tree's top node, then each caller (`path`, outermost first), each as wide as
    the focused node; their own figures are the caller's to add (`sizes`, a diff's sides)."""
    width = columns.values[0]
    out = FlameColumns()
    out.add(TOP_ID, "All allocations", "", width, "all")
    for node_id, label, kind, frame in path:
        out.add(node_id, label, out.ids[-1], width, kind, frame)
    above = out.ids[-1]
    out.ids.extend(columns.ids)
    out.parents.extend([above, *columns.parents[1:]])
    for name in ("labels", "values", "kinds", "images", "system", "merged", "symbolicated",
                 "file", "line", "inlined"):  # fmt: skip
        getattr(out, name).extend(getattr(columns, name))
    return out


def _merged_flame(
    tree: CallTree, merged: MergedCallTree, limit: int, by_count: bool, top: Top
) -> FlameColumns:
    """Over the arrays of a merged tree: only the kept nodes are made views of."""
    column = merged.count if by_count else merged.bytes
    roots: Sequence[int] = merged.roots
    if isinstance(tree, FocusedTree):
        found = merged.find(tree.root.id)
        roots = [] if found is None else merged.child_nodes(found)
    pruned = prune(roots, merged.child_nodes, column.__getitem__, limit - 1)
    views = {k.node: merged.view(k.node) for k in pruned.kept}

    def describe(node: int) -> Described:
        return _described(views[node])

    return pruned_columns(pruned, describe, column.__getitem__, top)


def _inverted_flame(
    tree: CallTree, inverted: InvertedCallTree, limit: int, by_count: bool, top: Top
) -> FlameColumns:
    """Over the groups of an inverted tree: each node's callers are worked out once."""
    start = inverted.group(tree.root.id) if isinstance(tree, FocusedTree) else None
    if isinstance(tree, FocusedTree) and start is None:
        return pruned_columns(Pruned(), _described, _view_weight(by_count), top)
    roots = inverted.child_groups(start)

    def weight(group: Any) -> int:
        return int(group.count if by_count else group.bytes)

    pruned = prune(roots, inverted.child_groups, weight, limit - 1)
    views = [inverted.group_view(k.node) for k in pruned.kept]
    described = {id(k.node): _described(v) for k, v in zip(pruned.kept, views, strict=True)}
    return pruned_columns(pruned, lambda g: described[id(g)], weight, top)


def _view_weight(by_count: bool) -> Callable[[NodeView], int]:
    return lambda view: view.count if by_count else view.bytes


def _view_flame(tree: CallTree, limit: int, by_count: bool, top: Top) -> FlameColumns:
    """Over any tree's interface (the inverted one is lazy: children are worked out on demand)."""

    def weight(view: NodeView) -> int:
        return view.count if by_count else view.bytes

    def children(view: NodeView) -> Sequence[NodeView]:
        if not view.has_children:
            return []
        page = tree.children(view.id, 0, 1 << 30)
        return page[0] if page else []

    if isinstance(tree, FocusedTree):
        roots = children(tree.root)
    else:
        first = tree.children(None, 0, 1 << 30)
        roots = first[0] if first else []
    pruned = prune(roots, children, weight, limit - 1)
    return pruned_columns(pruned, _described, weight, top)


def _described(view: NodeView) -> Described:
    return view.id, view.symbol, view.kind, view.fields


# --- Top Functions -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FunctionRow:
    """A function (frames of the same label and image) over the whole tree: what it allocated
    itself, and what was allocated while it was on the stack (counted once under recursion)."""

    symbol: str
    image: str
    kind: str
    system: bool
    self_bytes: int
    self_count: int
    bytes: int
    count: int
    # As a call tree's node says them of its frame: a function's file (the first its frames
    # give), its line where they all agree, inlined where every frame of it is.
    symbolicated: bool = False
    file: str = ""
    line: int | None = None
    inlined: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "symbol": self.symbol,
            "image": self.image,
            "kind": self.kind,
            "system": self.system,
            "self_bytes": self.self_bytes,
            "self_count": self.self_count,
            "bytes": self.bytes,
            "count": self.count,
            "symbolicated": self.symbolicated,
            "file": self.file,
            "line": self.line,
            "inlined": self.inlined,
        }


TOP_ORDERS = ("self", "total")


def top_functions(
    tree: MergedCallTree, root: int | None = None, order: str = "self"
) -> list[FunctionRow]:
    """The functions of a merged (not inverted) tree, or of the subtree of `root`, by self bytes
    (`order="total"`: by total bytes), then self count, total bytes and name. Threads are not
    functions: their nodes are walked through. One walk, depth first, counting how many times
    each function is on the path, so a function's total takes a node only where it is not
    already on the stack above it."""
    functions = _Functions(tree)
    sums: list[list[int]] = []  # per function: self bytes, self count, bytes, count
    on_path: list[int] = []
    walk: list[int] = list(reversed(tree.roots if root is None else [root]))
    kind, self_bytes, self_count = tree.kind, tree.self_bytes, tree.self_count
    inclusive, count, start, flat = tree.bytes, tree.count, tree.child_start, tree.child_flat
    while walk:
        node = walk.pop()
        if node < 0:  # leaving ~node
            f = functions.of(~node)
            if f >= 0:
                on_path[f] -= 1
            continue
        f = functions.of(node) if kind[node] != THREAD else -1
        if f >= 0:
            while f >= len(sums):
                sums.append([0, 0, 0, 0])
                on_path.append(0)
            acc = sums[f]
            acc[0] += self_bytes[node]
            acc[1] += self_count[node]
            if not on_path[f]:
                acc[2] += inclusive[node]
                acc[3] += count[node]
            on_path[f] += 1
            walk.append(~node)
        walk.extend(reversed(flat[start[node] : start[node + 1]]))
    rows = [
        FunctionRow(*functions.keys[f], v[0], v[1], v[2], v[3], *functions.shown(f))
        for f, v in enumerate(sums)
    ]
    return sort_functions(rows, order)


def sort_functions(rows: list[FunctionRow], order: str = "self") -> list[FunctionRow]:
    """By self bytes (`order="total"`: by total bytes), then self count, total bytes and name."""
    if order == "total":
        rows.sort(key=lambda r: (-r.bytes, -r.count, -r.self_bytes, r.symbol, r.image))
    else:
        rows.sort(key=lambda r: (-r.self_bytes, -r.self_count, -r.bytes, r.symbol, r.image))
    return rows


class _Functions:
    """Functions of a tree's nodes: frames of the same label and image are one function."""

    def __init__(self, tree: MergedCallTree) -> None:
        self.tree = tree
        self.keys: list[tuple[str, str, str, bool]] = []  # symbol, image, kind, system
        self._frames: list[list[FrameInfo]] = []  # the frames of each function
        self._index: dict[tuple[str, str], int] = {}
        self._by_frame: dict[int, int] = {}

    def _add(
        self, symbol: str, image: str, kind: str, system: bool, frame: FrameInfo | None = None
    ) -> int:
        f = self._index.get((symbol, image))
        if f is None:
            f = self._index[(symbol, image)] = len(self.keys)
            self.keys.append((symbol, image, kind, system))
            self._frames.append([])
        if frame is not None:
            self._frames[f].append(frame)
        return f

    def shown(self, f: int) -> tuple[bool, str, int | None, bool]:
        """(symbolicated, file, line, inlined) of a function, from its frames."""
        frames = self._frames[f]
        if not frames:
            return False, "", None, False
        file = next((fr.file for fr in frames if fr.file), "")
        lines = {(fr.file or file, fr.line) for fr in frames if fr.line is not None}
        line = next(iter(lines))[1] if len(lines) == 1 else None
        return bool(frames[0].symbol), file, line, all(fr.inlined for fr in frames)

    def of(self, node: int) -> int:
        """The function of a node (-1 for a thread)."""
        tree = self.tree
        kind = tree.kind[node]
        if kind == FRAME:
            frame_id = tree.frame[node]
            f = self._by_frame.get(frame_id)
            if f is None:
                frame = tree.frames[frame_id]
                f = self._by_frame[frame_id] = self._add(
                    frame.label, frame.image, "frame", frame.is_system, frame
                )
            return f
        if kind == NO_STACK:
            return self._add(tree.label(node), "", "no_stack", False)
        return -1
