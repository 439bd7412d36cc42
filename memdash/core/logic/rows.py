"""Rows given as columns: integer columns as numpy arrays (masked where NULL), or one value for
every row, and their two forms: tuples of Python values (SQLite's executemany, made a block at a
time by `.tolist()`) and PostgreSQL's binary COPY data, laid out by numpy a block of rows at a
time. A million rows without a Python loop over them; `core.writes.bulk` writes them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import repeat
from typing import Any, cast

import numpy as np

# A row of column values, in the order of the columns it is written with.
Row = tuple[Any, ...]
# A column of integers: an array (masked where NULL), or one value (None: NULL) for every row.
Column = np.ndarray[Any, Any] | np.ma.MaskedArray[Any, Any] | int | bool | None
BLOCK_ROWS = 65_536  # rows handed to executemany (SQLite) at a time
# Rows laid out for a binary COPY at a time: a block of call-tree rows is 178 bytes a row, and
# a smaller one costs nothing measurable (a few dozen numpy steps for a million rows) while a
# larger one is memory held for nothing (psycopg sends it in pieces anyway).
COPY_BLOCK_ROWS = 16_384


class ArrayRows:
    """Rows of integer columns given as numpy arrays of one length (or a single value for
    every row): what `copy_rows`, `insert_ignore` and `upsert_rows` take besides tuples.
    `order`: the rows are written in this order (row `order[0]` first), without the columns
    being copied in it."""

    def __init__(self, columns: Sequence[Column], order: np.ndarray[Any, Any] | None = None):
        lengths = {len(c) for c in columns if isinstance(c, np.ndarray)}
        if len(lengths) != 1:
            raise ValueError("ArrayRows needs arrays of one length")
        self.columns = list(columns)
        self.length = lengths.pop()
        self.order = order

    def __len__(self) -> int:
        return self.length

    def __iter__(self) -> Iterator[Row]:
        return self.tuples()

    def tuples(self) -> Iterator[Row]:
        """The rows as tuples of Python values (NULL as None), a block at a time."""
        for start in range(0, self.length, BLOCK_ROWS):
            stop = min(self.length, start + BLOCK_ROWS)
            at = slice(start, stop) if self.order is None else self.order[start:stop]
            lists = [_python_values(c, at, stop - start) for c in self.columns]
            yield from zip(*lists, strict=True)


def _python_values(column: Column, at: Any, size: int) -> Iterable[Any]:
    if not isinstance(column, np.ndarray):
        return repeat(column, size)
    part = column[at]
    if isinstance(part, np.ma.MaskedArray):
        values = part.data.astype(object)
        values[np.ma.getmaskarray(part)] = None
        return cast(list[Any], values.tolist())
    return cast(list[Any], part.tolist())


# The binary COPY form of each integer (and float) type (network byte order), and its width.
_BINARY = {"bigint": ">i8", "integer": ">i4", "smallint": ">i2", "boolean": "?",
           "double precision": ">f8"}  # fmt: skip
_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + bytes(8)  # the header, no flags, no extension
_TRAILER = b"\xff\xff"


def binary_copy_data(rows: ArrayRows, types: Sequence[str]) -> Iterator[bytes | memoryview]:
    """PostgreSQL's binary COPY format for the rows (header, tuples, trailer), built by numpy
    a block of rows at a time: each tuple is its field count, then per field its length (-1:
    NULL) and its value. Rows with the same NULLs share one record layout, so the rows are
    laid out a layout at a time (their order in the table does not matter)."""
    formats = []
    for kind in types:
        if kind not in _BINARY:
            raise ValueError(f"no binary form for {kind} columns")
        formats.append(_BINARY[kind])
    yield _SIGNATURE
    nulls = [_null_mask(c, rows.length) for c in rows.columns]
    # Which columns are NULL, a bit each, in as few bytes a row as that takes (a table has
    # at most 64 columns here: a row's bits fit a word).
    bits = np.min_scalar_type((1 << len(nulls)) - 1) if len(nulls) <= 64 else None
    if bits is None:
        raise ValueError("more than 64 columns")
    pattern = np.zeros(rows.length, dtype=bits)
    for i, mask in enumerate(nulls):
        if mask is not None:
            pattern |= mask.astype(bits) << bits.type(i)
    if rows.order is not None:
        pattern = pattern[rows.order]
    for layout in np.unique(pattern).tolist() if rows.length else []:
        chosen = np.flatnonzero(pattern == layout) if len(nulls) else np.arange(rows.length)
        null_at = {i for i in range(len(nulls)) if layout >> i & 1}
        fields: list[tuple[str, str]] = [("n", ">i2")]
        for i, fmt in enumerate(formats):
            fields.append((f"l{i}", ">i4"))
            if i not in null_at:
                fields.append((f"v{i}", fmt))
        record = np.dtype(fields)
        for start in range(0, len(chosen), COPY_BLOCK_ROWS):
            at = chosen[start : start + COPY_BLOCK_ROWS]
            if rows.order is not None:
                at = rows.order[at]
            block = np.empty(len(at), dtype=record)
            block["n"] = len(formats)
            for i, column in enumerate(rows.columns):
                if i in null_at:
                    block[f"l{i}"] = -1
                    continue
                block[f"l{i}"] = np.dtype(formats[i]).itemsize
                block[f"v{i}"] = _values(column, at)
            yield memoryview(block.view(np.uint8))  # its bytes, not a copy of them
    yield _TRAILER


def _null_mask(column: Column, length: int) -> np.ndarray[Any, Any] | None:
    if column is None:
        return np.ones(length, dtype=bool)
    if isinstance(column, np.ma.MaskedArray):
        mask: np.ndarray[Any, Any] = np.ma.getmaskarray(column)
        return mask if mask.any() else None
    return None


def _values(column: Column, at: np.ndarray[Any, Any]) -> Any:
    if isinstance(column, np.ma.MaskedArray):
        return column.data[at]
    if isinstance(column, np.ndarray):
        return column[at]
    return column
