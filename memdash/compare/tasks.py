"""Tasks of the compare domain: a build's summary, and its summaries per filter value, made ahead
of the first comparison (`services` says why), queued once its snapshot's transaction has
committed, batched: one run per burst of uploads to a build (as the build's statistics tables
and call trees are made, by `allocations.tasks.refresh_build_tables`: compare is a lens above
allocations, which cannot call it)."""

from __future__ import annotations

from functools import partial

from django.tasks import task

from memdash.compare import writes as services
from memdash.core.models import Build
from memdash.core.writes.made_ahead import MADE_AHEAD_PRIORITY, MadeAhead

BUILD_SUMMARY = MadeAhead("compare:summary")


@task(priority=MADE_AHEAD_PRIORITY)
def refresh_build_summary(build_id: int) -> str:
    """Make the build's summary over its snapshots now, unless the stored one already is, and
    the summary of each value of each of the build page's filters (`refresh_filter_summaries`)."""
    return BUILD_SUMMARY.run(refresh_build_summary, build_id, partial(_make_summaries, build_id))


def _make_summaries(build_id: int) -> str:
    build = Build.objects.filter(pk=build_id).first()
    if build is None:
        return "gone"
    services.build_summary(build)
    services.refresh_filter_summaries(build)
    return "ok"


def queue_build_summary(build_id: int) -> None:
    """Queue the making of the build's summary, unless one is queued and not yet started."""
    BUILD_SUMMARY.queue(refresh_build_summary, build_id)
