"""Writes of the compare domain: the stored per-build summaries of build compare.

A build's summary (`models.BuildSamples`) follows from its snapshots' CategoryTotal rows, which
never change once a snapshot is stored; it is made again when the build's snapshots are no
longer the ones it was made from. It is filled lazily, here, by the first comparison that needs
it: the views (page and API) and the CI gate call `build_summaries` before reading the
comparison, which then finds it. The selectors only ever read it.

Why lazily, and not when a snapshot is stored or deleted (a signal receiver on
`allocations.Snapshot`): a summary covers all of the build's snapshots, so refreshing it on every
snapshot re-reads the totals of all the others (a build of 100 snapshots of 5,000 categories:
up to 500,000 rows read after each of its 100 uploads, each summary replaced by the next upload),
and it would have to wait for ingest's transaction to commit (the Snapshot row is saved before
its totals are written).
Made on the first comparison, it costs that one request the time of reading the build's totals
once (as a comparison without a stored summary always did), and every later comparison reads
one row per build.
"""

from __future__ import annotations

import struct

from memdash.compare import build_compare
from memdash.compare.models import BuildSamples
from memdash.compare.refs import SnapshotFilter, snapshot_ids
from memdash.compare.summary import BuildSummary, pack_summary
from memdash.core.models import Build


def store_build_summary(build: Build, summary: BuildSummary) -> None:
    """Keep the summary of `build` over the snapshots it was made from, replacing an older one,
    in one statement (an upsert on the build): two requests that make it at once both store it,
    the later one wins, and both stored the same thing. A number past 64 bits (which the stored
    form cannot hold) leaves it unstored: the next comparison makes it again."""
    try:
        data, counts = pack_summary(summary)
    except (OverflowError, struct.error):
        return
    BuildSamples.objects.bulk_create(
        [BuildSamples(build=build, data=data, counts=counts)],
        update_conflicts=True,
        unique_fields=["build"],
        update_fields=["data", "counts", "made_at"],
    )


def build_summary(build: Build) -> BuildSummary:
    """The summary of the build over all its snapshots: the stored one when it was made from
    them, else one made from their totals and stored."""
    ids = snapshot_ids(build, SnapshotFilter())
    stored = build_compare.stored_summary(build, ids)
    if stored is not None:
        return stored
    made = build_compare.made_summary(build, ids)
    store_build_summary(build, made)
    return made


def build_summaries(
    base: Build, target: Build, filters: SnapshotFilter | None = None
) -> dict[int, BuildSummary]:
    """The summaries that `build_compare.compare_builds` reads for these builds, by build id,
    made and stored first where needed; none for a comparison of some of their snapshots
    (`filters`), which is made from those snapshots' totals."""
    if filters:
        return {}
    return {build.pk: build_summary(build) for build in {base.pk: base, target.pk: target}.values()}
