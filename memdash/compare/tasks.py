"""Tasks of the compare domain: a build's summary, and its summaries per filter value, made ahead
of the first comparison (`services` says why), queued once its snapshot's transaction has
committed, batched: one run per burst of uploads to a build (as the build's statistics tables
and call trees are made, by `allocations.tasks.refresh_build_tables`: compare is a lens above
allocations, which cannot call it)."""

from __future__ import annotations

from django.tasks import task

from memdash.compare import writes as services
from memdash.core.models import Build
from memdash.core.writes.made_ahead import MadeAhead

BUILD_SUMMARY = MadeAhead("compare:summary")


@task()
def refresh_build_summary(build_id: int) -> str:
    """Make the build's summary over its snapshots now, unless the stored one already is, and
    the summary of each value of each of the build page's filters (`refresh_filter_summaries`)."""
    with BUILD_SUMMARY.making(build_id):
        build = Build.objects.filter(pk=build_id).first()
        if build is None:
            return "gone"
        services.build_summary(build)
        services.refresh_filter_summaries(build)
    return "ok"


def queue_build_summary(build_id: int) -> None:
    """Queue the making of the build's summary, unless one is queued and not yet started."""
    BUILD_SUMMARY.queue(refresh_build_summary, build_id)
