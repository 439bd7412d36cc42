"""Under the embedded default (tasks run at once, in the upload's process) an Allocations List of
more rows than `MEMDASH_LIST_INLINE_ROWS` is made once the web process has answered the upload:
when the WSGI server closes the response it has sent (`core.middleware`,
`core.writes.follow_ups.after_the_answer`), not before the answer; the import command leaves it
to `make_allocation_lists` and says so. The spec example has three rows: a limit of two makes
it "large"; its list's five entries are test_allocation_list_made.py's, worked out by hand."""

from __future__ import annotations

import orjson
import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.core.management import call_command
from django.test import RequestFactory

from memdash.allocations.models import AllocationListOrder, ListEntry, Snapshot
from tests.samples import spec_example

# Real commits: the list is queued by the upload's commit, inside the request.
pytestmark = pytest.mark.django_db(transaction=True)


def lists_made() -> int:
    return AllocationListOrder.objects.count()


def test_a_list_past_the_limit_is_made_once_the_answer_is_sent(settings, ingest_secret):
    settings.MEMDASH_LIST_INLINE_ROWS = 2
    request = RequestFactory().post(
        "/api/v1/uploads",
        data=orjson.dumps(spec_example()),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {ingest_secret}",
    )
    response = WSGIHandler().get_response(request)  # what the server writes to the client
    assert response.status_code in (200, 201, 202)
    snapshot = Snapshot.objects.get(pk=orjson.loads(response.content)["snapshot"]["id"])
    assert (snapshot.row_count, lists_made()) == (3, 0)  # stored, answered, the list not made

    response.close()  # the server has written the answer

    made = AllocationListOrder.objects.get(snapshot_id=snapshot.pk)
    assert (made.entries, ListEntry.objects.filter(snapshot_id=snapshot.pk).count()) == (5, 5)


def test_a_list_within_the_limit_is_made_before_the_answer(settings, ingest_secret):
    request = RequestFactory().post(
        "/api/v1/uploads",
        data=orjson.dumps(spec_example()),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {ingest_secret}",
    )
    response = WSGIHandler().get_response(request)
    assert lists_made() == 1
    response.close()
    assert lists_made() == 1


def test_the_import_command_leaves_a_large_list_to_make_allocation_lists(
    settings, app, tmp_path, capsys
):
    settings.MEMDASH_LIST_INLINE_ROWS = 2
    path = tmp_path / "snapshot.json"
    path.write_bytes(orjson.dumps(spec_example()))
    call_command("import_snapshot", str(path), "--app", str(app.pk))
    assert "make_allocation_lists" in capsys.readouterr().out
    assert lists_made() == 0

    call_command("make_allocation_lists")
    assert AllocationListOrder.objects.get().entries == 5
