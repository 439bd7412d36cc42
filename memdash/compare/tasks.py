"""Tasks of the compare domain: a build's summary made ahead of the first comparison
(`services` says why), queued once its snapshot's transaction has committed."""

from __future__ import annotations

from datetime import timedelta

from django.core.cache import cache
from django.tasks import default_task_backend, task
from django.utils import timezone

from memdash.compare import writes as services
from memdash.core.models import Build

SUMMARY_DELAY = timedelta(seconds=30)


def _pending_key(build_id: int) -> str:
    return f"compare:summary-pending:{build_id}"


@task()
def refresh_build_summary(build_id: int) -> str:
    """Make the build's summary over its snapshots now, unless the stored one already is."""
    cache.delete(_pending_key(build_id))  # a snapshot stored from here on queues another
    build = Build.objects.filter(pk=build_id).first()
    if build is None:
        return "gone"
    services.build_summary(build)
    return "ok"


def queue_build_summary(build_id: int) -> None:
    """Queue the making of the build's summary, unless one is queued and not yet started."""
    if not cache.add(_pending_key(build_id), True, timeout=3600):
        return
    if default_task_backend.supports_defer:
        refresh_build_summary.using(run_after=timezone.now() + SUMMARY_DELAY).enqueue(build_id)
    else:  # the embedded default runs it at once
        refresh_build_summary.enqueue(build_id)
