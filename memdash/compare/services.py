"""Writes of the compare domain: the stored per-build summaries of build compare."""

from __future__ import annotations

import struct

from django.db import DatabaseError, transaction

from memdash.compare.models import BuildSamples
from memdash.compare.summary import BuildSummary, pack_summary
from memdash.core.models import Build


def store_build_summary(build: Build, summary: BuildSummary) -> None:
    """Keep the summary of `build` over the snapshots it was made from, replacing an older one.
    Storing is an aid, never a condition of the comparison that made the summary: two requests
    that make it at once store the same thing (the one that loses the race keeps its own), and
    a write that fails (a locked SQLite file) or a number past 64 bits leaves it to the next
    comparison to make it again."""
    try:
        data, counts = pack_summary(summary)
    except (OverflowError, struct.error):
        return
    try:
        with transaction.atomic():
            BuildSamples.objects.update_or_create(
                build=build, defaults={"data": data, "counts": counts}
            )
    except DatabaseError:
        pass
