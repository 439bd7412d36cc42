"""python manage.py send_alerts [--evaluate]: send every destination's due deliveries (the
retries after a backoff, the digests whose interval has passed). With workers (MEMDASH_TASKS=
database) the queue does this on its own; the embedded default has no worker to wait, so run
this from cron (every minute) if its alerts go to receivers that may fail."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from memdash.alerts.models import Destination
from memdash.alerts.writes.deliver import deliver_due
from memdash.alerts.writes.evaluate import evaluate_app
from memdash.core.models import App


class Command(BaseCommand):
    help = "Send the alerts' deliveries that are due."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--evaluate", action="store_true", help="evaluate every app's rules first"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["evaluate"]:
            fired = sum(
                len(evaluate_app(app))
                for app in App.objects.filter(alert_rules__enabled=True).distinct()
            )
            self.stdout.write(f"{fired} alerts fired")
        sent = sum(deliver_due(destination) for destination in Destination.objects.all())
        self.stdout.write(f"{sent} deliveries sent")
