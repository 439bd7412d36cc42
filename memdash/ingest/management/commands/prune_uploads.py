"""`manage.py prune_uploads`: delete the stored bodies of uploads rejected more than
MEMDASH_REJECTED_BODY_DAYS ago (run it daily). The uploads stay listed with their errors."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from memdash.ingest.writes.uploads import prune_rejected_bodies


class Command(BaseCommand):
    help = (
        "Delete the bodies of uploads rejected more than MEMDASH_REJECTED_BODY_DAYS "
        f"({settings.MEMDASH_REJECTED_BODY_DAYS}) days ago; the uploads and their errors stay."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        deleted = prune_rejected_bodies()
        self.stdout.write(f"{deleted} bodies of rejected uploads deleted")
