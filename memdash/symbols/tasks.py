"""The task of an upload of debug files (`writes.process_debug_files`): unpacking, checking each
object and making its symcache, in a worker, never in the request that received the body. The
embedded immediate backend runs it in that request, as it runs uploads.

Exactly once, as an upload: a worker claims it (one UPDATE from `queued` to `processing` with a
lease of MEMDASH_UPLOAD_LEASE_SECONDS that only one worker wins) and writes the outcome in the
transaction that keeps its objects, only while the claim is its own. A worker killed mid-job
keeps nothing and leaves a lease that runs out; `requeue_stale` then queues the upload again: on
the next debug-file upload or worker pass (a look every few seconds in a process), on an
upload's (`ingest.tasks.requeue_stale_in_passing`), and by `manage.py requeue_uploads`.
"""

from __future__ import annotations

import logging
from datetime import datetime
from functools import partial

from django.db import transaction
from django.db.models import Q
from django.tasks import task
from django.utils import timezone

from memdash.core.logic import pacing
from memdash.symbols import writes
from memdash.symbols.models import DebugFileUpload

log = logging.getLogger(__name__)
# A pass looks for uploads of dead workers at most this often in a process (as ingest's).
REQUEUE_EVERY_SECONDS = 5.0


@task()
def process_debug_files_task(upload_id: int) -> str:
    """A worker's pass: the upload is processed if this worker wins its claim, then uploads of
    dead workers are queued again."""
    upload = DebugFileUpload.objects.select_related("app", "key").get(pk=upload_id)
    status = writes.process_debug_files(upload).status
    requeue_stale_in_passing()
    return status


def stale(now: datetime) -> Q:
    """Uploads whose worker is taken for dead: `processing` past their lease."""
    processing = Q(status=DebugFileUpload.PROCESSING)
    return processing & (Q(lease_until__lt=now) | Q(lease_until__isnull=True))


def requeue_stale(limit: int = 100) -> list[int]:
    """Queue again (and enqueue, once committed) the debug-file uploads of workers taken for
    dead, each by one UPDATE of its own (two passes at once queue it once). Their ids."""
    now = timezone.now()
    found = DebugFileUpload.objects.filter(stale(now)).order_by("pk")
    requeued = [
        pk
        for pk in list(found.values_list("pk", flat=True)[:limit])
        if DebugFileUpload.objects.filter(stale(now), pk=pk).update(
            status=DebugFileUpload.QUEUED, lease_until=None
        )
    ]
    for pk in requeued:
        log.warning("debug files upload %s: its worker's lease ran out; queued again", pk)
        transaction.on_commit(partial(process_debug_files_task.enqueue, pk))
    return requeued


def requeue_stale_in_passing() -> None:
    """`requeue_stale`, as a pass does it: unless this process looked within
    `REQUEUE_EVERY_SECONDS`."""
    if pacing.due("requeue_stale_debug_files", REQUEUE_EVERY_SECONDS):
        requeue_stale()
