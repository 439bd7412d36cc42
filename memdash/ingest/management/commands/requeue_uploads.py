"""`manage.py requeue_uploads`: queue again the uploads (and debug-file uploads) of workers taken
for dead (`processing` past their lease). Every upload and every worker pass does it too; this
is for a queue that has gone quiet (run it from cron every few minutes, or after restarting
workers that were killed)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from memdash.ingest.tasks import requeue_stale
from memdash.symbols import tasks as symbols_tasks


class Command(BaseCommand):
    help = (
        "Queue again the uploads and debug-file uploads whose worker died mid-job (processing "
        "past their lease, MEMDASH_UPLOAD_LEASE_SECONDS)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        total = 0
        while batch := requeue_stale():
            total += len(batch)
            self.stdout.write("queued again: " + ", ".join(f"upload {pk}" for pk in batch))
        self.stdout.write(f"{total} uploads queued again")
        total = 0
        while batch := symbols_tasks.requeue_stale():
            total += len(batch)
            self.stdout.write(
                "queued again: " + ", ".join(f"debug files upload {pk}" for pk in batch)
            )
        self.stdout.write(f"{total} debug-file uploads queued again")
