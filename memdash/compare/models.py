"""What build compare stores: each build's per-category samples, summarized once.

Comparing two builds ranks every category's persistent bytes over the snapshots of both. Read
from the per-snapshot totals, that is one value per snapshot and category (100 snapshots of
5,000 categories: half a million rows a build) to group, sort and summarize on every request.
What depends on one build alone (`summary.BuildSummary`: spreads and runs of its samples) is
worked out once and kept here; a comparison then reads one row per build and does only what
depends on both builds (the deltas and the rank test).
"""

from __future__ import annotations

from django.db import models


class BuildSamples(models.Model):
    """The summary of one build's categories over all of its snapshots (`summary.pack_summary`:
    the snapshot ids it was made from, the records and runs of bytes in `data`; the runs of
    counts, read only for a rank test on counts, in `counts`). Derived from CategoryTotal,
    which does not change once a snapshot is stored; made by the first comparison that needs
    it and made again when the build's snapshots are no longer the ones it was made from (a
    snapshot stored or deleted since)."""

    build = models.OneToOneField(
        "core.Build", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    data = models.BinaryField()
    counts = models.BinaryField()
    made_at = models.DateTimeField(auto_now=True)


class BuildFilterSamples(models.Model):
    """The summary of one build's categories over the snapshots of one value of one of the
    build page's filters (trigger, device model, OS), as `BuildSamples` is of all of them: made
    ahead by the task that makes the build's summary (`writes.refresh_filter_summaries`), so
    that a comparison under one filter reads one row per build instead of the totals of every
    snapshot the filter keeps. The summary names the snapshots it was made from: one made from
    others than the filter keeps now is not read (the comparison is made from the totals)."""

    # The app first in its key, as in every table that grows with uploads (Citus distributes
    # by it, `site.writes.citus.DISTRIBUTED`).
    app = models.ForeignKey(
        "core.App", on_delete=models.CASCADE, db_constraint=False, db_index=False, related_name="+"
    )
    build = models.ForeignKey(
        "core.Build", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    chosen = models.CharField(max_length=40)  # the (filter, value) hashed: user text
    filter = models.CharField(max_length=8)
    value = models.TextField()
    data = models.BinaryField()
    counts = models.BinaryField()
    made_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["app", "build", "chosen"], name="buildfiltersamples_identity"
            )
        ]
