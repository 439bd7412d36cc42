"""Classify runs that never got a successor once their grace period has passed (run it daily)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from memdash.core.models import App
from memdash.foom.writes.classify import GRACE_PERIOD
from memdash.foom.writes.sessions import classify_expired_sessions


class Command(BaseCommand):
    help = (
        "Classify pending sessions whose end is known and that are older than the grace period "
        f"({GRACE_PERIOD.days} days), for every app. Uploads do this for their own app too."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        total = 0
        for app in App.objects.order_by("pk"):
            total += len(classify_expired_sessions(app))
        self.stdout.write(f"{total} sessions classified")
