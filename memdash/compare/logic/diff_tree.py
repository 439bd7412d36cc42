"""Diffs of call trees (pure: plain data in, plain data out, no Django).

A side's tree is given one level at a time, per snapshot: `{node: TreeTotals}` of the children of
one node in each of the side's snapshots, with inclusive totals. Nodes are keyed so that both
sides and all their snapshots share keys (a stack node id, which is a path's hash, or a path of
frame ids in inverted trees and trees without system libraries).

A node's figure on a side is its median per snapshot over the side's snapshots (0 in a snapshot
without it), as build compare's table, chart and gate read categories; the mean goes beside it.
A side of one snapshot (or one generation) has the snapshot's own value as both.

Each node carries the two-sided Mann-Whitney U test of its bytes per snapshot, as build compare's
categories do: `significant` where it tells the sides apart at `alpha`, the only changes a page
colours. Between sides of several snapshots a change the test does not find is "changed" (not
significant), not grown or shrunk. One snapshot against one (a snapshot or generation diff) gives
the test nothing to go on (p = 1): a change there is grown or shrunk as that run measured it,
and never significant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from memdash.compare.logic.category_diff import Status
from memdash.compare.logic.stats import DEFAULT_ALPHA, mann_whitney_u
from memdash.core.logic.samples import mean, median

NodeKey = int | str  # a stack node id, or a key of its own (a frame path, the "no stack" node)


@dataclass(frozen=True, slots=True)
class TreeTotals:
    """Inclusive totals of one call-tree node in one snapshot of a side."""

    bytes: int = 0
    count: int = 0
    has_children: bool = False


EMPTY_NODE = TreeTotals()


@dataclass(frozen=True, slots=True)
class SideFigures:
    """One node on one side: median and mean per snapshot of its bytes and count, in how many
    of the side's snapshots it has something, and whether it has children in any."""

    bytes: float = 0.0
    count: float = 0.0
    mean_bytes: float = 0.0
    mean_count: float = 0.0
    present: int = 0
    has_children: bool = False


ABSENT = SideFigures()


@dataclass(frozen=True, slots=True)
class DiffNode:
    key: NodeKey
    base: SideFigures
    target: SideFigures
    status: Status
    p_value: float | None = None  # the rank test on the bytes per snapshot (None: a side empty)
    significant: bool = False  # p_value < alpha: the only changes coloured as grown or shrunk

    @property
    def delta_bytes(self) -> float:
        return self.target.bytes - self.base.bytes

    @property
    def delta_count(self) -> float:
        return self.target.count - self.base.count

    @property
    def delta_mean_bytes(self) -> float:
        return self.target.mean_bytes - self.base.mean_bytes

    @property
    def delta_mean_count(self) -> float:
        return self.target.mean_count - self.base.mean_count

    @property
    def has_children(self) -> bool:
        return self.base.has_children or self.target.has_children


def side_figures(levels: Sequence[Mapping[NodeKey, TreeTotals]], key: NodeKey) -> SideFigures:
    """A node's figures over a side's snapshots (one level per snapshot; none: nothing)."""
    if not levels:
        return ABSENT
    found = [level.get(key, EMPTY_NODE) for level in levels]
    sizes = [t.bytes for t in found]
    counts = [t.count for t in found]
    return SideFigures(
        bytes=median(sizes) or 0.0,
        count=median(counts) or 0.0,
        mean_bytes=mean(sizes) or 0.0,
        mean_count=mean(counts) or 0.0,
        present=sum(1 for t in found if t.bytes or t.count),
        has_children=any(t.has_children for t in found),
    )


def node_status(base: SideFigures, target: SideFigures, significant: bool = True) -> Status:
    """new/gone when no snapshot of one side has the node; else, when the change is
    significant, grown/shrunk by the median bytes, then the median count, then (a node in few
    snapshots has medians of 0) the means; a change that is not: changed."""
    if not base.present and target.present:
        return "new"
    if not target.present and base.present:
        return "gone"
    for delta in (
        target.bytes - base.bytes,
        target.count - base.count,
        target.mean_bytes - base.mean_bytes,
        target.mean_count - base.mean_count,
    ):
        if delta:
            if not significant:
                return "changed"
            return "grown" if delta > 0 else "shrunk"
    return "same"


def _bytes_per_snapshot(levels: Sequence[Mapping[NodeKey, TreeTotals]], key: NodeKey) -> list[int]:
    return [level.get(key, EMPTY_NODE).bytes for level in levels]


def diff_tree_samples(
    base: Sequence[Mapping[NodeKey, TreeTotals]],
    target: Sequence[Mapping[NodeKey, TreeTotals]],
    alpha: float = DEFAULT_ALPHA,
) -> list[DiffNode]:
    """Merge one level of the two sides' trees, given per snapshot, into diff nodes of their
    medians per snapshot, each with the rank test of its bytes per snapshot: the largest change
    of the median (either way) first, then of the mean. Nodes with nothing in any snapshot of
    either side are left out."""
    sampled = len(base) > 1 or len(target) > 1  # else one run against another: nothing to test
    keys: set[NodeKey] = set()
    for level in (*base, *target):
        keys.update(level)
    nodes = []
    for key in keys:
        before, after = side_figures(base, key), side_figures(target, key)
        if not before.present and not after.present:
            continue
        p_value = mann_whitney_u(
            _bytes_per_snapshot(base, key), _bytes_per_snapshot(target, key)
        ).p_value
        significant = p_value is not None and p_value < alpha
        status = node_status(before, after, significant or not sampled)
        nodes.append(DiffNode(key, before, after, status, p_value, significant))
    nodes.sort(
        key=lambda n: (
            -abs(n.delta_bytes),
            -abs(n.delta_count),
            -abs(n.delta_mean_bytes),
            -abs(n.delta_mean_count),
            -n.delta_bytes,
            str(n.key),
        )
    )
    return nodes


def diff_tree_nodes(
    base: Mapping[NodeKey, TreeTotals], target: Mapping[NodeKey, TreeTotals]
) -> list[DiffNode]:
    """`diff_tree_samples` of two sides of one snapshot each."""
    return diff_tree_samples([base], [target])


SMALL_SUFFIX = "~small"  # a parent's line of children under the minimums (as the call tree's)
SMALL_LABEL = "other (under the minimum)"


def fold_small(
    nodes: Sequence[DiffNode], parent: str | None, min_bytes: int, min_count: int
) -> list[DiffNode]:
    """The nodes of one level with those under the minimums on both sides (bytes below
    `min_bytes` or count below `min_count` in the base and in the target) merged into one
    last node, keyed by the parent's id and SMALL_SUFFIX, whose figures are their sums."""

    def kept(n: DiffNode) -> bool:
        return (
            max(n.base.bytes, n.target.bytes) >= min_bytes
            and max(n.base.count, n.target.count) >= min_count
        )

    shown = [n for n in nodes if kept(n)]
    rest = [n for n in nodes if not kept(n)]
    if not rest:
        return shown
    base = _summed([n.base for n in rest])
    target = _summed([n.target for n in rest])
    key = (parent or "") + SMALL_SUFFIX
    return [*shown, DiffNode(key, base, target, node_status(base, target))]


def _summed(sides: Sequence[SideFigures]) -> SideFigures:
    return SideFigures(
        bytes=sum(s.bytes for s in sides),
        count=sum(s.count for s in sides),
        mean_bytes=sum(s.mean_bytes for s in sides),
        mean_count=sum(s.mean_count for s in sides),
        present=max(s.present for s in sides),
    )
