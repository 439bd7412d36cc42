"""Tasks of the compare domain: a build's summary made ahead of the first comparison
(`services` says why), queued once its snapshot's transaction has committed."""

from __future__ import annotations

from django.tasks import task

from memdash.compare import writes as services
from memdash.core.models import Build
from memdash.core.writes.made_ahead import MadeAhead

BUILD_SUMMARY = MadeAhead("compare:summary")


@task()
def refresh_build_summary(build_id: int) -> str:
    """Make the build's summary over its snapshots now, unless the stored one already is."""
    with BUILD_SUMMARY.making(build_id):
        build = Build.objects.filter(pk=build_id).first()
        if build is None:
            return "gone"
        services.build_summary(build)
    return "ok"


def queue_build_summary(build_id: int) -> None:
    """Queue the making of the build's summary, unless one is queued and not yet started."""
    BUILD_SUMMARY.queue(refresh_build_summary, build_id)
