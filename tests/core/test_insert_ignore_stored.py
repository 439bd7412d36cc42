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
from memdash.core.writes import apps as core_services
from memdash.core.writes import bulk

pytestmark = pytest.mark.django_db
COLUMNS = ["id", "app_id", "parent_id", "frame_id", "depth"]


def nodes(app_id: int, ids: list[int]) -> list[tuple[int, int, None, int, int]]:
    return [(i, app_id, None, 7, 0) for i in ids]


def store(
    app_id: int, ids: list[int], scoped: bool = False, probe: np.ndarray | None = None
) -> list[str]:
    """The statements of one insert_ignore with keys (`scoped`: told the app; `probe`)."""
    scope = app_id if scoped else None
    with CaptureQueriesContext(connection) as queries:
        bulk.insert_ignore(
            StackNode, COLUMNS, nodes(app_id, ids), ["id", "app_id"], keys=ids, app_id=scope,
            probe=probe,
        )  # fmt: skip
    return [q["sql"] for q in queries.captured_queries]


def stored_in_order(app_id: int) -> list[int]:
    with connection.cursor() as cursor:  # as written (a test-only look at the heap's order)
        cursor.execute(
            "SELECT id FROM snapshots_stacknode WHERE app_id = %s ORDER BY ctid", [app_id]
        )
        return [row[0] for row in cursor.fetchall()]


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
        assert not bulk._insert_by_keys(StackNode, COLUMNS, rows, "id", np.array([3, 4]))
        assert StackNode.objects.count() == 1  # the savepoint undid the COPY; still usable
        bulk.insert_ignore(StackNode, COLUMNS, rows, ["id", "app_id"])
    assert sorted(StackNode.objects.values_list("id", flat=True)) == [1, 2]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL copies new rows")
def test_an_apps_first_rows_go_by_one_copy_without_a_look_at_their_keys(app):
    written = store(app.pk, [30, 10, 20], scoped=True)
    # Whether the app has any row at all, then the COPY in its savepoint: no key looked up.
    assert [sql.split()[0] for sql in written] == ["SELECT", "SAVEPOINT", "RELEASE"]
    assert "LIMIT 1" in written[0] and "ANY" not in written[0]
    assert stored_in_order(app.pk) == [10, 20, 30]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL looks first")
def test_the_keys_of_another_app_are_not_this_apps(app):
    other = core_services.get_or_create_app("com.example.other", "ios", "Other")
    store(other.pk, [1, 2], scoped=True)
    store(app.pk, [1, 2, 3], scoped=True)
    assert stored_in_order(app.pk) == [1, 2, 3]
    again = store(app.pk, [1, 2, 3], scoped=True)
    assert [sql.split()[0] for sql in again] == ["SELECT", "SELECT"]  # has rows; all 3 stored
    assert all(f'"app_id" = {app.pk}' in sql for sql in again)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL looks first")
def test_the_probe_keys_answer_for_every_key(app):
    ids = list(range(1, 101))
    store(app.pk, ids, scoped=True)
    # The probe stored: one look at its 2 keys, not at the 100, and nothing written.
    again = store(app.pk, ids, scoped=True, probe=np.array([100, 7]))
    assert len(again) == 2 and again[1].startswith("SELECT COUNT(*)")
    assert "'{7,100}'" in again[1]  # the array of the two probe keys, in key order
    # A probe key missing: every key is looked up, and the new ones copied.
    more = store(app.pk, [*ids, 102, 101], scoped=True, probe=np.array([102, 101]))
    kinds = [sql.split()[0] for sql in more]
    assert kinds == ["SELECT", "SELECT", "SELECT", "SAVEPOINT", "RELEASE"]
    assert stored_in_order(app.pk) == [*ids, 101, 102]
