"""Background work of allocations: naming stored frames after debug files arrive.

`memdash.symbols` sends `debug_files_stored` once an upload of debug files is committed; the
receiver (connected in apps.py) queues `symbolicate_stored_frames`, which runs the job over every
snapshot with unnamed frames in those images, and over the app's snapshots stored under an older
frame identity or recording rule (keyed again: `manage.py resymbolicate` runs the same job for
every app).
The embedded default runs it right away, in the process that stored the files; a real queue
hands it to a worker.

`refresh_build_tables` makes a build's statistics tables ahead (`writes.build_views`) and a large
build's call trees with their flame graphs and Top Functions (`writes.build_trees`), queued
once a snapshot of the build is stored (`queue_build_tables`), batched.

`make_allocation_list_task` makes a snapshot's Allocations List ahead (`writes.allocation_lists`),
queued once the snapshot is stored and after its frames are renamed (`queue_allocation_list`).

`build_call_tree_job` builds a call tree too large to build in a request (`calltree_jobs`) into
the cache, writing its progress as it goes (and makes its flame graph or Top Functions when the
job names one: `reads.calltree.products`); `read_or_queue` is how a view reads trees that may
be such: it queues those past the request's budget and raises TreeComputing until they are built.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.tasks import default_task_backend, task

from memdash.allocations.logic.calltree.products import TreeProduct
from memdash.allocations.models import AllocationBlock, AllocationListOrder, Snapshot
from memdash.allocations.reads.calltree.jobs import (
    DONE,
    FAILED,
    QUEUED,
    RUNNING,
    InlineBudget,
    TreeComputing,
    TreeDeferred,
    TreeJob,
    TreeState,
    claim,
    forget,
    overall,
    read_state,
    write_state,
)
from memdash.allocations.reads.calltree.products import build_product, snapshot_product
from memdash.allocations.reads.calltree.query import CallTreeQuery
from memdash.allocations.reads.calltree.trees import (
    TreeUnavailable,
    build_call_tree_for,
    forget_recent,
    snapshot_call_tree,
)
from memdash.allocations.writes.allocation_lists import make_allocation_list
from memdash.allocations.writes.build_trees import refresh_build_trees
from memdash.allocations.writes.build_views import refresh_build_views
from memdash.allocations.writes.resymbolicate import (
    image_ids_of,
    resymbolicate_snapshot,
    snapshots_to_key,
    snapshots_to_name,
)
from memdash.core.models import App, Build
from memdash.core.writes import follow_ups
from memdash.core.writes.made_ahead import MADE_AHEAD_PRIORITY, MadeAhead
from memdash.symbols import reads as symbols
from memdash.symbols import writes as symbol_services
from memdash.symbols.models import SymbolicationJob

log = logging.getLogger(__name__)
TREE_PRIORITY = 10  # before uploads and symbolication: someone is waiting for the tree


def run_job(job: SymbolicationJob) -> SymbolicationJob:
    """Name the frames of every snapshot the job's debug files cover, and key again those of
    an older frame identity rule, one snapshot at a time."""
    if not job.start():
        return job
    try:
        snapshot_ids = sorted(
            set(snapshots_to_name(job.app_id, job.debug_ids)) | set(snapshots_to_key(job.app_id))
        )
        resolve = symbols.symbolicator(job.app, image_ids_of(snapshot_ids))
        named = 0
        job.progress(0, len(snapshot_ids), 0)
        for done, snapshot in enumerate(
            Snapshot.objects.filter(pk__in=snapshot_ids).order_by("pk").iterator(), start=1
        ):
            named += resymbolicate_snapshot(snapshot, resolve)
            queue_allocation_list(snapshot.pk, snapshot.row_count)  # again if its frames changed
            job.progress(done, len(snapshot_ids), named)
    except Exception as exc:  # recorded on the job, shown on the pages, and logged
        log.exception("symbolication job %s failed", job.pk)
        job.finish(f"{type(exc).__name__}: {exc}")
    else:
        job.finish()
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


# --- call trees too large to build in a request --------------------------------------------------


def build_tree(job: TreeJob) -> TreeState:
    """Build the job's tree into the cache (under the key the request looked for, as long as the
    snapshots did not change since), its progress in the job's state; the state at the end."""
    if cache.has_key(job.key):  # built meanwhile: by another task, or a request within budget
        write_state(job.key, DONE, 1.0)
        return TreeState(DONE, 1.0)
    write_state(job.key, RUNNING, 0.0)
    query = CallTreeQuery.from_json(job.query)

    def progress(done: float) -> None:
        write_state(job.key, RUNNING, done)

    try:
        _build(job, query, progress)
    except (Snapshot.DoesNotExist, Build.DoesNotExist):
        write_state(job.key, FAILED, error=f"the {job.kind} was deleted")
        return TreeState(FAILED, error=f"the {job.kind} was deleted")
    except TreeUnavailable as exc:
        write_state(job.key, FAILED, error=str(exc))
        return TreeState(FAILED, error=str(exc))
    except Exception as exc:  # logged; the page says what kind of failure, not its details
        log.exception("building call tree %s failed", job.key)
        write_state(job.key, FAILED, error=type(exc).__name__)
        return TreeState(FAILED, error=type(exc).__name__)
    finally:
        forget_recent()  # a worker builds trees for others: it does not keep them
    write_state(job.key, DONE, 1.0)
    return TreeState(DONE, 1.0)


def _build(job: TreeJob, query: CallTreeQuery, progress: Callable[[float], None]) -> None:
    """Build the job's tree into the cache, and with a product, make that of it too."""
    product = TreeProduct.from_json(job.product) if job.product else None
    if job.kind == "snapshot":
        snapshot = Snapshot.objects.get(pk=job.object_id)
        if product is None:
            snapshot_call_tree(snapshot, query, job.whole, progress=progress)
        else:
            snapshot_product(snapshot, query, product, progress=progress)
        return
    build = Build.objects.get(pk=job.object_id)
    filters = (job.filters.get("trigger", ""), job.filters.get("model", ""),
               job.filters.get("os", ""))  # fmt: skip
    if product is None:
        build_call_tree_for(build, query, *filters, progress=progress)
    else:
        build_product(build, query, product, *filters, progress=progress)


@task(priority=TREE_PRIORITY)
def build_call_tree_job(job: dict[str, Any]) -> str:
    return build_tree(TreeJob.from_json(job)).state


def queue_trees(jobs: list[TreeJob]) -> TreeState:
    """Queue a task for each tree not queued yet (one per tree, however many requests ask), and
    the trees' state together. The embedded default builds them right here."""
    states = []
    for job in jobs:
        state = read_state(job.key)
        if state is not None and state.state == DONE and not cache.has_key(job.key):
            forget(job)  # built, then dropped by the cache: build it again
            state = None
        if state is None:
            if claim(job):
                try:
                    build_call_tree_job.enqueue(job.as_json())
                except Exception:
                    forget(job)  # not queued: the next request tries again
                    raise
            state = read_state(job.key)
        states.append(state or TreeState(QUEUED))
    return overall(states)


def read_or_queue[T](read: Callable[[InlineBudget | None], T]) -> T:
    """What `read` returns given the request's budget of rows to build trees with; the trees past
    it are queued, and TreeComputing raised until they are all built (then read again)."""
    try:
        return read(InlineBudget())
    except TreeDeferred as deferred:
        state = queue_trees(deferred.jobs)
    if state.state != DONE:
        raise TreeComputing(state)
    return read(None)


# --- a build's statistics tables, made ahead -----------------------------------------------------

BUILD_TABLES = MadeAhead("allocations:build-tables")


@task(priority=MADE_AHEAD_PRIORITY)
def refresh_build_tables(build_id: int) -> str:
    """Make the build's statistics tables over its snapshots now (`writes.build_views`), and
    its call trees, flame graphs and Top Functions (`writes.build_trees`: a large build's)."""
    return BUILD_TABLES.run(refresh_build_tables, build_id, partial(_make_build_tables, build_id))


def _make_build_tables(build_id: int) -> str:
    build = Build.objects.filter(pk=build_id).first()
    if build is None:
        return "gone"
    refresh_build_views(build)
    refresh_build_trees(build)
    return "ok"


def queue_build_tables(build_id: int) -> None:
    """Queue the making of the build's tables, unless one is queued and not yet started."""
    BUILD_TABLES.queue(refresh_build_tables, build_id)


# --- a snapshot's Allocations List, made ahead ---------------------------------------------------


def _list_pending_key(snapshot_id: int) -> str:
    return f"allocations:list-pending:{snapshot_id}"


@task()
def make_allocation_list_task(snapshot_id: int) -> str:
    """Make the snapshot's Allocations List (`writes.allocation_lists`) unless it is current."""
    cache.delete(_list_pending_key(snapshot_id))
    snapshot = Snapshot.objects.filter(pk=snapshot_id).first()
    if snapshot is None:
        return "gone"
    current = AllocationListOrder.objects.filter(
        snapshot_id=snapshot.pk, app_id=snapshot.app_id, symbols_version=snapshot.symbols_version
    )
    if current.exists():
        return "current"
    make_allocation_list(snapshot)
    return "ok"


def queue_allocation_list(snapshot_id: int, rows: int = 0) -> None:
    """Queue the making of the snapshot's list (of `rows` rows), unless one is queued and not
    yet started. Under the embedded default (tasks run at once, in the upload's process) a list
    of more than `MEMDASH_LIST_INLINE_ROWS` rows would cost the upload several times its own
    time (a million rows: 20 s on PostgreSQL, docs/performance.md): it is made once the web
    process has answered the upload (`follow_ups.after_the_answer`), its pages reading the
    rows meanwhile; after the import command, by `manage.py make_allocation_lists`. A task
    queue makes every list, after the upload."""
    if not default_task_backend.supports_defer and rows > settings.MEMDASH_LIST_INLINE_ROWS:
        follow_ups.after_the_answer(partial(_enqueue_list, snapshot_id))
        return
    _enqueue_list(snapshot_id)


def list_entries(snapshot: Snapshot) -> int:
    """How large the snapshot's list is, as the inline limit counts it: its rows, or, when its
    allocations are listed one by one, their number (a heaptrack run's: millions)."""
    blocks = AllocationBlock.objects.filter(app_id=snapshot.app_id, snapshot_id=snapshot.pk)
    if blocks.exists():
        return snapshot.persistent + snapshot.transient
    return snapshot.row_count


def list_left_to_command(snapshot_id: int | None) -> bool:
    """Whether the snapshot's list was neither made nor queued when it was stored: too many
    rows for tasks that run at once, and no web answer for it to follow."""
    if default_task_backend.supports_defer or snapshot_id is None:
        return False
    snapshot = Snapshot.objects.filter(pk=snapshot_id).first()
    return (
        snapshot is not None
        and list_entries(snapshot) > settings.MEMDASH_LIST_INLINE_ROWS
        and not AllocationListOrder.objects.filter(
            snapshot_id=snapshot.pk, app_id=snapshot.app_id
        ).exists()
    )


def _enqueue_list(snapshot_id: int) -> None:
    if cache.add(_list_pending_key(snapshot_id), True, timeout=3600):
        make_allocation_list_task.enqueue(snapshot_id)
