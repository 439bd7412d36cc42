"""`manage.py regroup_leaks [--app ID_OR_BUNDLE_ID [--platform P]]`

Regroups the stored leaks of groups made by older fingerprint rules under today's
(`fingerprint.FINGERPRINT_VERSION`), here and now, with a line of progress per batch of groups:
every record goes to the group of its new fingerprint, groups of one leak merge with their
triage carried over (memdash.leaks.writes.regroup). It is what the task `regroup_leaks`
queued after `migrate` does; nothing is read from the uploads again, nothing is deleted but the
emptied groups. Running it again when all is regrouped does nothing.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memdash.core.management.arguments import app_named
from memdash.core.models import App
from memdash.leaks.logic.fingerprint import FINGERPRINT_VERSION
from memdash.leaks.reads import apps_with_older_groups
from memdash.leaks.writes.regroup import Progress, Regrouped, regroup_old_rules


class Command(BaseCommand):
    help = (
        f"Regroup the leaks of groups made by older fingerprint rules under {FINGERPRINT_VERSION}"
        " (every app, or --app)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--app", help="app id (number) or bundle id (default: every app)")
        parser.add_argument("--platform", help="with a bundle id naming several apps")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["app"] is None:
            apps = list(App.objects.filter(pk__in=apps_with_older_groups()).order_by("pk"))
        else:
            apps = [app_named(options["app"], options.get("platform"))]
        if not apps:
            self.stdout.write(f"Every leak group is grouped by {FINGERPRINT_VERSION}.")
        for app in apps:
            result = regroup_old_rules(app, progress=self.progress(app))
            self.stdout.write(f"{app.bundle_id}: {summary(result)}")

    def progress(self, app: App) -> Progress:
        def line(done: int, total: int, result: Regrouped) -> None:
            self.stdout.write(
                f"{app.bundle_id}: {done:,} of {total:,} old groups, {result.records:,} records"
            )

        return line


def summary(result: Regrouped) -> str:
    if not (result.records or result.groups_rekeyed or result.groups_merged):
        return f"nothing to regroup (every group is of {FINGERPRINT_VERSION})"
    return (
        f"{result.records:,} records regrouped under {FINGERPRINT_VERSION} "
        f"({result.moved:,} moved), {result.groups_rekeyed:,} groups re-keyed, "
        f"{result.groups_merged:,} merged"
    )
