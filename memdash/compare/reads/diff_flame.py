"""Reads of the diff flame graph: each snapshot's call tree of both sides, built whole and cached
by the allocations floor under the diff tree's options plus a search and a focus, merged level by
level into diff nodes (medians per snapshot, as the diff tree) as `diff_flame` keeps them. The
trees past the request's budget of rows are named together in TreeDeferred, for tasks to build.

Node ids are the trees' own (a stack node id; a frame path in inverted trees, trees without
system libraries or searched trees of other shapes), so they are the diff tree's ids and one
side's node meets the other side's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memdash.allocations.logic.calltree.flame import FLAME_LIMIT
from memdash.allocations.logic.calltree.transform import matches
from memdash.allocations.logic.calltree.tree import CallTree
from memdash.allocations.models import Snapshot
from memdash.allocations.reads.calltree.jobs import Deferrals, InlineBudget
from memdash.allocations.reads.calltree.query import CallTreeQuery
from memdash.allocations.reads.calltree.trees import TreeUnavailable, snapshot_call_tree
from memdash.compare.logic.diff_flame import Label, by_width, diff_flame
from memdash.compare.logic.diff_tree import DiffNode, NodeKey, TreeTotals, diff_tree_samples
from memdash.compare.reads.diffs import DiffTreeQuery
from memdash.compare.reads.refs import Side

ALL_CHILDREN = 1_000_000


@dataclass(frozen=True)
class FlameQuery:
    """The diff tree's options, and what the flame graph adds: a search and a focus."""

    tree: DiffTreeQuery
    search: str = ""
    focus: str = ""
    limit: int = FLAME_LIMIT


def _trees(side: Side, query: FlameQuery, budget: InlineBudget | None) -> list[CallTree]:
    """The side's snapshots' trees, whole. A build's snapshots without their rows are left out
    (raises TreeUnavailable for a side of one such snapshot); those past `budget` are raised
    together (TreeDeferred)."""
    tree_query = CallTreeQuery(
        category=query.tree.category,
        lifespan=query.tree.lifespan,
        generation=side.generation if side.kind == "generation" else None,
        inverted=query.tree.inverted,
        hide_system=query.tree.hide_system,
        flatten_recursion=query.tree.flatten,
        search=query.search,
        rules=query.tree.rules,  # the minimums are the diff tree's: the graph prunes by width
    )
    if side.kind == "build":
        snapshots = list(Snapshot.objects.filter(pk__in=side.snapshot_ids).order_by("pk"))
    else:
        assert side.snapshot is not None  # a snapshot or generation side has its snapshot
        snapshots = [side.snapshot]
    trees = []
    deferrals = Deferrals()
    for snapshot in snapshots:
        try:
            tree = deferrals.read(snapshot_call_tree, snapshot, tree_query, True, budget=budget)
        except TreeUnavailable:
            if side.kind != "build":
                raise
            continue
        if tree is not None:
            trees.append(tree)
    deferrals.check()
    return trees


class _DiffLevels:
    """Diff nodes of both sides' trees, a level at a time, with what each shows."""

    def __init__(self, base: list[CallTree], target: list[CallTree], alpha: float) -> None:
        self.base, self.target = base, target
        self.alpha = alpha
        self.labels: dict[str, Label] = {}

    def _levels(self, trees: list[CallTree], node: str | None) -> list[dict[NodeKey, TreeTotals]]:
        levels: list[dict[NodeKey, TreeTotals]] = []
        for tree in trees:
            page = tree.children(node, 0, ALL_CHILDREN)
            level: dict[NodeKey, TreeTotals] = {}
            for view in page[0] if page else []:
                level[view.id] = TreeTotals(view.bytes, view.count, view.has_children)
                self.labels[view.id] = (view.symbol, view.fields)
            levels.append(level)
        return levels

    def children(self, node: str | None) -> list[DiffNode]:
        return by_width(
            diff_tree_samples(
                self._levels(self.base, node), self._levels(self.target, node), self.alpha
            )
        )

    def node(self, node_id: str) -> DiffNode | None:
        """The diff node of an id, from each tree's own view of it."""
        levels: list[list[dict[NodeKey, TreeTotals]]] = []
        for trees in (self.base, self.target):
            side = []
            for tree in trees:
                view = tree.node(node_id)
                level: dict[NodeKey, TreeTotals] = {}
                if view is not None:
                    level[node_id] = TreeTotals(view.bytes, view.count, view.has_children)
                    self.labels[node_id] = (view.symbol, view.fields)
                side.append(level)
            levels.append(side)
        found = diff_tree_samples(levels[0], levels[1], self.alpha)
        return found[0] if found else None

    def path(self, node_id: str) -> list[DiffNode]:
        """The diff nodes from the root down to a node's parent, as the first tree of either
        side that has the node names its callers."""
        for tree in (*self.base, *self.target):
            callers = tree.ancestors(node_id)
            if callers is not None:
                found = (self.node(view.id) for view in callers)
                return [node for node in found if node is not None]
        return []

    def whole(self) -> tuple[float, float]:
        """The sides of the whole tree: the sums of its roots'."""
        roots = self.children(None)
        return sum(n.base.bytes for n in roots), sum(n.target.bytes for n in roots)

    def label(self, node: DiffNode) -> Label:
        return self.labels.get(str(node.key), (str(node.key), None))


def diff_flame_graph(
    base: Side, target: Side, query: FlameQuery, budget: InlineBudget | None = None
) -> dict[str, Any] | None:
    """The diff tree as icicle columns coloured by change; None when the focused node is in
    neither side. TreeDeferred for the trees of both sides past `budget`."""
    deferrals = Deferrals()
    base_trees = deferrals.read(_trees, base, query, budget)
    target_trees = deferrals.read(_trees, target, query, budget)
    deferrals.check()
    levels = _DiffLevels(base_trees or [], target_trees or [], query.tree.alpha)
    top = None
    if query.focus:
        top = levels.node(query.focus)
        if top is None:
            return None
    roots: Sequence[DiffNode] = levels.children(query.focus or None)

    def below(node: DiffNode) -> Sequence[DiffNode]:
        return levels.children(str(node.key)) if node.has_children else []

    needle = query.search
    path, whole = (levels.path(query.focus), levels.whole()) if top else ([], (0.0, 0.0))
    return diff_flame(
        roots, below, levels.label, query.limit, top, lambda text: matches(text, needle),
        path, whole,
    )  # fmt: skip
