"""Background work of leaks: renaming stored stacks after debug files arrive.

`memdash.symbols` sends `debug_files_stored` once an upload of debug files is committed; the
receiver (connected in apps.py) queues `rename_leak_frames`, which names the frames of the
app's leak records in those modules and regroups the leaks (memdash.leaks.symbol_services).
"""

from __future__ import annotations

import logging
from typing import Any

from django.tasks import task

from memdash.core.models import App
from memdash.leaks.symbol_services import rename_leaks
from memdash.symbols.models import SymbolicationJob

log = logging.getLogger(__name__)


@task()
def rename_leak_frames(app_id: int, debug_ids: list[str]) -> int:
    """Answers how many records' stacks were renamed."""
    app = App.objects.get(pk=app_id)
    result = rename_leaks(app, debug_ids)
    if result.records:
        log.info(
            "leaks of %s renamed: %d records, %d moved, %d groups re-keyed, %d merged",
            app.bundle_id, result.records, result.moved, result.groups_rekeyed,
            result.groups_merged,
        )  # fmt: skip
    return result.records


def debug_files_stored(sender: type, app: App, job: SymbolicationJob, **kwargs: Any) -> None:
    """The receiver of `memdash.symbols.signals.debug_files_stored`."""
    rename_leak_frames.enqueue(app.pk, list(job.debug_ids))
