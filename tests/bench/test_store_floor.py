"""bench/store_floor.py, the bare store the pprof import is set against: its binary COPY data
reads back as the values it was made of, and it writes rows of the counts it is given into
tables that have the index a page needs. The figures are made by hand here."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import store_floor  # noqa: E402

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="a PostgreSQL floor"),
]


def test_copy_data_reads_back_as_its_columns():
    columns = [np.array([1, -2, 2**62]), np.array([0, 7, -(2**63)])]
    raw = connection.cursor().connection  # psycopg's own connection, under Django's
    with raw.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE floor_check (a bigint, b bigint)")
        with cursor.copy("COPY floor_check FROM STDIN (FORMAT BINARY)") as copy:
            copy.write(store_floor.copy_data(columns))
        cursor.execute("SELECT a, b FROM floor_check")
        assert cursor.fetchall() == [(1, 0), (-2, 7), (2**62, -(2**63))]


def test_made_up_rows_have_the_counts_asked_and_unique_node_ids():
    data = store_floor.made_up(rows=5, nodes=7)
    assert [len(c) for c in data["floor_stacknode"]] == [7] * 4
    assert [len(c) for c in data["floor_calltreenode"]] == [7] * 12
    assert [len(c) for c in data["floor_allocationrow"]] == [5] * 9
    ids = data["floor_stacknode"][0]
    assert len(set(ids.tolist())) == 7 and list(ids) == sorted(ids)
    assert set(data["floor_allocationrow"][2].tolist()) <= set(ids.tolist())
