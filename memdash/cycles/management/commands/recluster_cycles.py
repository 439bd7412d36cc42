"""Re-cluster the retain cycles of one app or of all apps (after the prefix list was changed
outside the cycles settings page, or after an algorithm change)."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memdash.core.models import App
from memdash.cycles.writes import recluster_app


class Command(BaseCommand):
    help = "Re-cluster retain cycles from the stored cycles (all apps, or --app ID)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--app", type=int, help="app id (default: every app)")

    def handle(self, *args: Any, **options: Any) -> None:
        apps = (
            App.objects.all() if options["app"] is None else App.objects.filter(pk=options["app"])
        )
        if options["app"] is not None and not apps.exists():
            raise CommandError(f"no app with id {options['app']}")
        for app in apps.order_by("pk"):
            result = recluster_app(app)
            self.stdout.write(
                f"{app.bundle_id}: {result.clusters} clusters, {result.loops_moved} cycles moved"
            )
