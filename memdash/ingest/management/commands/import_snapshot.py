"""python manage.py import_snapshot FILE... (--key KEY | --app ID): the command-line door."""

from __future__ import annotations

import sys
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memdash.allocations.tasks import list_left_to_command
from memdash.core.management.arguments import app_and_key
from memdash.core.management.progress import TerminalProgress
from memdash.core.writes import follow_ups
from memdash.ingest.models import Upload
from memdash.ingest.writes.formats import META_FIELDS
from memdash.ingest.writes.uploads import import_file


class Command(BaseCommand):
    help = "Import snapshot (or any accepted report) files, showing progress."
    # The system checks read every URLconf and view (DRF, drf-spectacular, plotly, the pages):
    # a second of start-up for an import that serves no page. `manage.py check` runs them.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("files", nargs="+")
        who = parser.add_mutually_exclusive_group(required=True)
        who.add_argument("--key", help="an ingest key (the upload is checked against its app)")
        who.add_argument("--app", help="app id (number) or bundle id")
        parser.add_argument("--platform", help="with a bundle id naming several apps")
        for name in META_FIELDS:
            parser.add_argument(f"--{name.replace('_', '-')}", dest=name, default="")

    def handle(self, *args: Any, **options: Any) -> None:
        app, key = app_and_key(options)
        fields = {name: options[name] for name in META_FIELDS if options.get(name)}
        failed = 0
        for number, path in enumerate(options["files"]):
            # The first file's time counts from the command's start: start-up is a phase.
            progress = TerminalProgress(sys.stderr, path, since_start=number == 0)
            # The build's tables and summary and the alert rules (follow_ups) wait until the
            # file's answer is out: its snapshot's pages show it from the commit on.
            with follow_ups.held() as run_follow_ups:
                try:
                    upload, created = import_file(
                        app, path, fields=fields, key=key, progress=progress
                    )
                except OSError as exc:
                    raise CommandError(f"{path}: {exc}") from None
                sys.stderr.write("\n" if sys.stderr.isatty() else "")
                failed += self._answer(path, upload, created)
                progress("follow-up", 0.0)
                run_follow_ups()
                progress("follow-up", 1.0)
                sys.stderr.write("\n" if sys.stderr.isatty() else "")
        if failed:
            raise CommandError(f"{failed} of {len(options['files'])} files were not imported")

    def _answer(self, path: str, upload: Upload, created: bool) -> int:
        """Say what became of the file; 1 if it was not imported."""
        if upload.status != upload.DONE:
            where = f" at {upload.error_path}" if upload.error_path else ""
            self.stderr.write(f"{path}: {upload.status}{where}: {upload.error}")
            return 1
        what = "already imported as" if not created else "imported as"
        self.stdout.write(f"{path}: {what} {upload.result_label} ({upload.counts})")
        if upload.unread:  # keys memdash does not read: what it knows was stored
            self.stdout.write(f"{path}: not read: {', '.join(upload.unread)}")
        if upload.result_kind == "snapshot" and list_left_to_command(upload.result_id):
            self.stdout.write(
                f"{path}: its Allocations List pages read its rows until "
                "`python manage.py make_allocation_lists` makes the list"
            )
        return 0
