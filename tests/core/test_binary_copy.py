"""Rows given as numpy columns (`core.logic.rows.ArrayRows`): PostgreSQL's binary COPY layout built
from them, and a round trip through the database in use (binary COPY on PostgreSQL, executemany
on SQLite)."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from django.db import IntegrityError, transaction

from memdash.allocations.models import Category, GenerationCategoryTotal
from memdash.core.logic.rows import COPY_BLOCK_ROWS, ArrayRows, binary_copy_data
from memdash.core.writes.bulk import copy_rows


def decode(data: bytes, formats: list[str]) -> list[tuple[int | None, ...]]:
    """PostgreSQL's binary COPY format read back as the manual describes it (signature, flags,
    header extension; per tuple a field count, then each field's length, -1 for NULL, and its
    big-endian value; the trailer -1)."""
    assert data[:11] == b"PGCOPY\n\xff\r\n\x00"
    flags, extension = struct.unpack(">ii", data[11:19])
    assert (flags, extension) == (0, 0)
    at, rows = 19, []
    while True:
        (count,) = struct.unpack(">h", data[at : at + 2])
        at += 2
        if count == -1:
            assert at == len(data)
            return rows
        row: list[int | None] = []
        for fmt in formats:
            (length,) = struct.unpack(">i", data[at : at + 4])
            at += 4
            if length == -1:
                row.append(None)
                continue
            assert length == struct.calcsize(fmt)
            row.append(struct.unpack(fmt, data[at : at + length])[0])
            at += length
        rows.append(tuple(row))


def test_rows_past_one_block_are_laid_out_block_after_block_in_their_order():
    n = COPY_BLOCK_ROWS * 2 + 3
    values = np.arange(n, dtype=np.int64) * 3
    order = np.arange(n)[::-1]  # written last row first
    data = b"".join(binary_copy_data(ArrayRows([values, 5], order=order), ["bigint", "integer"]))
    assert decode(data, [">q", ">i"]) == [(3 * i, 5) for i in range(n - 1, -1, -1)]


def test_binary_copy_layout_with_nulls_and_an_order():
    rows = ArrayRows(
        [
            7,  # one value for every row
            np.array([2**62, -1, 3]),
            np.ma.MaskedArray(np.array([10, 20, 30]), mask=[False, True, False]),
            np.ma.MaskedArray(np.array([1, 2, 3]), mask=[True, True, False]),
        ],
        order=np.array([2, 0, 1]),
    )
    data = b"".join(binary_copy_data(rows, ["bigint", "bigint", "integer", "integer"]))
    # Rows sharing their NULLs are laid out together; each keeps its own values.
    got = decode(data, [">q", ">q", ">i", ">i"])
    assert sorted(got, key=str) == sorted(
        [(7, 3, 30, 3), (7, 2**62, 10, None), (7, -1, None, None)], key=str
    )
    assert list(rows) == [(7, 3, 30, 3), (7, 2**62, 10, None), (7, -1, None, None)]


@pytest.mark.django_db
def test_array_rows_round_trip_through_the_database():
    generation = np.ma.MaskedArray(np.array([0, 0, 5]), mask=[True, False, False])
    counts = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [2**62, 0, 0, 1]])
    copy_rows(
        GenerationCategoryTotal,
        ["app_id", "snapshot_id", "generation", "category_id", "persistent", "persistent_bytes",
         "transient", "transient_bytes"],
        ArrayRows([1, 42, generation, np.array([9, 8, 7]), *counts.T]),
    )  # fmt: skip
    stored = GenerationCategoryTotal.objects.filter(snapshot_id=42).order_by("category_id")
    assert list(
        stored.values_list(
            "generation", "category_id", "persistent", "persistent_bytes", "transient",
            "transient_bytes",
        )
    ) == [(5, 7, 2**62, 0, 0, 1), (0, 8, 5, 6, 7, 8), (None, 9, 1, 2, 3, 4)]  # fmt: skip


def test_a_row_the_table_refuses_is_djangos_integrity_error(app):
    """Whichever way the rows go (psycopg's COPY, SQLite's executemany), a refused row is the
    error Django callers catch, and nothing of the load is kept."""
    columns = ["app_id", "name", "name_hash", "kind"]
    rows = [(app.pk, "first", 1, "heap"), (app.pk, "second, same hash", 1, "heap")]
    with pytest.raises(IntegrityError), transaction.atomic():
        copy_rows(Category, columns, rows)
    assert not Category.objects.filter(app=app).exists()
