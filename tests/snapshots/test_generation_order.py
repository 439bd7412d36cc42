"""Generations read in their model's own order go by their snapshot's id, then their index, with
no join to the snapshots: ordered by the snapshot (its own order, the latest captured first)
they joined the snapshots by id, which Citus answers only by repartitioning, seconds a query
(migration allocations 0021)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memdash.allocations.models import Generation
from tests.compare.helpers import SNAPSHOT_A_ROWS, document, store


@pytest.mark.django_db
def test_by_snapshot_id_then_index_without_the_snapshots(upload):
    # The first stored captured a day before the second: by capture time it would come last.
    first = store(upload, document(SNAPSHOT_A_ROWS, captured_at="2026-11-20T10:00:00+00:00"))
    second = store(
        upload, document(SNAPSHOT_A_ROWS, device="D-2", captured_at="2026-11-21T10:00:00+00:00")
    )
    assert first < second
    with CaptureQueriesContext(connection) as queries:
        read = list(Generation.objects.values_list("snapshot_id", "index", "name"))
    names = ["Launch", "Open", "Idle"]
    assert read == [(first, i, n) for i, n in enumerate(names)] + [
        (second, i, n) for i, n in enumerate(names)
    ]
    (sql,) = [q["sql"] for q in queries.captured_queries]
    assert "snapshots_snapshot" not in sql
