"""`manage.py make_allocation_lists [--app ID]`

Makes the Allocations List ahead (`writes.allocation_lists`) of every snapshot with rows whose
list is not made, or was made before debug files renamed its frames: snapshots stored before
lists were made ahead, or whose task was lost. Their lists are read from their rows until then.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db.models import Exists, OuterRef

from memdash.allocations.models import AllocationListOrder, Snapshot
from memdash.allocations.writes.allocation_lists import make_allocation_list


class Command(BaseCommand):
    help = "Make the Allocations List of the snapshots whose list is not made or out of date."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--app", type=int, help="only this app (its id)")

    def handle(self, *args: Any, **options: Any) -> None:
        # Without a list made at the snapshot's symbols version: a subquery that names the
        # app (an outer join of the two by the snapshot's id is refused on Citus).
        current = AllocationListOrder.objects.filter(
            snapshot_id=OuterRef("pk"),
            app_id=OuterRef("app_id"),
            symbols_version=OuterRef("symbols_version"),
        )
        snapshots = Snapshot.objects.filter(rows_pruned_at__isnull=True).filter(~Exists(current))
        if options["app"] is not None:
            snapshots = snapshots.filter(app_id=options["app"])
        made = 0
        for snapshot in snapshots.order_by("pk").iterator():
            order = make_allocation_list(snapshot)
            made += 1
            if order is not None:
                self.stdout.write(
                    f"snapshot {snapshot.pk}: {order.entries} entries in {order.seconds:.1f} s"
                )
        self.stdout.write(f"{made} lists made")
