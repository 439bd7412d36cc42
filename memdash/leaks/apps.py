from django.apps import AppConfig
from django.db.models.signals import post_migrate

from memdash.symbols.signals import debug_files_stored


class LeaksConfig(AppConfig):
    name = "memdash.leaks"
    label = "leaks"

    def ready(self) -> None:
        # Debug files that arrive after leak reports name their stored frames (tasks.py).
        from memdash.leaks import tasks

        debug_files_stored.connect(
            tasks.debug_files_stored, weak=False, dispatch_uid="leaks.symbolicate"
        )
        # Groups made by older fingerprint rules are regrouped after the migration that marks
        # them (tasks.py).
        post_migrate.connect(
            tasks.regroup_after_migrate, sender=self, weak=False, dispatch_uid="leaks.regroup"
        )
