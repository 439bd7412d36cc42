"""A diff call tree as a flame graph, coloured by change (pure: plain data in, plain data out).

A node is as wide as the larger of its two sides (`max(base, target)` of the median per
snapshot, so a node that is gone and one that is new both show); its colour is its change. The
larger side of a node is never smaller than that of a child (a child holds at most what its
parent holds in each snapshot, and medians keep that order), so `calltree_flame.prune` keeps the
heaviest nodes as it does for a call tree. Two children can each be larger on another side, so
their widths may add up to more than their parent's: the icicle is drawn with plotly's
"remainder" branch values, each node given what its width has beyond its drawn children.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from memdash.allocations.logic.calltree.flame import (
    OTHER_SUFFIX,
    TOP_ID,
    Described,
    FlameColumns,
    on_path,
    other_label,
    prune,
    remainders,
)
from memdash.allocations.logic.calltree.tree import FrameFields, frame_fields
from memdash.compare.logic.diff_tree import DiffNode

# What a node shows: its label, and its frame as a call tree's node shows it (None: no frame).
Label = tuple[str, FrameFields | None]


def width(node: DiffNode) -> int:
    """A node's width: the larger side's median bytes (rounded up: a median may be a half)."""
    return math.ceil(max(node.base.bytes, node.target.bytes))


def by_width(nodes: Sequence[DiffNode]) -> list[DiffNode]:
    """Nodes widest first (the order `prune` wants), then by their key: the same every run."""
    return sorted(nodes, key=lambda n: (-width(n), str(n.key)))


def diff_flame(
    roots: Sequence[DiffNode],
    children: Callable[[DiffNode], Sequence[DiffNode]],
    label: Callable[[DiffNode], Label],
    limit: int,
    top: DiffNode | None = None,
    search: Callable[[str], bool] = lambda _: False,
    path: Sequence[DiffNode] = (),
    whole: tuple[float, float] = (0, 0),
) -> dict[str, Any]:
    """Icicle columns of a diff tree pruned to `limit` nodes: ids, labels, parents, values
    (remainders), with base, target and delta bytes per node and `match` where `search` says.
    `roots` and `children` give nodes widest first. The top node is `top` (a focused node) or
    the whole tree, its sides the sums of the roots'. A focused node is drawn below the path
    from the root (`calltree_flame.on_path`): the whole tree (its sides `whole`), then its
    callers (`path`, outermost first), as wide as it and each with its own sides."""
    pruned = prune(roots, children, width, limit - 1)
    columns = FlameColumns()
    base: list[float] = []
    target: list[float] = []
    widths: list[int] = []
    significant: list[bool] = []  # coloured by its change only when the rank test says so

    def add(
        node_id: str, text: Label, parent: str, kind: str, sides: tuple[float, float],
        merged: int = 0, tested: bool = False,
    ) -> None:  # fmt: skip
        columns.add(node_id, text[0], parent, 0, kind, text[1], merged=merged)
        significant.append(tested)
        base.append(sides[0])
        target.append(sides[1])
        widths.append(math.ceil(max(sides)))

    if top is None:
        sides = (sum(n.base.bytes for n in roots), sum(n.target.bytes for n in roots))
        add(TOP_ID, ("All allocations", None), "", "all", sides)
    else:
        add(str(top.key), label(top), "", "frame", (top.base.bytes, top.target.bytes),
            tested=top.significant)  # fmt: skip
    top_id = columns.ids[0]
    ids: list[str] = []
    for kept in pruned.kept:
        node = kept.node
        ids.append(str(node.key))
        parent = top_id if kept.parent < 0 else ids[kept.parent]
        add(str(node.key), label(node), parent, "frame", (node.base.bytes, node.target.bytes),
            tested=node.significant)  # fmt: skip
    for parent_index, rest in pruned.rest.items():
        parent = top_id if parent_index < 0 else ids[parent_index]
        sides = (sum(n.base.bytes for n in rest), sum(n.target.bytes for n in rest))
        add(parent + OTHER_SUFFIX, (other_label(len(rest)), None), parent, "other", sides,
            merged=len(rest))  # fmt: skip
    if top is not None:
        columns = on_path(columns, [_described(n, label(n)) for n in path])
        above = [whole, *((n.base.bytes, n.target.bytes) for n in path)]
        base[:0] = [b for b, _ in above]
        target[:0] = [t for _, t in above]
        widths[:0] = [widths[0]] * len(above)
        significant[:0] = [False, *(n.significant for n in path)]
    data = columns.as_dict()
    data["values"] = remainders(columns.ids, columns.parents, widths)
    data.update(
        branchvalues="remainder",
        base=[_figure(v) for v in base],
        target=[_figure(v) for v in target],
        delta=[_figure(t - b) for b, t in zip(base, target, strict=True)],
        significant=significant,
        match=[k == "frame" and search(text) for k, text in zip(columns.kinds, columns.labels,
                                                                 strict=True)],
        unit="bytes",
        nodes=len(columns.ids),
    )  # fmt: skip
    return data


def _described(node: DiffNode, text: Label) -> Described:
    return str(node.key), text[0], "frame", text[1] or frame_fields(None)


def _figure(value: float) -> int | float:
    return int(value) if float(value).is_integer() else round(value, 2)
