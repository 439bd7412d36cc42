"""`manage.py resymbolicate (--all | --app ID)`

Brings stored snapshots up to date with the app's debug files, the frame identity rule
(`symbolicate.FRAME_IDENTITY`) and the recording rule (`recording.RECORDING_RULE`): snapshots
stored under an older rule are keyed again (a monitor's own hook frames are dropped, every named
frame becomes its function's frame, so they merge with what is stored today), and frames a debug
file names are named. It runs the job a debug file upload starts (`allocations.tasks`), once per
app, here and now; run it once after upgrading memdash. Nothing is read from the uploads again.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memdash.allocations.models import Snapshot
from memdash.allocations.tasks import resymbolicate_app
from memdash.core.management.arguments import app_named
from memdash.core.models import App


class Command(BaseCommand):
    help = (
        "Key again the snapshots stored under an older frame identity or recording rule and "
        "name the frames the apps' debug files name, app by app."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--all", action="store_true", help="every app")
        which.add_argument("--app", help="app id (number) or bundle id")
        parser.add_argument("--platform", help="with a bundle id naming several apps")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["all"]:
            with_snapshots = Snapshot.objects.values("app_id")
            apps = list(App.objects.filter(pk__in=with_snapshots).order_by("pk"))
        else:
            apps = [app_named(options["app"], options.get("platform"))]
        failed = 0
        for app in apps:
            job = resymbolicate_app(app)
            if job is None:
                self.stdout.write(f"{app.bundle_id}: up to date")
                continue
            self.stdout.write(
                f"{app.bundle_id}: {job.snapshots_done} of {job.snapshots_total} snapshots "
                f"brought up to date, {job.frames_named} frames named ({job.state})"
            )
            if job.error:
                failed += 1
                self.stderr.write(f"{app.bundle_id}: {job.error}")
        if failed:
            raise CommandError(f"{failed} of {len(apps)} apps failed")
