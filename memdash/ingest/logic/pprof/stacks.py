"""The stack tree of a profile's samples, built with numpy.

Samples with the same list of locations share a stack: the lists are told apart by a 64-bit
hash of them and their length, and each sample's list is then compared with its group's first
one, element by element (were two lists ever to collide, every sample keeps a group of its own).
Each distinct list becomes its frames, outermost first, and the prefix tree of those is built
one depth at a time: the nodes of a depth are the distinct (parent, frame) pairs of the lists
that reach it, numbered in that pair order after every node of the depths above. So Python
loops over depths (tens), never over samples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from memdash.ingest.logic.pprof.columns import concat_ranges

I64 = NDArray[np.int64]
U64 = NDArray[np.uint64]
SEED = 0x6D656D64  # fixed: a profile is always grouped the same way
CHUNK = 1 << 18


@dataclass
class Frames:
    """The frames of each location (outermost first), end to end."""

    first: I64  # per location: where its frames start in `flat`
    count: I64  # per location: how many (0 for a location no sample uses)
    flat: I64


@dataclass
class Stacks:
    parents: I64  # per node: its parent, -1 for a root (the roots are the first nodes)
    frames: I64  # per node: its frame
    of_sample: I64  # per sample: its innermost node, -1 for an empty stack


def sample_slices(counts: I64) -> list[tuple[int, int]]:
    """Runs of samples holding about CHUNK list entries each (a sample is never split), so
    that arrays of a value per entry are made a slice at a time."""
    ends = np.cumsum(counts)
    cuts = np.searchsorted(ends, np.arange(CHUNK, int(ends[-1]) if len(ends) else 0, CHUNK))
    bounds = sorted({0, len(counts), *(int(c) + 1 for c in cuts)})
    return [(a, min(b, len(counts))) for a, b in zip(bounds, bounds[1:], strict=False) if a < b]


def hash_weights(count: int) -> U64:
    """`count` odd 64-bit weights, the same for every profile: splitmix64 of SEED + 1, 2, … (made
    here rather than by numpy.random, whose import alone would cost a small upload more than
    making them)."""
    z = np.arange(1, count + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(SEED)
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return z | np.uint64(1)


def distinct_lists(lists: NDArray[np.int32], starts: I64, counts: I64) -> tuple[I64, I64]:
    """Which group each list is in, and the first list of each group."""
    n = len(counts)
    longest = int(counts.max()) if n else 0
    weights = hash_weights(longest + 1)
    # Σ (entry + 1) · weight[its position] + length · weight[-1], modulo 2^64: the length is in
    # the hash too, and a collision only costs the grouping (checked below).
    key = counts.astype(np.uint64) * weights[-1]
    slices = sample_slices(counts)
    for a, b in slices:
        lo, hi = int(starts[a]), int(starts[b - 1] + counts[b - 1])
        position = np.arange(lo, hi, dtype=np.int64) - np.repeat(starts[a:b], counts[a:b])
        terms = (lists[lo:hi].astype(np.uint64) + np.uint64(1)) * weights[position]
        prefix = np.zeros(hi - lo + 1, np.uint64)
        np.cumsum(terms, out=prefix[1:])
        key[a:b] += prefix[starts[a:b] + counts[a:b] - lo] - prefix[starts[a:b] - lo]
    _, first, group = np.unique(key, return_index=True, return_inverse=True)
    group = group.astype(np.int64)
    first = first.astype(np.int64)
    # Each list against its group's first list, element by element.
    for a, b in slices:
        lo, hi = int(starts[a]), int(starts[b - 1] + counts[b - 1])
        position = np.arange(lo, hi, dtype=np.int64) - np.repeat(starts[a:b], counts[a:b])
        same_place = np.repeat(starts[first[group[a:b]]], counts[a:b]) + position
        if not np.array_equal(lists[same_place], lists[lo:hi]):
            return np.arange(n, dtype=np.int64), np.arange(n, dtype=np.int64)
    return group, first


def sample_stacks(
    counts: I64, locations: NDArray[np.int32], frames: Frames, frame_count: int
) -> Stacks:
    """The stack tree of the samples whose location lists (leaf first, end to end) are
    `locations`, `counts` of them per sample."""
    empty = np.zeros(0, np.int64)
    if not len(counts):
        return Stacks(empty, empty, empty)
    starts = np.cumsum(counts) - counts
    group, first = distinct_lists(locations, starts, counts)
    # Each distinct list's locations, outermost first (entry j of list d is its location
    # starts[d] + counts[d] - 1 - j), then each location's frames.
    lengths = counts[first]
    before = np.cumsum(lengths) - lengths
    reversed_at = np.repeat(starts[first] + lengths - 1 + before, lengths)
    reversed_at -= np.arange(len(reversed_at))
    outermost_first = locations[reversed_at]
    del reversed_at  # a number per entry of every distinct list: the largest array here
    per_entry = frames.count[outermost_first]
    if len(per_entry) and int(per_entry.min()) == int(per_entry.max()) == 1:
        # A frame per location, as in profiles without inlining: no ranges to gather.
        sequence, depth = frames.flat[frames.first[outermost_first]], lengths
    else:
        firsts = frames.first[outermost_first]
        sequence = frames.flat[concat_ranges(firsts, firsts + per_entry)]
        reached = np.zeros(len(per_entry) + 1, np.int64)
        np.cumsum(per_entry, out=reached[1:])
        depth = reached[before + lengths] - reached[before]
    del outermost_first, per_entry
    offset = np.cumsum(depth) - depth
    # The prefix tree, a depth at a time.
    width = max(1, frame_count)
    node = np.full(len(first), -1, np.int64)
    parents: list[I64] = []
    node_frames: list[I64] = []
    created = 0
    level = 0
    active = np.flatnonzero(depth > 0)
    while active.size:
        key = (node[active] + 1) * width + sequence[offset[active] + level]
        pairs, which = np.unique(key, return_inverse=True)
        parents.append(pairs // width - 1)
        node_frames.append(pairs % width)
        node[active] = created + which.ravel()
        created += len(pairs)
        level += 1
        active = active[depth[active] > level]
    return Stacks(
        np.concatenate(parents) if parents else empty,
        np.concatenate(node_frames) if node_frames else empty,
        node[group],
    )
