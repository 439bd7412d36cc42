from functools import partial
from typing import Any

from django.apps import AppConfig
from django.db import transaction
from django.db.models.signals import pre_delete

from memdash.allocations.signals import snapshot_stored
from memdash.core.writes import follow_ups
from memdash.symbols.signals import debug_files_stored


class AllocationsConfig(AppConfig):
    """Floor 2: the allocation data every lens reads (snapshots, their rows and stored totals)."""

    name = "memdash.allocations"
    label = "allocations"

    def ready(self) -> None:
        # The snapshot rows carry no database constraint, so no cascade reaches them: they go
        # here, in bulk, when an app, a build or a snapshot is deleted (core.services).
        from memdash.allocations import tasks
        from memdash.allocations.models import Snapshot
        from memdash.allocations.writes import snapshots as services
        from memdash.core.models import App, Build
        from memdash.core.writes.apps import cascaded_from

        def app_deleting(sender: type, instance: App, **kwargs: Any) -> None:
            services.delete_app_data(instance.pk)

        def build_deleting(sender: type, instance: Build, **kwargs: Any) -> None:
            if not cascaded_from(kwargs.get("origin"), App):
                services.delete_build_data(instance)

        def snapshot_deleting(sender: type, instance: Snapshot, **kwargs: Any) -> None:
            if not cascaded_from(kwargs.get("origin"), App, Build):
                services.delete_snapshot_data(instance)

        # weak=False: the receivers are local functions, kept only by the signal.
        pre_delete.connect(app_deleting, sender=App, weak=False, dispatch_uid="allocations.app")
        pre_delete.connect(
            build_deleting, sender=Build, weak=False, dispatch_uid="allocations.build"
        )
        pre_delete.connect(
            snapshot_deleting, sender=Snapshot, weak=False, dispatch_uid="allocations.snapshot"
        )

        # A build's statistics tables and the snapshot's Allocations List are made ahead of
        # their pages, once the snapshot committed.
        def stored(sender: type, snapshot: Snapshot, **kwargs: Any) -> None:
            # The build's tables only serve the build's pages: they may wait for the door's
            # answer (follow_ups); the snapshot's own list is made before it.
            follow_ups.after_commit(partial(tasks.queue_build_tables, snapshot.build_id))
            made = partial(tasks.queue_allocation_list, snapshot.pk, tasks.list_entries(snapshot))
            transaction.on_commit(made)

        snapshot_stored.connect(stored, weak=False, dispatch_uid="allocations.snapshot_stored")
        # Debug files that arrive after snapshots name their stored frames (tasks.py).
        debug_files_stored.connect(
            tasks.debug_files_stored, weak=False, dispatch_uid="allocations.symbolicate"
        )
