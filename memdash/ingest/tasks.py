"""Background work of ingest, run through Django's tasks framework."""

from __future__ import annotations

from django.tasks import task


@task()
def process_upload_task(upload_id: int) -> str:
    from memdash.ingest.services import process_upload

    return process_upload(upload_id).status
