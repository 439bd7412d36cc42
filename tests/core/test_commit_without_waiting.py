"""`transactions.commit_without_waiting_for_the_disk`: on PostgreSQL, the transaction it is
called in commits without waiting for the WAL flush, and only that transaction; on SQLite it
does nothing. The upload's processing transaction uses it (a lost one is processed again)."""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from memdash.core.writes import transactions


def synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="a PostgreSQL setting")
def test_only_the_transaction_it_is_called_in_stops_waiting():
    assert synchronous_commit() == "on"
    with transaction.atomic():
        transactions.commit_without_waiting_for_the_disk()
        assert synchronous_commit() == "off"
    assert synchronous_commit() == "on"


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "sqlite", reason="what it does on SQLite")
def test_nothing_is_sent_to_sqlite():
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        transactions.commit_without_waiting_for_the_disk()
    assert len(queries) == 0
