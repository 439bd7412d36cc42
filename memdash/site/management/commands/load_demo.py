"""python manage.py load_demo: the demo app, its data, and the demo login (printed)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from memdash.core.demo import DEMO_PASSWORD, DEMO_USER, demo_user
from memdash.site.demo import load_demo


class Command(BaseCommand):
    help = "Load the demo app (com.example.chat) and print the demo login."

    def handle(self, *args: Any, verbosity: int = 1, **options: Any) -> None:
        ctx = load_demo(verbosity, write=self.stdout.write)
        if ctx is None:
            demo_user()
            self.stdout.write("The demo data is loaded already.")
        self.stdout.write(
            self.style.SUCCESS(f"Demo login: user {DEMO_USER!r}, password {DEMO_PASSWORD!r}")
        )
