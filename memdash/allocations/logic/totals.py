"""The pre-aggregated tables of one snapshot, from its rows as columns (pure: no Django).

What ingest stores besides the raw rows (category totals, per-generation totals, the call tree
with inclusive totals, each category's heaviest stack) is computed here with grouped sums over
numpy columns, and the call tree's inclusive totals by one pass over the nodes, a depth level
at a time: no Python loop over rows, a few over thousands of categories at most.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memdash.allocations.logic.columns import (
    NONE,
    Groups,
    Ints,
    RowColumns,
    StackArrays,
    by_depth,
    grouped_sums,
    heaviest_rows,
    inclusive_sums,
)


@dataclass
class Nodes:
    """A snapshot's stack nodes as they are stored: a document may name one path twice (two
    frames with one id), which is one node. Arrays over the distinct nodes, in order of first
    appearance, except `of_node` (per node of the document: its distinct node); `levels` are
    the distinct nodes of each depth, deepest first (`columns.by_depth`)."""

    ids: Ints
    parent: Ints  # index of the parent among the distinct nodes, NONE for a root
    frame_id: Ints
    depth: Ints
    of_node: Ints
    levels: list[Ints]

    @property
    def parent_ids(self) -> np.ma.MaskedArray[Any, Any]:
        """Each node's parent's id, masked for a root (NULL)."""
        roots = self.parent < 0
        return np.ma.MaskedArray(self.ids[np.maximum(self.parent, 0)], mask=roots)


class NodeIdCollision(ValueError):
    """Two different paths of one document got one id (by chance: about 3 in 10⁸ for a
    million nodes); storing them would merge two paths."""


def nodes_of(stacks: StackArrays, node_ids: Ints, node_frame_ids: Ints) -> Nodes:
    """The distinct nodes of a document's stacks (parents first, as validated), given each
    node's id and its frame's id. Raises NodeIdCollision when two nodes share an id but not
    their path."""
    parent, ids, frame_id, depth = stacks.parents, node_ids, node_frame_ids, stacks.depth
    n = len(ids)
    ordered = np.sort(ids)
    if not bool((ordered[1:] == ordered[:-1]).any()):  # a prefix tree: every node distinct
        return Nodes(ids, parent, frame_id, depth, np.arange(n, dtype=np.int64), stacks.levels)
    del ordered
    groups = Groups(ids)
    firsts, of_node = groups.firsts, groups.of_row
    _check_paths(parent, ids, frame_id, firsts, of_node)
    doc_parent = parent[firsts]
    distinct_parent = np.where(doc_parent >= 0, of_node[np.maximum(doc_parent, 0)], NONE)
    kept_depth = depth[firsts]  # one id, one path: one depth
    return Nodes(
        ids[firsts], distinct_parent, frame_id[firsts], kept_depth, of_node, by_depth(kept_depth)
    )


def _check_paths(parent: Ints, ids: Ints, frame_id: Ints, firsts: Ints, of_node: Ints) -> None:
    """Nodes with one id have one frame and one parent id: the same path, named twice."""
    parent_id = np.where(parent >= 0, ids[np.maximum(parent, 0)], 0)
    first = firsts[of_node]
    if not (
        np.array_equal(frame_id[first], frame_id) and np.array_equal(parent_id[first], parent_id)
    ):
        raise NodeIdCollision("two stack paths of the document got one node id")


@dataclass
class CallTree:
    """The call-tree rows: the nodes on the path of some allocation, with their own and
    inclusive counters (rows × 4)."""

    nodes: Ints  # indexes among the distinct nodes
    inclusive: Ints
    own: Ints


@dataclass
class Totals:
    """Everything the pre-aggregated tables hold for one snapshot."""

    # Per category (an index into the rows' names), in order of first appearance.
    categories: Ints
    category_counts: Ints
    # Per (generation, category) pair: NONE for before the first mark.
    generation_of_pair: Ints
    category_of_pair: Ints
    pair_counts: Ints
    # Per category with a stack: the row (document stack index) of its heaviest stack.
    heaviest_categories: Ints
    heaviest_stacks: Ints
    call_tree: CallTree
    totals: list[int]

    def per_category(self, names: list[str]) -> list[tuple[str, list[int]]]:
        counts: list[list[int]] = self.category_counts.tolist()
        return [(names[c], counts[i]) for i, c in enumerate(self.categories.tolist())]

    def heaviest(self, names: list[str]) -> dict[str, int]:
        """Category name -> the document stack of its heaviest row (by total bytes; the first
        such row in document order on a tie)."""
        return {
            names[c]: s
            for c, s in zip(
                self.heaviest_categories.tolist(), self.heaviest_stacks.tolist(), strict=True
            )
        }


def snapshot_totals(rows: RowColumns, nodes: Nodes) -> Totals:
    counts = rows.counts
    categories, category_counts = grouped_sums(rows.category, counts)
    # (generation, category) as one key: generations are few, categories thousands.
    width = max(1, len(rows.names))
    pairs, pair_counts = grouped_sums((rows.generation + 1) * width + rows.category, counts)
    with_stack = rows.stack >= 0
    size = counts[:, 1] + counts[:, 3]
    heavy_categories, heavy_rows = heaviest_rows(rows.category, size, with_stack)
    return Totals(
        categories=categories,
        category_counts=category_counts,
        generation_of_pair=pairs // width - 1,
        category_of_pair=pairs % width,
        pair_counts=pair_counts,
        heaviest_categories=heavy_categories,
        heaviest_stacks=rows.stack[heavy_rows],
        call_tree=call_tree(rows, nodes, with_stack),
        totals=[int(v) for v in counts.sum(axis=0).tolist()] if len(counts) else [0, 0, 0, 0],
    )


def call_tree(rows: RowColumns, nodes: Nodes, with_stack: NDArray[np.bool_]) -> CallTree:
    """Own counters of each node (the rows on its stack), and inclusive ones (its own and all
    below it), for the nodes with anything at or below them. Only the nodes with rows have own
    counters: they are kept as such, and the two tables of 32 bytes a node are made one after
    the other, each of the kept nodes only (a million nodes: 30 MB a table)."""
    count = len(nodes.ids)
    distinct, sums = np.zeros(0, dtype=np.int64), np.zeros((0, 4), dtype=np.int64)
    if count and bool(with_stack.any()):
        distinct, sums = grouped_sums(
            nodes.of_node[rows.stack[with_stack]], rows.counts[with_stack]
        )
    inclusive = np.zeros((count, 4), dtype=np.int64)
    inclusive[distinct] = sums
    touched = np.zeros(count, dtype=bool)
    touched[distinct] = True
    reached = inclusive_sums(nodes.parent, nodes.levels, inclusive, touched, in_place=True)[1]
    kept = np.flatnonzero(reached)
    if len(kept) < count:
        inclusive = inclusive[kept]
    own = np.zeros((len(kept), 4), dtype=np.int64)
    own[np.searchsorted(kept, distinct)] = sums  # (the nodes with rows are among the kept)
    return CallTree(kept, inclusive, own)


def generation_growth(totals: Totals, generations: int) -> list[tuple[int, int]]:
    """Per generation mark: (persistent bytes, persistent count) created in it."""
    growth = [[0, 0] for _ in range(generations)]
    marks = totals.generation_of_pair.tolist()
    for gen, (p, pb, _, _) in zip(marks, totals.pair_counts.tolist(), strict=True):
        if gen >= 0:
            growth[gen][0] += pb
            growth[gen][1] += p
    return [(b, p) for b, p in growth]


@dataclass
class BucketTrees:
    """The call trees of the rows made in each time bucket, one after another: per tree row
    its bucket, its node (an index among the distinct nodes) and counters (`CallTree`'s)."""

    bucket: Ints
    nodes: Ints
    inclusive: Ints
    own: Ints


def call_trees_by_bucket(rows: RowColumns, nodes: Nodes) -> BucketTrees:
    """The call tree of each time bucket of rows that carry one (`RowColumns.bucket`): what a
    range's tree sums over its buckets instead of reading the rows."""
    assert rows.bucket is not None
    order = np.argsort(rows.bucket, kind="stable")
    buckets = rows.bucket[order]
    starts = np.flatnonzero(np.r_[True, buckets[1:] != buckets[:-1]]) if len(order) else order
    ends = np.r_[starts[1:], len(order)]
    parts: list[tuple[int, CallTree]] = []
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        at = order[start:end]
        stack, counts = rows.stack[at], rows.counts[at]
        part = RowColumns(rows.names, rows.category[at], stack, rows.thread[at],
                          rows.generation[at], counts)  # fmt: skip
        parts.append((int(buckets[start]), call_tree(part, nodes, stack >= 0)))
    none = np.zeros(0, dtype=np.int64)
    return BucketTrees(
        np.concatenate([np.full(len(t.nodes), b, dtype=np.int64) for b, t in parts] or [none]),
        np.concatenate([t.nodes for _, t in parts] or [none]),
        np.concatenate([t.inclusive for _, t in parts] or [none.reshape(0, 4)]),
        np.concatenate([t.own for _, t in parts] or [none.reshape(0, 4)]),
    )
