"""Production runs uploads in worker processes through the database task queue."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from memdash.allocations.models import Snapshot
from memdash.ingest.models import Upload
from tests.samples import spec_example


@pytest.mark.django_db(transaction=True)
def test_upload_is_queued_then_stored_by_a_worker(database_tasks, upload):
    response = upload(spec_example())
    assert response.status_code == 202
    assert response.json()["status"] == "queued"
    assert Snapshot.objects.count() == 0
    call_command("db_worker", batch=True, no_startup_delay=True, reload=False, verbosity=0)
    stored = Upload.objects.get(pk=response.json()["id"])
    assert stored.status == Upload.DONE
    assert Snapshot.objects.get().pk == stored.result_id
