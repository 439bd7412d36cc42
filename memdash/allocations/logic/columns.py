"""Allocation rows as columns (numpy arrays, one entry per row), and the grouped sums over them
that the pre-aggregated tables are made of. Pure: no Django, no database.

A million-row snapshot is a few arrays here, not a million tuples and lists: rows with the same
(category, stack, thread, generation) add up by one sort, and every total (per category, per
generation, per call-tree node) is a grouped sum. Sums are exact 64-bit integer sums (never
float `bincount` weights): the document's validation has checked that every total fits.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import count
from operator import itemgetter
from typing import cast

import numpy as np
from numpy.typing import NDArray

from memdash.allocations.logic.analysis import Key, TimedKey

Ints = NDArray[np.int64]
NONE = -1  # a row without a stack, thread or generation (their indexes are never negative)
MAX_INT64 = 2**63 - 1


def ints(values: Iterable[int], size: int = -1) -> Ints:
    return np.fromiter(values, dtype=np.int64, count=size)


def index_ints(values: Sequence[int | None]) -> Ints:
    """Indexes (ints and nulls) as an array, NONE for null."""
    none: dict[int | None, int] = {None: NONE}
    return ints(cast(Iterable[int], map(none.get, values, values)), len(values))


def category_codes(names: Iterable[str], size: int = -1) -> tuple[list[str], Ints]:
    """The distinct names in order of first appearance, and each row's index into them: one
    dict lookup a row, done in C (`setdefault` keeps the first row number a name was seen at,
    which `searchsorted` then turns into the name's rank)."""
    first_rows: dict[str, int] = {}
    rows = ints(map(first_rows.setdefault, names, count()), size)
    firsts = ints(first_rows.values(), len(first_rows))
    return list(first_rows), np.searchsorted(firsts, rows).astype(np.int64)


@dataclass
class RowColumns:
    """Allocation rows: `names` are the categories (a row holds an index into them), NONE
    where a row has no stack, thread or generation; `counts` holds (persistent,
    persistent_bytes, transient, transient_bytes) per row. Rows of a snapshot that carries
    time (the events shape) also have the time `bucket` their blocks were made in, part of
    their key (`untimed` sums it out)."""

    names: list[str]
    category: Ints
    stack: Ints
    thread: Ints
    generation: Ints
    counts: Ints  # shape (rows, 4)
    bucket: Ints | None = None

    def __len__(self) -> int:
        return len(self.category)

    @classmethod
    def empty(cls) -> RowColumns:
        none = np.zeros(0, dtype=np.int64)
        return cls([], none, none, none, none, np.zeros((0, 4), dtype=np.int64))

    @classmethod
    def from_dict(cls, rows: dict[Key, list[int]]) -> RowColumns:
        """Columns of rows given as {key: [p, pb, t, tb]} (small importers, event replay)."""
        if not rows:
            return cls.empty()
        keys = list(rows)
        n = len(keys)
        names, category = category_codes(map(itemgetter(0), keys), n)
        stack, thread, generation = (index_ints(list(map(itemgetter(k), keys))) for k in (1, 2, 3))
        counts = np.array(list(rows.values()), dtype=np.int64).reshape(n, 4)
        return cls(names, category, stack, thread, generation, counts)

    @classmethod
    def from_timed(cls, rows: dict[TimedKey, list[int]]) -> RowColumns:
        """Columns of rows given as {key + (bucket,): [p, pb, t, tb]} (event replay)."""
        if not rows:
            return cls.empty()
        keys = list(rows)
        n = len(keys)
        names, category = category_codes(map(itemgetter(0), keys), n)
        stack, thread, generation = (index_ints(list(map(itemgetter(k), keys))) for k in (1, 2, 3))
        bucket = ints(map(itemgetter(4), keys), n)
        counts = np.array(list(rows.values()), dtype=np.int64).reshape(n, 4)
        return cls(names, category, stack, thread, generation, counts, bucket)

    def untimed(self) -> RowColumns:
        """The rows summed over their time buckets (themselves when they have none)."""
        if self.bucket is None:
            return self
        plain = RowColumns(
            self.names, self.category, self.stack, self.thread, self.generation, self.counts
        )
        return plain.aggregated()

    def to_dict(self) -> dict[Key, list[int]]:
        if self.bucket is not None:
            return self.untimed().to_dict()
        names = self.names
        nullable = [_nullable(c.tolist()) for c in (self.stack, self.thread, self.generation)]
        keys = zip(map(names.__getitem__, self.category.tolist()), *nullable, strict=True)
        return dict(zip(keys, self.counts.tolist(), strict=True))

    def keys_code(self) -> Ints:
        """One int64 per row that equals another row's exactly when their keys do (mixed radix
        over the four indexes); lexicographic ranks when they do not fit 64 bits."""
        parts = [self.category, self.stack + 1, self.thread + 1, self.generation + 1]
        if self.bucket is not None:
            parts.append(self.bucket)
        radix = [int(p.max()) + 1 if len(p) else 1 for p in parts]
        if math.prod(radix) <= MAX_INT64:
            code = parts[0].copy()
            for part, base in zip(parts[1:], radix[1:], strict=True):
                code *= base
                code += part
            return code
        order = np.lexsort(parts[::-1])
        stacked = np.stack(parts, axis=1)[order]
        new = np.ones(len(order), dtype=bool)
        new[1:] = (stacked[1:] != stacked[:-1]).any(axis=1)
        ranks = np.empty(len(order), dtype=np.int64)
        ranks[order] = np.cumsum(new) - 1
        return ranks

    def aggregated(self) -> RowColumns:
        """Rows with the same key added up, in the order each key first appears (as a dict of
        rows keeps them)."""
        if len(self) < 2:
            return self
        keys = self.keys_code()
        ordered = np.sort(keys)
        if not bool((ordered[1:] == ordered[:-1]).any()):
            return self  # every key once (the usual case): nothing to add up
        del ordered
        groups = Groups(keys)
        if groups.count == len(self):
            return self
        firsts = groups.firsts
        used = np.unique(self.category[firsts])
        if len(used) == len(self.names):
            names, category = self.names, self.category[firsts]
        else:
            names = [self.names[i] for i in used.tolist()]
            category = np.searchsorted(used, self.category[firsts]).astype(np.int64)
        return RowColumns(
            names,
            category,
            self.stack[firsts],
            self.thread[firsts],
            self.generation[firsts],
            groups.sums(self.counts),
            None if self.bucket is None else self.bucket[firsts],
        )

    def with_stacks(self, remap: Sequence[int]) -> RowColumns:
        """The rows moved to the nodes their stacks became (`remap[old] = new`), added up where
        they now share a key."""
        target = np.asarray(remap, dtype=np.int64)
        stack = np.where(self.stack >= 0, target[np.maximum(self.stack, 0)], NONE)
        moved = RowColumns(
            self.names, self.category, stack, self.thread, self.generation, self.counts,
            self.bucket,
        )  # fmt: skip
        return moved.aggregated()


@dataclass
class BlockColumns:
    """Allocations one by one as columns, for a file of millions of them (heaptrack's: no
    address, no thread or generation): each one's category (an index into `names`), stack
    (NONE: none), size, and when it was made and freed (ms; NaN: never freed). An events run's
    few blocks are `analysis.Block` tuples instead."""

    names: list[str]
    category: Ints
    stack: Ints
    size: Ints
    made_ms: NDArray[np.float64]
    freed_ms: NDArray[np.float64]

    def __len__(self) -> int:
        return len(self.size)

    def with_stacks(self, remap: Sequence[int]) -> BlockColumns:
        """The blocks moved to the nodes their stacks became (`remap[old] = new`)."""
        target = np.asarray(remap, dtype=np.int64)
        stack = np.where(self.stack >= 0, target[np.maximum(self.stack, 0)], NONE)
        return BlockColumns(
            self.names, self.category, stack, self.size, self.made_ms, self.freed_ms
        )


def _nullable(values: list[int]) -> list[int | None]:
    none: dict[int, int | None] = {NONE: None}
    return list(map(none.get, values, values))


class Groups:
    """Rows grouped by an int64 key: `count` groups in order of first appearance, each with its
    first row (`firsts`) and the group of each row (`of_row`)."""

    def __init__(self, keys: Ints) -> None:
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        new = np.ones(len(keys), dtype=bool)
        new[1:] = ordered[1:] != ordered[:-1]
        starts = np.flatnonzero(new)
        by_key_firsts = order[starts]  # stable: the first row of each group
        appearance = np.argsort(by_key_firsts, kind="stable")
        self.count = len(starts)
        self.firsts: Ints = by_key_firsts[appearance]
        self._order, self._starts, self._appearance = order, starts, appearance
        rank = np.empty(self.count, dtype=np.int64)
        rank[appearance] = np.arange(self.count, dtype=np.int64)
        sizes = np.diff(np.r_[starts, len(keys)])
        self.of_row: Ints = np.empty(len(keys), dtype=np.int64)
        self.of_row[order] = np.repeat(rank, sizes)

    def sums(self, values: Ints) -> Ints:
        """Exact per-group sums of `values` (rows, or rows × columns)."""
        if not self.count:
            return np.zeros((0, *values.shape[1:]), dtype=np.int64)
        by_key = np.add.reduceat(values[self._order], self._starts, axis=0)
        return by_key[self._appearance]


def starts_none() -> Ints:
    return np.zeros(0, dtype=np.int64)


def grouped_sums(keys: Ints, values: Ints) -> tuple[Ints, Ints]:
    """(distinct keys in order of first appearance, the sum of `values` for each). Keys that
    are small indexes (categories, nodes, (generation, category) pairs) are summed into a
    table of every possible key (`ufunc.at`: no sort); others are sorted."""
    rows = len(keys)
    if not rows:
        return keys[:0], np.zeros((0, *values.shape[1:]), dtype=np.int64)
    low, high = int(keys.min()), int(keys.max())
    if low < 0 or high >= max(4 * rows, DENSE_KEYS):
        groups = Groups(keys)
        return keys[groups.firsts], groups.sums(values)
    first = np.full(high + 1, rows, dtype=np.int64)
    np.minimum.at(first, keys, np.arange(rows, dtype=np.int64))
    present = np.flatnonzero(first < rows)
    distinct = present[np.argsort(first[present], kind="stable")]
    table = np.zeros((high + 1, *values.shape[1:]), dtype=np.int64)
    if values.ndim == 1:
        np.add.at(table, keys, values)
    else:
        for k in range(values.shape[1]):
            column = np.zeros(high + 1, dtype=np.int64)
            np.add.at(column, keys, np.ascontiguousarray(values[:, k]))
            table[:, k] = column
    return distinct, table[distinct]


DENSE_KEYS = 1 << 16  # key ranges up to this (or 4 × the rows) are summed into a table


def depths(parents: Ints) -> Ints:
    """Each node's depth (0 for a root) in a tree given by parents (NONE for a root), by pointer
    jumping: each round every node adds the distance its current ancestor is from its own and
    moves to that one's ancestor, so a chain of depth d takes log2(d) rounds over the nodes
    still climbing (a million nodes 96 deep: 7 rounds, not 96)."""
    depth = (parents >= 0).astype(np.int64)  # the distance to `above` (or the depth, at a root)
    above = parents.copy()
    climbing = np.flatnonzero(above >= 0)
    while len(climbing):
        to = above[climbing]
        depth[climbing] += depth[to]
        above[climbing] = above[to]
        climbing = climbing[above[climbing] >= 0]
    return depth


def leaves(parents: Ints) -> Ints:
    """The nodes of a tree (given by parents, NONE for a root) that are no node's parent."""
    is_parent = np.zeros(len(parents), dtype=bool)
    is_parent[parents[parents >= 0]] = True
    return np.flatnonzero(~is_parent)


def by_depth(depth: Ints) -> list[Ints]:
    """The nodes at each depth, deepest first (each level one vectorised step of a pass that
    must see children before their parents)."""
    if not len(depth):
        return []
    deepest = int(depth.max())
    # Depths fit 16 bits in any real tree: numpy sorts those by radix (a million in ms).
    keys = depth.astype(np.uint16) if deepest < 1 << 16 else depth
    order = np.argsort(keys, kind="stable")
    bounds = np.searchsorted(depth[order], np.arange(deepest + 2))
    return [order[bounds[d] : bounds[d + 1]] for d in range(len(bounds) - 2, -1, -1)]


@dataclass
class StackArrays:
    """A document's stack tree as arrays: each node's parent (NONE for a root), frame index
    and depth, and the nodes of each depth, deepest first (`by_depth`)."""

    parents: Ints
    frames: Ints
    depth: Ints
    levels: list[Ints]


def stack_arrays(parents: Sequence[int | None], frames: Sequence[int]) -> StackArrays:
    parent = index_ints(parents)
    depth = depths(parent)
    return StackArrays(parent, ints(frames, len(frames)), depth, by_depth(depth))


def merged_tree(
    parents: Sequence[int | None], frames: Sequence[int], merged_to: Sequence[int]
) -> tuple[list[int | None], list[int], list[int]]:
    """A stack tree (parents first) with each frame f replaced by `merged_to[f]`: nodes that
    now have the same parent and frame are one, numbered in order of first appearance (so
    parents still come first). Returns the new parents and frames, and where each old node
    went. One vectorised step per depth level."""
    n = len(parents)
    parent = index_ints(parents)
    frame = np.asarray(merged_to, dtype=np.int64)[ints(frames, n)]
    width = int(frame.max()) + 1 if n else 1
    first = np.arange(n, dtype=np.int64)  # the first node of each node's (parent, frame)
    for level in reversed(by_depth(depths(parent))):
        above = np.where(parent[level] >= 0, first[np.maximum(parent[level], 0)], -1)
        _, at, inverse = np.unique((above + 1) * width + frame[level], True, True)
        first[level] = level[at[inverse]]
    kept = np.flatnonzero(first == np.arange(n))
    number = np.full(n, NONE, dtype=np.int64)
    number[kept] = np.arange(len(kept))
    remap = number[first]
    kept_parents = parent[kept]
    new_parents = np.where(kept_parents >= 0, remap[np.maximum(kept_parents, 0)], NONE)
    return _nullable(new_parents.tolist()), frame[kept].tolist(), remap.tolist()


def inclusive_sums(
    parents: Ints,
    levels: list[Ints],
    own: Ints,
    touched: NDArray[np.bool_],
    in_place: bool = False,
) -> tuple[Ints, NDArray[np.bool_]]:
    """Inclusive counters of each node (its own plus all below it), and which nodes have
    anything at or below them (`touched` marks the nodes with rows of their own); `levels`
    are the nodes of each depth, deepest first (`by_depth`). Only the nodes reached so far
    pass anything up: a level's untouched nodes (most of a profile's) cost nothing.
    `in_place`: the sums are made in `own` itself (no copy of a table of every node)."""
    total = own if in_place else own.copy()
    reached = touched.copy()
    for level in levels:
        level = level[reached[level]]
        level = level[parents[level] >= 0]
        if not len(level):
            continue
        above = parents[level]
        for k in range(total.shape[1]) if total.ndim == 2 else ():
            np.add.at(total[:, k], above, total[level, k])
        if total.ndim == 1:
            np.add.at(total, above, total[level])
        reached[above] = True
    return total, reached


def heaviest_rows(category: Ints, size: Ints, candidates: NDArray[np.bool_]) -> tuple[Ints, Ints]:
    """Per category (among the `candidates` rows), its first row of the largest `size`:
    (categories in order of their first candidate row, rows)."""
    rows = np.flatnonzero(candidates)
    if not len(rows):
        return starts_none(), starts_none()
    cats, sizes = category[rows], size[rows]
    width = int(cats.max()) + 1
    largest = np.full(width, -1, dtype=np.int64)
    np.maximum.at(largest, cats, sizes)
    best = rows[sizes == largest[cats]]
    first = np.full(width, len(category), dtype=np.int64)
    np.minimum.at(first, category[best], best)
    chosen = first[first < len(category)]
    chosen.sort()
    return category[chosen], chosen
