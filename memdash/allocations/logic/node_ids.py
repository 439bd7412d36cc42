"""The ids of stack nodes, computed over arrays (pure: no Django, no database).

A stack node's id chains from its parent's and its frame's, so that a path has one id in every
upload of an app and every view (trees, diffs, build compare) can key by it. Under frame identity
rule 2 (`symbolicate.FRAME_IDENTITY`) the id is a 64-bit mix, not a digest of text:

    key  = mix64(frame id XOR mix64(app id))
    node = mix64(parent's id (0 for a root) XOR key)

`mix64` is SplitMix64's finaliser, a bijection of 64-bit words with full avalanche: children of
one parent never share an id (for a given parent the map from frame id to node id is one to one),
and any two other paths meet by chance only (about n² / 2⁶⁵ for n nodes: 3 in 10⁸ for a million).
The ingest checks the nodes of each document anyway (`totals.nodes_of`). Numpy computes it a depth
level at a time, the roots first, with no Python work per node: a million nodes in milliseconds,
where a blake2b digest per node (rule 1) took seconds.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from memdash.allocations.logic.columns import Ints

U64 = NDArray[np.uint64]
MASK64 = (1 << 64) - 1
GAMMA = np.uint64(0x9E3779B97F4A7C15)
MULTIPLY_1 = np.uint64(0xBF58476D1CE4E5B9)
MULTIPLY_2 = np.uint64(0x94D049BB133111EB)


def mix64(words: U64) -> U64:
    """SplitMix64's finaliser over an array of 64-bit words (wrapping arithmetic)."""
    x = words + GAMMA
    x = (x ^ (x >> np.uint64(30))) * MULTIPLY_1
    x = (x ^ (x >> np.uint64(27))) * MULTIPLY_2
    return x ^ (x >> np.uint64(31))


def app_salt(app_id: int) -> np.uint64:
    """What every key of one app is mixed with, so that two apps' paths never share ids."""
    salt: np.uint64 = mix64(np.array([app_id & MASK64], dtype=np.uint64))[0]
    return salt


def node_ids(app_id: int, parents: Ints, frame_ids: Ints, levels: list[Ints]) -> Ints:
    """The id of each node (signed 64-bit, as stored). `parents[i]` is node i's parent's index
    (negative for a root), `frame_ids[i]` its frame's id, and `levels` the node indexes of each
    depth, the roots first (`columns.levels`)."""
    keys = mix64(frame_ids.view(np.uint64) ^ app_salt(app_id))
    ids = np.zeros(len(parents), dtype=np.uint64)
    for level in levels:
        above = parents[level]
        parent_ids = np.where(above >= 0, ids[np.maximum(above, 0)], np.uint64(0))
        ids[level] = mix64(parent_ids ^ keys[level])
    return ids.view(np.int64)
