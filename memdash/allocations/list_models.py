"""The Allocations List made ahead of its pages (`writes.allocation_lists`, read by
`reads.made_lists`), and an events run's allocations one by one: models of the allocations app
(imported by models.py), apart so that each module stays short. The snapshot is named by its
label, as models.py imports this module."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils import timezone

from memdash.core.models import App


def _unindexed(to: str | type[models.Model]) -> Any:  # the table's key starts with it
    return models.ForeignKey(to, models.DO_NOTHING, db_constraint=False, db_index=False,
                             related_name="+")  # fmt: skip


class ListEntry(models.Model):
    """A snapshot's Allocations List made ahead (`writes.allocation_lists`): each row's live
    and freed part (an events run's: each block), its place in every order (`by_<sort>`)."""

    pk = models.CompositePrimaryKey("app", "snapshot", "row_id", "live")
    app, snapshot = _unindexed(App), _unindexed("allocations.Snapshot")
    row_id, live = models.BigIntegerField(), models.SmallIntegerField()  # the row's id; 1: live
    n, size = models.BigIntegerField(), models.BigIntegerField()
    category_id, stack_id = models.BigIntegerField(), models.BigIntegerField(null=True)
    thread, generation = models.IntegerField(), models.IntegerField()  # -1: none, as NULL sorts
    caller_frame_id = models.BigIntegerField(null=True)  # the responsible caller's frame
    address = models.BigIntegerField(null=True)  # a block's (signed 64-bit), its times in ms
    made_ms, freed_ms = models.FloatField(null=True), models.FloatField(null=True)
    by_size, by_count, by_category, by_caller, by_library, by_generation = (
        models.IntegerField() for _ in range(6))  # fmt: skip
    by_thread, by_live, by_address, by_time, by_snapshot = (  # by_snapshot: by the key
        models.IntegerField() for _ in range(5))  # fmt: skip

    class Meta:
        db_table = "allocations_listentry"


class AllocationBlock(models.Model):
    """An events run's allocation (`analysis.Block`; freed_ms null: live), or a heaptrack run's
    (`columns.BlockColumns`: no address, heaptrack's file has none), listed one by one."""

    # No index of its own on the app (every read and delete names the snapshot: its index
    # below): a heaptrack run's millions of blocks cost their upload a third less without it.
    app = _unindexed(App)
    snapshot = _unindexed("allocations.Snapshot")
    address, size = models.BigIntegerField(null=True), models.BigIntegerField()
    made_ms, freed_ms = models.FloatField(), models.FloatField(null=True)
    category_id, stack_id = models.BigIntegerField(), models.BigIntegerField(null=True)
    thread, generation = models.IntegerField(null=True), models.IntegerField(null=True)

    class Meta:
        db_table = "allocations_block"
        indexes = [models.Index(fields=["snapshot", "made_ms"], name="block_snap_time")]


class ListOrderChunk(models.Model):
    """CHUNK entries of an order from place chunk × CHUNK: rows' ids (>i8), lives (>i2)."""

    CHUNK = 1024
    pk = models.CompositePrimaryKey("app", "snapshot", "sort", "chunk")
    app, snapshot = _unindexed(App), _unindexed("allocations.Snapshot")
    sort, chunk = models.CharField(max_length=12), models.IntegerField()
    rows, lives = models.BinaryField(), models.BinaryField()

    class Meta:
        db_table = "allocations_listorderchunk"


class AllocationListOrder(models.Model):
    """A snapshot's list was made, from its frames as named at `symbols_version`."""

    snapshot = models.OneToOneField("allocations.Snapshot", models.CASCADE, primary_key=True,
                                    db_constraint=False, related_name="list_order")  # fmt: skip
    app = models.ForeignKey(App, on_delete=models.CASCADE, db_constraint=False, related_name="+")
    symbols_version, entries = models.IntegerField(), models.BigIntegerField(default=0)
    seconds = models.FloatField(default=0)  # how long making it took
    made_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "allocations_listorder"
