"""`manage.py prune_allocation_rows --older-than 90d [--app ID] [--dry-run] [--keep-call-tree]`

Deletes the allocation rows and call-tree totals of snapshots stored before the cutoff, keeping
their category totals, generation totals, build totals and snapshot totals (so trends, build
pages and statistics tables stay complete). Run it daily from cron or a systemd timer.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memdash.allocations.models import Snapshot
from memdash.allocations.writes.retention import DEFAULT_BATCH, parse_age, prune_allocation_rows
from memdash.core.models import App


class Command(BaseCommand):
    help = (
        "Delete old snapshots' allocation rows and call-tree rows, keeping their category "
        "totals, generation totals, build totals and snapshot totals."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than",
            required=True,
            help="age of the snapshots to prune, by when they were stored: 90d, 12w, 36h",
        )
        parser.add_argument("--app", type=int, help="only this app (its id)")
        parser.add_argument(
            "--dry-run", action="store_true", help="count what would be deleted, delete nothing"
        )
        parser.add_argument(
            "--keep-call-tree",
            action="store_true",
            help="keep the stored default call tree (CallTreeNode rows) of pruned snapshots",
        )
        parser.add_argument(
            "--batch-size",
            type=int,
            default=DEFAULT_BATCH,
            help=f"rows deleted per transaction (default {DEFAULT_BATCH})",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            age = parse_age(options["older_than"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        app_id = options["app"]
        if app_id is not None and not App.objects.filter(pk=app_id).exists():
            raise CommandError(f"no app with id {app_id}")
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        dry_run = options["dry_run"]
        verb = "would delete" if dry_run else "deleted"

        def report(snapshot: Snapshot, rows: int, nodes: int) -> None:
            if options["verbosity"] >= 2:
                self.stdout.write(
                    f"snapshot {snapshot.pk}: {verb} {rows} allocation rows, {nodes} call-tree rows"
                )

        result = prune_allocation_rows(
            age,
            app_id=app_id,
            dry_run=dry_run,
            batch_size=options["batch_size"],
            keep_call_tree=options["keep_call_tree"],
            report=report,
        )
        for dropped in result.dropped_months:
            self.stdout.write(
                f"dropped the partition of {dropped.month} of {dropped.table} ({dropped.rows} rows)"
            )
        prefix = "Dry run: " if dry_run else ""
        self.stdout.write(
            f"{prefix}{result.snapshots} snapshots older than {options['older_than']}: {verb} "
            f"{result.allocation_rows} allocation rows and {result.call_tree_nodes} call-tree "
            f"rows ({result.other_rows} rows made of them: by time bucket, blocks, lists); "
            "category, generation, build and snapshot totals kept."
        )
