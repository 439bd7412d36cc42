"""Writes of the compare domain: the stored per-build summaries of build compare.

A build's summary (`models.BuildSamples`) follows from its snapshots' CategoryTotal rows, which
never change once a snapshot is stored; it is made again when the build's snapshots are no
longer the ones it was made from. The views (page and API) and the CI gate call
`build_summaries` before reading a comparison, which makes any summary that is missing or out
of date; the selectors only ever read it.

So that the first comparison reads it too, instead of making it in its request (about half a
second a build of 100 snapshots of 5,000 categories), a stored snapshot also queues
`tasks.refresh_build_summary` for its build once its transaction has committed, 30 s later
where the task backend can defer, or longer once the last making was costly
(`core.writes.made_ahead`): a burst of uploads to one build then makes its summary once (one is
queued while another waits), not after each upload, which would re-read the totals of all the
build's other snapshots each time.
"""

from __future__ import annotations

import struct

import numpy as np
from django.utils import timezone

from memdash.allocations.logic.build_views import filter_keys
from memdash.allocations.models import Snapshot
from memdash.allocations.reads.calltree.made import chosen_key
from memdash.compare.logic.summary import BuildSummary, SummaryMaker, pack_summary
from memdash.compare.models import BuildFilterSamples, BuildSamples
from memdash.compare.reads import builds as build_compare
from memdash.compare.reads.filter_summaries import filter_samples, stored_filter_summary
from memdash.compare.reads.refs import SnapshotFilter, snapshot_ids
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
    made and stored first where needed; for a comparison of some of their snapshots
    (`filters`), those made ahead for one filter's value from the snapshots it keeps now (the
    others are made from those snapshots' totals)."""
    if filters:
        found = {}
        for build in {base.pk: base, target.pk: target}.values():
            stored = stored_filter_summary(build, filters, snapshot_ids(build, filters))
            if stored is not None:
                found[build.pk] = stored
        return found
    return {build.pk: build_summary(build) for build in {base.pk: base, target.pk: target}.values()}


def refresh_filter_summaries(build: Build) -> int:
    """Make and store the summary of each value of each of the build page's filters (one pass
    over the build's totals: each category given to the summary of every value whose snapshots
    have it), replacing the stored ones, and drop those of values no snapshot has any longer;
    the number stored. Each names the snapshots it was made from (read before their totals)."""
    listed = list(
        Snapshot.objects.filter(app_id=build.app_id, build=build)
        .order_by("pk")
        .values_list("pk", "trigger", "device_model", "os")
    )
    ids = [row[0] for row in listed]
    keys = {k: v for k, v in filter_keys([row[1:] for row in listed]).items() if k[0]}
    kept = {key: np.zeros(len(ids), dtype=bool) for key in keys}
    for key, chosen in keys.items():
        kept[key][chosen] = True
    makers = {key: SummaryMaker([ids[i] for i in chosen]) for key, chosen in keys.items()}
    for name, at, counts, sizes in filter_samples(build, ids):
        for key, maker in makers.items():
            picked = kept[key][at]
            if picked.any():
                maker.add(name, np.sort(counts[picked]).tolist(),
                          np.sort(sizes[picked]).tolist())  # fmt: skip
    made_at = timezone.now()
    rows = []
    for (name, value), maker in makers.items():
        try:
            data, counts_part = pack_summary(maker.finish())
        except (OverflowError, struct.error):
            continue  # a number past 64 bits: made from the totals when compared
        rows.append(
            BuildFilterSamples(
                app_id=build.app_id, build=build, chosen=chosen_key(name, value), filter=name,
                value=value, data=data, counts=counts_part, made_at=made_at,
            )
        )  # fmt: skip
    BuildFilterSamples.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["app", "build", "chosen"],
        update_fields=["filter", "value", "data", "counts", "made_at"],
    )
    gone = BuildFilterSamples.objects.filter(app_id=build.app_id, build=build, made_at__lt=made_at)
    if gone.exists():
        gone.delete()
    return len(rows)
