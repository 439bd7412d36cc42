"""A build's call trees made ahead (`writes.build_trees`, read by `reads.calltree.made`): a model
of the allocations app (imported by models.py), apart so that each module stays short."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from memdash.core.models import App, Build


class BuildTree(models.Model):
    """A build's default call tree (median per snapshot), its flame graph or its Top Functions,
    made ahead for the whole build (`filter` "") or for the snapshots of one value of one of the
    build page's filters (trigger, model, os), under one lifespan filter, so that the build's
    call tree pages read one row instead of the rows of every snapshot. `kind` says which
    (`reads.calltree.made`); `data` is the pickled object, zlib-compressed, as the shared cache
    keeps trees. `signature` names the snapshots it was made from (`reads.calltree.made`): one
    made from others is out of date; `snapshots` is their number, `kept` those whose allocation
    rows were there to make it from (retention prunes the others'), `rows` their rows."""

    # The app first in its key, as in every table that grows with uploads (Citus distributes
    # by it, `site.writes.citus.DISTRIBUTED`); the build's rows are found through that key.
    app = models.ForeignKey(
        App, on_delete=models.CASCADE, db_constraint=False, db_index=False, related_name="+"
    )
    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="+", db_index=False)
    # the (filter, value) hashed: the value is user text of any length (`made.chosen_key`)
    chosen = models.CharField(max_length=40)
    filter = models.CharField(max_length=8, blank=True, default="")
    value = models.TextField(blank=True, default="")
    lifespan = models.CharField(max_length=12)
    kind = models.CharField(max_length=24)
    snapshots = models.IntegerField(default=0)
    kept = models.IntegerField(default=0)
    rows = models.BigIntegerField(default=0)
    signature = models.CharField(max_length=120)
    data = models.BinaryField()
    made_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "allocations_buildtree"
        constraints = [
            models.UniqueConstraint(
                fields=["app", "build", "chosen", "lifespan", "kind"], name="buildtree_identity"
            )
        ]
