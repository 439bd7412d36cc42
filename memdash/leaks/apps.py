from django.apps import AppConfig

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
