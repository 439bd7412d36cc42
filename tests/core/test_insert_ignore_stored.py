"""`bulk.insert_ignore` with the rows' keys: when every key is stored already (an app's next
upload: its frames and stack nodes), nothing is written; some missing, and those rows go in by
one COPY (PostgreSQL), the stored ones kept as they are; a key stored meanwhile makes that COPY
fail in its savepoint, and the rows then go the staged way, the transaction still usable.
`all_stored` looks at every key at once up to `SAMPLED_ABOVE` keys; past that at a sample
first, then at every key, so a key missing outside the sample is still found. On SQLite it
never claims all are stored (its INSERT OR IGNORE costs no more than the look)."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from memdash.allocations.models import StackNode
from memdash.core.writes import bulk

pytestmark = pytest.mark.django_db
COLUMNS = ["id", "app_id", "parent_id", "frame_id", "depth"]


def nodes(app_id: int, ids: list[int]) -> list[tuple[int, int, None, int, int]]:
    return [(i, app_id, None, 7, 0) for i in ids]


def store(app_id: int, ids: list[int]) -> list[str]:
    """The statements of one insert_ignore with keys."""
    with CaptureQueriesContext(connection) as queries:
        bulk.insert_ignore(StackNode, COLUMNS, nodes(app_id, ids), ["id", "app_id"], keys=ids)
    return [q["sql"] for q in queries.captured_queries]


def test_rows_stored_once_whatever_is_there(app):
    first = list(range(1, 201))
    store(app.pk, first)
    StackNode.objects.filter(id=5).update(depth=3)  # a stored row is kept as it is
    store(app.pk, [*first, 1000])
    assert StackNode.objects.count() == 201
    assert StackNode.objects.get(id=5).depth == 3
    assert StackNode.objects.filter(id=1000).exists()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL looks first")
def test_nothing_is_written_when_every_key_is_stored(app):
    ids = list(range(-100, 100))
    store(app.pk, ids)
    again = store(app.pk, list(reversed(ids)))
    assert len(again) == 1 and again[0].startswith("SELECT COUNT(*)")  # the 200 keys at once


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL looks first")
def test_many_stored_keys_are_looked_at_by_a_sample_then_all(app):
    ids = list(range(1, bulk.SAMPLED_ABOVE + 2))
    store(app.pk, ids)
    again = store(app.pk, ids)
    assert len(again) == 2 and all(sql.startswith("SELECT COUNT(*)") for sql in again)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL looks first")
def test_a_key_missing_outside_the_sample_is_found(app):
    # 8,193 keys: past SAMPLED_ABOVE, so a sample of every 128th (1, 129, 257, …) goes first
    ids = np.arange(1, bulk.SAMPLED_ABOVE + 2, dtype=np.int64)
    bulk.insert_ignore(StackNode, COLUMNS, nodes(app.pk, ids.tolist()), ["id", "app_id"])
    StackNode.objects.filter(id=2).delete()
    assert not bulk.all_stored(StackNode, "id", ids)
    assert bulk.all_stored(StackNode, "id", ids[2:])
    assert not bulk.all_stored(StackNode, "id", np.array([], dtype=np.int64))


@pytest.mark.skipif(connection.vendor != "sqlite", reason="what SQLite does")
def test_sqlite_inserts_or_ignores_without_looking(app):
    store(app.pk, [1, 2])
    assert not bulk.all_stored(StackNode, "id", [1, 2])


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL copies new rows")
def test_new_rows_go_by_one_copy_in_key_order(app):
    store(app.pk, [10, 30])
    written = store(app.pk, [40, 10, 20, 30])
    # The count of the keys stored, which of them, then the COPY (psycopg's own, not captured)
    # between SAVEPOINT and RELEASE; no temporary table, no INSERT.
    kinds = [sql.split()[0] for sql in written]
    assert kinds == ["SELECT", "SELECT", "SAVEPOINT", "RELEASE"]
    with connection.cursor() as cursor:  # as written: the first two, then the new in key order
        cursor.execute("SELECT id FROM snapshots_stacknode ORDER BY ctid")
        assert [row[0] for row in cursor.fetchall()] == [10, 30, 20, 40]


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL copies new rows")
def test_a_key_stored_meanwhile_sends_the_rows_the_staged_way(app):
    store(app.pk, [1])
    rows = nodes(app.pk, [1, 2])
    with transaction.atomic():
        # As if another upload had stored 1 after the look: the COPY of [1, 2] fails.
        assert not bulk._copy_new(StackNode, COLUMNS, rows, "id", np.array([3, 4]))
        assert StackNode.objects.count() == 1  # the savepoint undid the COPY; still usable
        bulk.insert_ignore(StackNode, COLUMNS, rows, ["id", "app_id"])
    assert sorted(StackNode.objects.values_list("id", flat=True)) == [1, 2]
