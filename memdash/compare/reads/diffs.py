"""Reads of diffs between two sides (`refs.Side`): category tables and call-tree levels
(selectors: reads only).

Category diffs read only the pre-aggregated tables (CategoryTotal, GenerationCategoryTotal,
BuildCategoryTotal). A diff call tree is read per snapshot of each side, so that a build's node
is its median per snapshot (`diff_tree`): all categories, not inverted, with system libraries,
from the stored per-node totals (CallTreeNode) of all the side's snapshots in one query a level;
any other view (a category, a generation, inverted, system libraries hidden) from each
snapshot's call tree as the allocations floor builds and caches it (`snapshot_call_tree`): the
trees past the request's budget of rows are named together in TreeDeferred, for tasks to build.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Q, Sum

from memdash.allocations.logic.analysis import BASELINE, frame_label
from memdash.allocations.logic.calltree.mining import Rule
from memdash.allocations.logic.calltree.transform import matches
from memdash.allocations.models import (
    BuildCategoryTotal,
    CallTreeNode,
    CategoryTotal,
    Frame,
    GenerationCategoryTotal,
    Snapshot,
)
from memdash.allocations.reads.calltree.jobs import Deferrals, InlineBudget
from memdash.allocations.reads.calltree.query import CallTreeQuery
from memdash.allocations.reads.calltree.stored import stack_id_of
from memdash.allocations.reads.calltree.trees import TreeUnavailable, snapshot_call_tree
from memdash.allocations.reads.snapshots import CategoryTotals
from memdash.compare.logic.category_diff import (
    CountBytes,
    DiffRow,
    count_bytes,
    diff_categories,
    per_snapshot,
)
from memdash.compare.logic.diff_tree import (
    SMALL_LABEL,
    SMALL_SUFFIX,
    DiffNode,
    NodeKey,
    TreeTotals,
    diff_tree_samples,
    fold_small,
)
from memdash.compare.logic.stats import DEFAULT_ALPHA
from memdash.compare.reads.refs import Side

DIFF_LIFESPANS = ("persistent", "transient", "all")
DEFAULT_DIFF_LIFESPAN = "persistent"  # a diff is about what stayed alive
NO_STACK_KEY = "n"
NO_STACK_LABEL = "(no stack)"
COUNTERS = ("persistent", "persistent_bytes", "transient", "transient_bytes")
ALL_CHILDREN = 1_000_000  # a level is read whole: its nodes are ordered by their change


# ---- category diffs -----------------------------------------------------------------------------


def _category_counts(side: Side) -> Iterable[tuple[Any, ...]]:
    """(category name, persistent, persistent bytes, transient, transient bytes) of a side,
    before dividing a build's sums per snapshot."""
    rows: CategoryTotals
    if side.kind == "snapshot":
        rows = CategoryTotal.objects.filter(snapshot_id=side.snapshot_ids[0])
    elif side.kind == "generation":
        rows = GenerationCategoryTotal.objects.filter(snapshot_id=side.snapshot_ids[0])
        if side.generation == BASELINE:
            rows = rows.filter(generation__isnull=True)
        else:
            rows = rows.filter(generation=side.generation)
    elif side.filters:
        # some of the build's snapshots: sum their own totals (the build total has them all)
        sums = {f"sum_{c}": Sum(c) for c in COUNTERS}
        return (
            CategoryTotal.objects.filter(snapshot_id__in=side.snapshot_ids)
            .values("category__name")
            .annotate(**sums)
            .values_list("category__name", *sums)
        )
    else:
        rows = BuildCategoryTotal.objects.filter(build=side.build)
    return rows.values_list("category__name", *COUNTERS)


def category_table(side: Side, lifespan: str = DEFAULT_DIFF_LIFESPAN) -> dict[str, CountBytes]:
    """category -> (count, bytes) of one side under a lifespan filter."""
    return {
        name: per_snapshot(count_bytes(counts, lifespan), side.divisor)
        for name, *counts in _category_counts(side)
    }


def diff_rows(base: Side, target: Side, lifespan: str = DEFAULT_DIFF_LIFESPAN) -> list[DiffRow]:
    return diff_categories(category_table(base, lifespan), category_table(target, lifespan))


# ---- diff call trees ----------------------------------------------------------------------------


@dataclass(frozen=True)
class DiffTreeQuery:
    """What a diff call tree shows: a lifespan, one category or all, inverted or not, with or
    without system libraries, recursion flattened or not, and "Involves symbol" (only the stacks
    through a frame whose label has `search`), as a snapshot's call tree offers them."""

    lifespan: str = DEFAULT_DIFF_LIFESPAN
    category: str = ""
    inverted: bool = False
    hide_system: bool = False
    flatten: bool = False
    search: str = ""
    alpha: float = DEFAULT_ALPHA  # the rank test's level: only significant changes are coloured
    # Data mining, as the call tree's (`calltree_mining`): the rules apply to each snapshot's
    # tree; a node under both minimums on both sides is merged into its parent's "other" line.
    rules: tuple[Rule, ...] = ()
    min_bytes: int = 0
    min_count: int = 0

    @property
    def stored(self) -> bool:
        """Whether the stored per-node totals (CallTreeNode) answer it."""
        return not (
            self.category or self.inverted or self.hide_system or self.flatten or self.search
            or self.rules
        )  # fmt: skip

    def as_json(self) -> dict[str, Any]:
        return {
            "lifespan": self.lifespan,
            "category": self.category,
            "inverted": self.inverted,
            "hide_system": self.hide_system,
            "flatten": self.flatten,
            "search": self.search,
            "alpha": self.alpha,
        }


@dataclass(frozen=True, slots=True)
class NodeLabel:
    """What a node shows: as a call tree's node (`calltree.NodeView`) shows its frame."""

    symbol: str
    image: str
    system: bool
    symbolicated: bool = False  # names a function (false: `image + 0xoffset`, no stack)
    file: str = ""
    line: int | None = None
    inlined: bool = False


@dataclass
class SideLevel:
    """The children of one node on one side: per snapshot {node: totals}, and what each node
    shows (its label, or its frame id, looked up for the page's nodes only)."""

    levels: list[dict[NodeKey, TreeTotals]]
    labels: dict[NodeKey, NodeLabel]
    frames: dict[NodeKey, int]


def _lifespan_filter(lifespan: str) -> Q:
    """Call-tree rows with something in them under the lifespan filter."""
    persistent = Q(persistent__gt=0) | Q(persistent_bytes__gt=0)
    transient = Q(transient__gt=0) | Q(transient_bytes__gt=0)
    return {"persistent": persistent, "transient": transient}.get(lifespan, persistent | transient)


def _stored_level(snapshot_ids: list[int], node: str | None, lifespan: str) -> SideLevel:
    """Children of `node` from the stored call-tree totals, per snapshot, in one query (and one
    for which of them have children); at the roots, what has no stack is each snapshot's total
    less its roots, so the roots add up."""
    per: dict[int, dict[NodeKey, TreeTotals]] = {sid: {} for sid in snapshot_ids}
    result = SideLevel(list(per.values()), {}, {})
    parent = None if node is None else stack_id_of(node)
    if node is not None and parent is None:
        return result  # "(no stack)", or an id of another kind of tree: no children here
    rows = CallTreeNode.objects.filter(_lifespan_filter(lifespan), snapshot_id__in=snapshot_ids)
    rows = rows.filter(parent_id__isnull=True) if parent is None else rows.filter(parent_id=parent)
    for sid, node_id, frame_id, *counters in rows.values_list(
        "snapshot_id", "node_id", "frame_id", *COUNTERS
    ):
        count, size = count_bytes(counters, lifespan)
        per[sid][str(node_id)] = TreeTotals(bytes=size, count=count)
        result.frames[str(node_id)] = frame_id
    if result.frames:
        below = (
            CallTreeNode.objects.filter(
                _lifespan_filter(lifespan),
                snapshot_id__in=snapshot_ids,
                parent_id__in=[int(k) for k in result.frames],
            )
            .values_list("snapshot_id", "parent_id")
            .distinct()
        )
        for sid, parent_id in below:
            totals = per[sid].get(str(parent_id))
            if totals is not None:  # a parent holds at least what its children hold
                per[sid][str(parent_id)] = TreeTotals(totals.bytes, totals.count, True)
    if node is None:
        for sid, *counters in Snapshot.objects.filter(pk__in=snapshot_ids).values_list(
            "pk", *COUNTERS
        ):
            count, size = count_bytes(counters, lifespan)
            count -= sum(t.count for t in per[sid].values())
            size -= sum(t.bytes for t in per[sid].values())
            if count > 0 or size > 0:
                per[sid][NO_STACK_KEY] = TreeTotals(bytes=size, count=count)
    return result


def _side_snapshots(side: Side) -> list[Snapshot]:
    if side.kind != "build":
        assert side.snapshot is not None  # a snapshot or generation side has its snapshot
        return [side.snapshot]
    return list(Snapshot.objects.filter(pk__in=side.snapshot_ids).order_by("pk"))


def _built_level(
    side: Side, node: str | None, query: DiffTreeQuery, budget: InlineBudget | None
) -> SideLevel:
    """Children of `node` in each snapshot's call tree under the query, as the allocations floor
    builds (and caches) it. A build's snapshots whose allocation rows were pruned are left out
    (raises TreeUnavailable for a side of one such snapshot); the trees past `budget` are raised
    together (TreeDeferred)."""
    tree_query = CallTreeQuery(
        category=query.category,
        lifespan=query.lifespan,
        generation=side.generation if side.kind == "generation" else None,
        inverted=query.inverted,
        hide_system=query.hide_system,
        flatten_recursion=query.flatten,
        search=query.search,
        rules=query.rules,
    )
    result = SideLevel([], {}, {})
    deferrals = Deferrals()
    for snapshot in _side_snapshots(side):
        try:
            tree = deferrals.read(snapshot_call_tree, snapshot, tree_query, budget=budget)
        except TreeUnavailable:
            if side.kind != "build":
                raise
            continue
        if tree is None:
            continue
        page = tree.children(node, 0, ALL_CHILDREN)
        level: dict[NodeKey, TreeTotals] = {}
        for view in page[0] if page else []:
            level[view.id] = TreeTotals(view.bytes, view.count, view.has_children)
            result.labels[view.id] = NodeLabel(
                view.symbol, view.image, view.system, view.symbolicated, view.file, view.line,
                view.inlined,
            )  # fmt: skip
        result.levels.append(level)
    deferrals.check()
    return result


def _side_level(
    side: Side, node: str | None, query: DiffTreeQuery, budget: InlineBudget | None
) -> SideLevel:
    if query.stored and side.kind != "generation":
        return _stored_level(list(side.snapshot_ids), node, query.lifespan)
    return _built_level(side, node, query, budget)


@dataclass(frozen=True)
class TreePage:
    total: int  # children of the node in either side
    nodes: list[dict[str, Any]]  # the page of them, largest change first, as the API shows them


def _figure(value: float) -> int | float:
    """A median or mean as the API gives it: whole numbers as integers."""
    return int(value) if float(value).is_integer() else round(value, 2)


def _node_json(n: DiffNode, label: NodeLabel) -> dict[str, Any]:
    return {
        "id": str(n.key),
        "symbol": label.symbol,
        "image": label.image,
        "system": label.system,
        "symbolicated": label.symbolicated,
        "file": label.file,
        "line": label.line,
        "inlined": label.inlined,
        "base_bytes": _figure(n.base.bytes),
        "target_bytes": _figure(n.target.bytes),
        "delta_bytes": _figure(n.delta_bytes),
        "base_count": _figure(n.base.count),
        "target_count": _figure(n.target.count),
        "delta_count": _figure(n.delta_count),
        "base_mean_bytes": _figure(n.base.mean_bytes),
        "target_mean_bytes": _figure(n.target.mean_bytes),
        "delta_mean_bytes": _figure(n.delta_mean_bytes),
        "base_mean_count": _figure(n.base.mean_count),
        "target_mean_count": _figure(n.target.mean_count),
        "delta_mean_count": _figure(n.delta_mean_count),
        "base_present": n.base.present,
        "target_present": n.target.present,
        "status": n.status,
        "p_value": None if n.p_value is None else round(n.p_value, 6),
        "significant": n.significant,
        "has_children": n.has_children,
    }


def _labels(sides: Iterable[SideLevel], keys: list[NodeKey]) -> dict[NodeKey, NodeLabel]:
    """What each of these nodes shows: its label from a built tree, else its stored frame's."""
    labels: dict[NodeKey, NodeLabel] = {}
    frame_of: dict[NodeKey, int] = {}
    for side in sides:
        labels.update(side.labels)
        frame_of.update(side.frames)
    wanted = {frame_of[k] for k in keys if k not in labels and k in frame_of}
    frames = {f.id: f for f in Frame.objects.filter(id__in=wanted)}
    out = {}
    for key in keys:
        frame = frames.get(frame_of[key]) if key in frame_of else None
        if key in labels:
            out[key] = labels[key]
        elif frame is not None:
            label = frame_label(frame.symbol, frame.image, frame.offset, frame.address)
            out[key] = NodeLabel(
                label, frame.image, frame.is_system, bool(frame.symbol), frame.file, frame.line,
                frame.inlined,
            )  # fmt: skip
        elif isinstance(key, str) and key.endswith(SMALL_SUFFIX):
            out[key] = NodeLabel(SMALL_LABEL, "", False)
        else:  # the "(no stack)" node
            out[key] = NodeLabel(NO_STACK_LABEL, "", False)
    return out


def diff_tree_page(
    base: Side,
    target: Side,
    node: str | None,
    query: DiffTreeQuery | None = None,
    offset: int = 0,
    limit: int = 100,
    budget: InlineBudget | None = None,
) -> TreePage:
    """The children of `node` (the roots when None) in both sides, largest change of the median
    per snapshot first. Raises TreeUnavailable when a side of one snapshot has no rows left
    for a tree other than the stored one; TreeDeferred for the trees of both sides past
    `budget`."""
    query = query or DiffTreeQuery()
    deferrals = Deferrals()
    base_level = deferrals.read(_side_level, base, node, query, budget)
    target_level = deferrals.read(_side_level, target, node, query, budget)
    deferrals.check()
    assert base_level is not None and target_level is not None  # else check() raised
    nodes = diff_tree_samples(base_level.levels, target_level.levels, query.alpha)
    if query.min_bytes or query.min_count:
        nodes = fold_small(nodes, node, query.min_bytes, query.min_count)
    page = nodes[offset : offset + limit]
    labels = _labels((base_level, target_level), [n.key for n in page])
    shown = []
    for n in page:
        label = labels[n.key]
        # under a search, the nodes whose frame matches are marked (the rest lead to them)
        shown.append({**_node_json(n, label), "match": matches(label.symbol, query.search)})
    return TreePage(total=len(nodes), nodes=shown)
