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
