"""Background work of ingest, run through Django's tasks framework."""

from __future__ import annotations

from django.tasks import task

from memdash.ingest.processing import process_upload


@task()
def process_upload_task(upload_id: int) -> str:
    return process_upload(upload_id).status
