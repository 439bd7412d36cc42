"""Building a call tree from plain data (no Django): the rows are merged by stack (and thread),
then the shape the options ask for is built (see `calltree` for the types and the options).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from memdash.allocations.logic.calltree.inverted import build_inverted_tree
from memdash.allocations.logic.calltree.merged import build_merged_tree
from memdash.allocations.logic.calltree.transform import transform_rows
from memdash.allocations.logic.calltree.tree import (
    CallTree,
    FrameInfo,
    MergeKey,
    StackInfo,
    TreeOptions,
    TreeRow,
)

# The default: not inverted, system frames shown, threads together.
_PLAIN = TreeOptions()


def build_call_tree(
    rows: Iterable[TreeRow],
    stacks: Mapping[int, StackInfo],
    frames: Mapping[int, FrameInfo],
    options: TreeOptions = _PLAIN,
) -> CallTree:
    """The merged call tree of `rows` under `options` (see the `calltree` module docstring).

    `stacks` must hold every node on the path of each row's stack, and `frames` their frames;
    a missing one raises KeyError (the data is inconsistent, not the user's input). Charged
    libraries, flattened recursion and a search rewrite or filter the stacks first
    (`calltree_transform`).
    """
    if options.rewrites_stacks or options.search:
        rows, stacks = transform_rows(rows, stacks, frames, options)
    merged = _merge_rows(rows, options.by_thread)
    if options.inverted:
        return build_inverted_tree(merged, stacks, frames, options)
    return build_merged_tree(merged, stacks, frames, options)


def _merge_rows(rows: Iterable[TreeRow], by_thread: bool) -> dict[MergeKey, list[int]]:
    """Rows with the same stack (and thread, when separating by thread) add up; rows with
    nothing in them are left out."""
    merged: dict[MergeKey, list[int]] = {}
    for row in rows:
        if not row.bytes and not row.count:
            continue
        key = (row.thread if by_thread else None, row.stack_id)
        acc = merged.get(key)
        if acc is None:
            merged[key] = [row.bytes, row.count]
        else:
            acc[0] += row.bytes
            acc[1] += row.count
    return merged
