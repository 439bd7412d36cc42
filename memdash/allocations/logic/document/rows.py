"""The allocation rows and stacks of a memdash.snapshot v1 document, checked as columns (numpy),
not row by row: a million rows cost a few vectorised passes (no Django).

These checks only accept: anything they refuse or cannot tell raises NeedsRowByRow, and the
rows are read again one by one in document order (`document.aggregate_rows_one_by_one`, the
definition of what is accepted), so that the error names the first offending value and its
JSON path (`allocations[1203].stack: index 99001 is outside stacks (99000 entries)`); that
slow pass runs for bad input only. The sums past 64 bits and NUL characters in category names,
checked over all rows, are told from here (`checked_columns`).
"""

from __future__ import annotations

from itertools import repeat
from typing import Any, cast

import numpy as np

from memdash.allocations.logic.columns import NONE, Ints, RowColumns, category_codes
from memdash.core.logic.errors import InvalidUpload
from memdash.core.logic.numbers import MAX_INT64

COUNTERS = ("persistent", "persistent_bytes", "transient", "transient_bytes")
INDEXES = ("stack", "thread", "generation")
# Stands for null while an index column is read (a real index is never negative); a document
# that holds this very value is told apart by counting its nulls.
_NULL = -(2**63)
_NULL_OF = {None: _NULL}


def fail(path: str, message: str) -> InvalidUpload:
    return InvalidUpload(message, path)


class NeedsRowByRow(Exception):
    """The columns hold something the vectorised checks refuse (or cannot tell): the rows are
    read one by one to name the first offending value."""


def nullable_ints(values: list[Any]) -> Ints:
    """An index column as read (ints and nulls), with _NULL for null."""
    try:
        return np.fromiter(map(_NULL_OF.get, values, values), np.int64, len(values))
    except (OverflowError, TypeError, ValueError):
        raise NeedsRowByRow from None


def checked_index(column: Ints, null_count: int, size: int) -> Ints:
    """The column of `nullable_ints` (which held `null_count` nulls) with NONE for null;
    NeedsRowByRow for anything outside [0, size)."""
    nulls = column == _NULL
    if int(np.count_nonzero(nulls)) != null_count:
        raise NeedsRowByRow  # the document's own -2^63, which is no index
    if bool(((column < 0) & ~nulls).any()) or (len(column) and int(column.max()) >= size):
        raise NeedsRowByRow
    column[nulls] = NONE
    return column


def index_column(values: list[Any], size: int) -> Ints:
    """An index column (`stack`, `thread`, `generation`) of ints and nulls, NONE for null."""
    return checked_index(nullable_ints(values), values.count(None), size)


def count_column(values: list[Any]) -> Ints:
    try:
        column = np.fromiter(values, np.int64, len(values))
    except (OverflowError, TypeError, ValueError):
        raise NeedsRowByRow from None
    if len(column) and int(column.min()) < 0:
        raise NeedsRowByRow
    return column


def checked_columns(
    names: list[str],
    category: Ints,
    indexes: list[Ints],
    counts: Ints,
    path: str = "allocations",
) -> RowColumns:
    """Rows whose values each passed their checks (`counts`: rows × 4), added up by key, after
    the checks over all rows: their totals fit 64 bits, and no category name holds a NUL."""
    if "" in names:
        raise NeedsRowByRow
    rows = len(category)
    small = MAX_INT64 // (2 * max(1, rows))
    if rows and int(counts.max()) > small:
        check_sums([sum(counts[:, k].tolist()) for k in range(4)], path)
    nul = [i for i, name in enumerate(names) if "\x00" in name]
    if nul:  # the first row with any such name
        first = int(np.flatnonzero(np.isin(category, nul))[0])
        raise fail(f"{path}[{first}].category", "must not contain NUL characters")
    stack, thread, generation = indexes
    return RowColumns(names, category, stack, thread, generation, counts).aggregated()


def check_sums(sums: list[int], path: str) -> None:
    """Every total memdash stores (per row key, category, generation, node, snapshot; # Total
    and Total Bytes, persistent + transient) is at most a sum over all rows, so those sums
    must fit the database's 64-bit integers."""
    named = [*zip(COUNTERS, sums, strict=True)]
    named += [("# Total", sums[0] + sums[2]), ("Total Bytes", sums[1] + sums[3])]
    for name, total in named:
        if total > MAX_INT64:
            raise fail(path, f"the {name} of all rows add up to {total}, past 2^63 - 1")


def checked_stacks(pairs: list[Any], frame_count: int) -> tuple[list[Any], list[int]]:
    """Each node's parent (before it) and frame (among the frames), of [parent, frame] pairs
    already typed (document_raw's decoder), checked as columns."""
    parents = [pair[0] for pair in pairs]
    frames = [pair[1] for pair in pairs]
    parent = index_column(parents, len(pairs))
    frame = count_column(frames)
    if len(frame) and int(frame.max()) >= frame_count:
        raise NeedsRowByRow
    if bool((parent >= np.arange(len(parent))).any()):
        raise NeedsRowByRow  # a parent at or after its child
    return parents, frames


def aggregate_rows(
    raw: list[Any], stack_count: int, thread_count: int, generation_count: int
) -> RowColumns:
    """Validate the document's allocation rows (as JSON parsed them) into columns, rows with
    the same key added up; NeedsRowByRow when any check refuses."""
    sizes = (stack_count, thread_count, generation_count)
    if raw and set(map(type, raw)) != {dict}:
        raise NeedsRowByRow
    get = dict.get
    categories = list(map(get, raw, repeat("category")))
    if raw and set(map(type, categories)) != {str}:
        raise NeedsRowByRow
    names, category = category_codes(cast(list[str], categories), len(raw))
    del categories
    indexes = []
    for name, size in zip(INDEXES, sizes, strict=True):
        values = list(map(get, raw, repeat(name)))
        if not set(map(type, values)) <= {int, type(None)}:
            raise NeedsRowByRow
        indexes.append(index_column(values, size))
    counters = []
    for name in COUNTERS:
        values = list(map(get, raw, repeat(name), repeat(0)))
        if not set(map(type, values)) <= {int}:
            raise NeedsRowByRow
        counters.append(count_column(values))
    counts = np.stack(counters, axis=1) if raw else np.zeros((0, 4), dtype=np.int64)
    del counters
    return checked_columns(names, category, indexes, counts)
