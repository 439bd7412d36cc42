"""Background work of allocations: naming stored frames after debug files arrive.

`memdash.symbols` sends `debug_files_stored` once an upload of debug files is committed; the
receiver (connected in apps.py) queues `symbolicate_stored_frames`, which runs the job over every
snapshot with unnamed frames in those images, and over the app's snapshots stored under an older
frame identity rule (keyed again: `manage.py resymbolicate` runs the same job for every app).
The embedded default runs it right away, in the process that stored the files; a real queue
hands it to a worker.
"""

from __future__ import annotations

import logging
from typing import Any

from django.tasks import task

from memdash.allocations.models import Snapshot
from memdash.allocations.resymbolicate import (
    image_ids_of,
    resymbolicate_snapshot,
    snapshots_to_key,
    snapshots_to_name,
)
from memdash.core.models import App
from memdash.symbols import selectors as symbols
from memdash.symbols import services as symbol_services
from memdash.symbols.models import SymbolicationJob

log = logging.getLogger(__name__)


def run_job(job: SymbolicationJob) -> SymbolicationJob:
    """Name the frames of every snapshot the job's debug files cover, and key again those of
    an older frame identity rule, one snapshot at a time."""
    if not symbol_services.start_job(job):
        return job
    try:
        snapshot_ids = sorted(
            set(snapshots_to_name(job.app_id, job.debug_ids)) | set(snapshots_to_key(job.app_id))
        )
        resolve = symbols.symbolicator(job.app, image_ids_of(snapshot_ids))
        named = 0
        symbol_services.job_progress(job, 0, len(snapshot_ids), 0)
        for done, snapshot in enumerate(
            Snapshot.objects.filter(pk__in=snapshot_ids).order_by("pk").iterator(), start=1
        ):
            named += resymbolicate_snapshot(snapshot, resolve)
            symbol_services.job_progress(job, done, len(snapshot_ids), named)
    except Exception as exc:  # recorded on the job, shown on the pages, and logged
        log.exception("symbolication job %s failed", job.pk)
        symbol_services.finish_job(job, f"{type(exc).__name__}: {exc}")
    else:
        symbol_services.finish_job(job)
    job.refresh_from_db()
    return job


def resymbolicate_app(app: App) -> SymbolicationJob | None:
    """Name what the app's debug files name in its stored snapshots and key its older snapshots
    again, now, as a job (shown on the pages while it runs); None when there is nothing to do."""
    debug_ids = sorted(set(symbols.debug_files(app).values_list("debug_id", flat=True)))
    if not (snapshots_to_key(app.pk) or snapshots_to_name(app.pk, debug_ids)):
        return None
    return run_job(symbol_services.new_job(app, debug_ids))


@task()
def symbolicate_stored_frames(job_id: int) -> str:
    job = SymbolicationJob.objects.select_related("app").get(pk=job_id)
    return run_job(job).state


def debug_files_stored(sender: type, app: Any, job: SymbolicationJob, **kwargs: Any) -> None:
    """The receiver of `memdash.symbols.signals.debug_files_stored`."""
    symbolicate_stored_frames.enqueue(job.pk)
