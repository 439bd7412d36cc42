from functools import partial
from typing import Any

from django.apps import AppConfig

from memdash.allocations.signals import snapshot_stored
from memdash.core.writes import follow_ups


class CompareConfig(AppConfig):
    name = "memdash.compare"
    label = "compare"

    def ready(self) -> None:
        from memdash.allocations.models import Snapshot
        from memdash.compare import tasks

        def stored(sender: type, snapshot: Snapshot, **kwargs: Any) -> None:
            follow_ups.after_commit(partial(tasks.queue_build_summary, snapshot.build_id))

        snapshot_stored.connect(stored, weak=False, dispatch_uid="compare.snapshot_stored")
