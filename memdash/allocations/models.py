"""Allocation snapshots, stored so that a page never scans raw rows.

Frames and call-stack nodes are stored once per app: their primary keys are 64-bit hashes of what
identifies them (the frame's symbol/image/offset; the node's parent and frame), so ingest needs no
lookup to find an existing node and a stack seen on ten thousand devices is one row.

The tables keep the names they had when these models lived in the `snapshots` app
(`db_table`): moving them here changed no table (migration 0001 is state only).

The large tables (allocation rows, call-tree totals) carry no foreign-key constraints: they are
bulk-loaded inside the same transaction as their snapshot and deleted with it, its build or its
app by the pre_delete receivers of apps.py (`services.delete_*_data`, one statement a table),
never through the ORM's cascade.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import get_args

from django.db import models
from django.utils import timezone

from memdash.allocations.list_models import AllocationBlock as AllocationBlock
from memdash.allocations.list_models import AllocationListOrder as AllocationListOrder
from memdash.allocations.list_models import ListEntry as ListEntry
from memdash.allocations.list_models import ListOrderChunk as ListOrderChunk
from memdash.allocations.logic.analysis import frame_label
from memdash.allocations.logic.document.contract import Trigger
from memdash.allocations.tree_models import BuildTree as BuildTree
from memdash.core.links import page_url
from memdash.core.logic.numbers import hash64
from memdash.core.models import App, Build, Device

HEAP, VM = "heap", "vm"
TRIGGERS = list(get_args(Trigger))  # the snapshot format's (logic.document.contract)


def category_hash(name: str) -> int:
    """What a category is found by: its name may be of any length, and a btree over the raw
    text fails past PostgreSQL's index row limit (~2,700 bytes)."""
    return hash64("category", name)


class CategoryQuerySet(models.QuerySet["Category"]):
    def named(self, names: Iterable[str]) -> CategoryQuerySet:
        """The categories with these names, found through the index on their hashes."""
        wanted = list(names)
        return self.filter(name_hash__in=[category_hash(n) for n in wanted], name__in=wanted)


class Category(models.Model):
    objects = CategoryQuerySet.as_manager()
    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="categories")
    name = models.TextField()
    name_hash = models.BigIntegerField()  # category_hash(name)
    kind = models.CharField(max_length=8, choices=[(HEAP, "heap"), (VM, "anonymous VM")])

    class Meta:
        db_table = "snapshots_category"
        constraints = [
            models.UniqueConstraint(fields=["app", "name_hash"], name="category_identity_hash")
        ]

    def __str__(self) -> str:
        return self.name


class Frame(models.Model):
    id = models.BigIntegerField(primary_key=True)  # hash64(app, symbol, image, offset)
    app = models.ForeignKey(App, on_delete=models.CASCADE, db_constraint=False, related_name="+")
    symbol = models.TextField(blank=True, default="")
    image = models.TextField(blank=True, default="")
    offset = models.BigIntegerField(null=True)  # offset in the image (address - load address)
    address = models.BigIntegerField(null=True)  # absolute, kept only when no image is known
    file = models.TextField(blank=True, default="")
    line = models.IntegerField(null=True)
    is_system = models.BooleanField(default=False)
    # A call inlined into its caller, named from a debug file
    # (memdash.allocations.logic.symbolicate).
    inlined = models.BooleanField(default=False)

    @property
    def label(self) -> str:
        return frame_label(self.symbol, self.image, self.offset, self.address)

    class Meta:
        db_table = "snapshots_frame"
        # On PostgreSQL this is the primary key (migration 0016): the app's id in it, as Citus
        # wants of a table distributed by app; the id first, so a lookup by id uses it.
        constraints = [models.UniqueConstraint(fields=["id", "app"], name="frame_identity")]


class StackNode(models.Model):
    id = models.BigIntegerField(primary_key=True)  # hash64(app, parent id, frame id)
    app = models.ForeignKey(App, on_delete=models.CASCADE, db_constraint=False, related_name="+")
    parent_id = models.BigIntegerField(null=True)
    frame_id = models.BigIntegerField()
    depth = models.IntegerField()

    class Meta:
        db_table = "snapshots_stacknode"
        # The primary key on PostgreSQL, as the frames' (migration 0016).
        constraints = [models.UniqueConstraint(fields=["id", "app"], name="stacknode_identity")]


class Snapshot(models.Model):
    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="snapshots")
    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="snapshots")
    device = models.ForeignKey(
        Device, on_delete=models.SET_NULL, null=True, blank=True, related_name="snapshots"
    )
    upload_id = models.BigIntegerField(null=True, blank=True)  # ingest's Upload: one snapshot each
    source_format = models.CharField(max_length=40, default="memdash.snapshot")
    session_id = models.CharField(max_length=200, blank=True, default="", db_index=True)
    captured_at = models.DateTimeField()
    trigger = models.CharField(max_length=20, default="manual")
    device_model = models.CharField(max_length=128, blank=True, default="")
    os = models.CharField(max_length=128, blank=True, default="")
    threads = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Totals of the whole snapshot (both kinds), so lists and trends read one row per snapshot.
    persistent = models.BigIntegerField(default=0)
    persistent_bytes = models.BigIntegerField(default=0)
    transient = models.BigIntegerField(default=0)
    transient_bytes = models.BigIntegerField(default=0)
    row_count = models.IntegerField(default=0)
    category_count = models.IntegerField(default=0)
    stack_node_count = models.IntegerField(default=0)
    event_count = models.IntegerField(default=0)
    unmatched_frees = models.IntegerField(default=0)
    replaced_live_blocks = models.IntegerField(default=0)
    # The statistics table's summary rows and row count under each lifespan filter
    # (analysis.table_summary), stored at ingest; empty for snapshots stored before it was.
    table_summary = models.JSONField(default=dict, blank=True)
    rows_pruned_at = models.DateTimeField(null=True, blank=True)
    # Bytes of the allocations with a frame that has no name on their stack (so the page can say
    # the snapshot is mostly unsymbolicated), and how many times debug files renamed its frames
    # after it was stored (part of the keys of the trees cached from its rows).
    unsymbolicated_bytes = models.BigIntegerField(default=0)
    symbols_version = models.IntegerField(default=0)
    # The frame identity rule its frames and stack nodes are keyed by (symbolicate.FRAME_IDENTITY
    # when stored or keyed again; 0: stored before named frames were keyed by function).
    frame_identity = models.IntegerField(default=0)
    # The rule that dropped its format's recording frames (a monitor's allocation hook) from its
    # stacks (recording.RECORDING_RULE when stored or keyed again; 0: stored before any was).
    recording_rule = models.IntegerField(default=0)
    # What the producing tool itself reported about the run beyond the rows (heaptrack's peak
    # heap, massif's peak snapshot, …): label -> {"value": number, "unit": "bytes"|"count"}.
    tool_figures = models.JSONField(default=dict, blank=True)

    class Meta:
        db_table = "snapshots_snapshot"
        indexes = [models.Index(fields=["build", "captured_at"], name="snapshot_build_time")]
        # An upload makes at most one snapshot, whoever processes it and however often.
        constraints = [
            models.UniqueConstraint(fields=["upload_id", "app"], name="snapshot_one_per_upload")
        ]
        ordering = ["-captured_at", "-id"]

    def __str__(self) -> str:
        return f"Snapshot {self.pk}"

    def get_absolute_url(self) -> str:
        return page_url("snapshot", self.pk)


class Generation(models.Model):
    snapshot = models.ForeignKey(Snapshot, on_delete=models.CASCADE, related_name="generations")
    # The app's id: the distribution column on Citus (migration 0016), so a snapshot's rows
    # sit on the worker of its app; no index or constraint of its own (every read names the
    # snapshot).
    app = models.ForeignKey(
        App, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    index = models.IntegerField()
    name = models.CharField(max_length=255, blank=True, default="")
    at_ms = models.BigIntegerField()
    growth_bytes = models.BigIntegerField(default=0)  # persistent bytes created in it
    persistent = models.BigIntegerField(default=0)

    class Meta:
        db_table = "snapshots_generation"
        constraints = [
            models.UniqueConstraint(fields=["snapshot", "index", "app"], name="generation_identity")
        ]
        # By the snapshot's id, not the snapshot (its own order, captured time: a join to the
        # snapshots by id, which Citus answers only by repartitioning, seconds a query).
        ordering = ["snapshot_id", "index"]


class Counts(models.Model):
    """The four Instruments counters; Total = persistent + transient is derived."""

    persistent = models.BigIntegerField(default=0)
    persistent_bytes = models.BigIntegerField(default=0)
    transient = models.BigIntegerField(default=0)
    transient_bytes = models.BigIntegerField(default=0)

    class Meta:
        abstract = True


# A b-tree on SQLite; on PostgreSQL a BRIN, and the id is given by the writer (migration 0010).
ALLOCATION_ROW_INDEX = "allocrow_snap_cat"


class AllocationRow(Counts):
    """Allocations aggregated by (snapshot, category, stack, thread, generation)."""

    snapshot = models.ForeignKey(  # indexed by the composite index below, which starts with it
        Snapshot, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    # The app's id: the distribution column on Citus (migration 0016), so a snapshot's rows
    # sit on the worker of its app; no index or constraint of its own (every read names the
    # snapshot).
    app = models.ForeignKey(
        App, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    category_id = models.BigIntegerField()
    stack_id = models.BigIntegerField(null=True)
    thread = models.IntegerField(null=True)
    generation = models.IntegerField(null=True)  # null: created before the first mark

    class Meta:
        db_table = "snapshots_allocationrow"
        indexes = [models.Index(fields=["snapshot", "category_id"], name=ALLOCATION_ROW_INDEX)]


class CategoryTotal(Counts):
    """Per snapshot and category: what the statistics table shows, pre-aggregated at ingest."""

    snapshot = models.ForeignKey(  # indexed by the composite index below, which starts with it
        Snapshot, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    # The app's id: the distribution column on Citus (migration 0016), so a snapshot's rows
    # sit on the worker of its app; no index or constraint of its own (every read names the
    # snapshot).
    app = models.ForeignKey(
        App, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    # Not indexed alone: every read names the snapshot first (the composite index below), and an
    # index by category takes each upload's rows at scattered places across every snapshot's,
    # nearly half the database's work of storing a small snapshot's totals (issue 19).
    category = models.ForeignKey(
        Category, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False,
        related_name="+",
    )  # fmt: skip
    # The responsible caller (Matrix): the innermost app frame of the category's heaviest stack,
    # stored as the label the table shows, so the statistics table is read from this one table.
    responsible_caller = models.TextField(blank=True, default="")
    # The frame it is (its file, line, inlined for the API; null: stored before it was kept),
    # joined by the statistics table's one query (no constraint: frames are bulk-loaded).
    responsible_frame = models.ForeignKey(
        Frame, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, null=True,
        blank=True, related_name="+",
    )  # fmt: skip
    # Stored by the database, and indexed with the snapshot: the table's default order (largest
    # first), so a page of it is read from the index without sorting every category.
    total_bytes = models.GeneratedField(
        expression=models.F("persistent_bytes") + models.F("transient_bytes"),
        output_field=models.BigIntegerField(),
        db_persist=True,
    )

    class Meta:
        db_table = "snapshots_categorytotal"
        indexes = [
            models.Index(fields=["snapshot", "category"], name="cattotal_snap_cat"),
            models.Index(fields=["snapshot", "-total_bytes"], name="cattotal_snap_size"),
        ]


class GenerationCategoryTotal(Counts):
    """Per snapshot, generation (null: before the first mark) and category."""

    snapshot = models.ForeignKey(  # indexed by the composite index below, which starts with it
        Snapshot, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    # The app's id: the distribution column on Citus (migration 0016), so a snapshot's rows
    # sit on the worker of its app; no index or constraint of its own (every read names the
    # snapshot).
    app = models.ForeignKey(
        App, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    generation = models.IntegerField(null=True)
    category = models.ForeignKey(  # not indexed alone, as CategoryTotal.category
        Category, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False,
        related_name="+",
    )  # fmt: skip

    class Meta:
        db_table = "snapshots_generationcategorytotal"
        indexes = [models.Index(fields=["snapshot", "generation"], name="gentotal_snap_gen")]


class CallTreeNode(Counts):
    """Inclusive totals of one node of a snapshot's merged call tree (all categories, all
    threads), computed at ingest; the `self_*` columns count allocations made in the node itself.
    Other views of the tree (a category, a generation, inverted, …) are computed on demand."""

    snapshot = models.ForeignKey(  # indexed by the composite index below, which starts with it
        Snapshot, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    # The app's id: the distribution column on Citus (migration 0016), so a snapshot's rows
    # sit on the worker of its app; no index or constraint of its own (every read names the
    # snapshot).
    app = models.ForeignKey(
        App, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    node_id = models.BigIntegerField()
    parent_id = models.BigIntegerField(null=True)
    frame_id = models.BigIntegerField()
    self_persistent = models.BigIntegerField(default=0)
    self_persistent_bytes = models.BigIntegerField(default=0)
    self_transient = models.BigIntegerField(default=0)
    self_transient_bytes = models.BigIntegerField(default=0)

    class Meta:
        db_table = "snapshots_calltreenode"
        indexes = [models.Index(fields=["snapshot", "parent_id"], name="calltree_snap_parent")]


class BuildCategoryTotal(Counts):
    """Per build and category, summed over the build's snapshots (updated at each ingest)."""

    # Indexed by the unique (build, category) index, which starts with it. On PostgreSQL the
    # table leaves room on its pages for the updates of each upload (migration 0013).
    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="+", db_index=False)
    category = models.ForeignKey(Category, on_delete=models.CASCADE, related_name="+")
    # The app's id: the distribution column on Citus (migration 0016), so a snapshot's rows
    # sit on the worker of its app; no index or constraint of its own (every read names the
    # snapshot).
    app = models.ForeignKey(
        App, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    snapshots = models.IntegerField(default=0)  # snapshots in which the category appears

    class Meta:
        db_table = "snapshots_buildcategorytotal"
        constraints = [
            models.UniqueConstraint(fields=["build", "category", "app"], name="buildcat_identity")
        ]


class BuildView(models.Model):
    """A build's statistics table per snapshot, made ahead for the whole build (`filter` "") or
    for the snapshots of one value of one of the build page's filters (trigger, model, os), under
    one lifespan filter (`logic.build_views.build_table`, zlib-compressed JSON), so that the
    build page of ten thousand snapshots reads one row. `signature` names the snapshots it was
    made from (`reads.build_views.signature`): one made from others is out of date."""

    # The app first in its key, as in every table that grows with uploads (Citus distributes
    # by it); the build's rows are found through that key.
    app = models.ForeignKey(
        App, on_delete=models.CASCADE, db_constraint=False, db_index=False, related_name="+"
    )
    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="+", db_index=False)
    filter = models.CharField(max_length=8, blank=True, default="")
    value = models.CharField(max_length=128, blank=True, default="")
    lifespan = models.CharField(max_length=12)
    snapshots = models.IntegerField(default=0)
    signature = models.CharField(max_length=100)
    data = models.BinaryField()
    made_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "allocations_buildview"
        constraints = [
            models.UniqueConstraint(
                fields=["app", "build", "filter", "value", "lifespan"], name="buildview_identity"
            )
        ]


class SnapshotImage(models.Model):
    """An image (binary) that frames of a snapshot are in, with what is still unnamed in it: the
    frames without a name, and the bytes of the allocations with such a frame on their stack.
    Kept at ingest and after each symbolication, so "which debug files are missing" is one
    query, and the snapshots a new debug file names are found by its id."""

    snapshot = models.ForeignKey(
        Snapshot, on_delete=models.CASCADE, db_constraint=False, related_name="images"
    )
    app = models.ForeignKey(App, on_delete=models.CASCADE, db_constraint=False, related_name="+")
    name = models.TextField()
    debug_id = models.CharField(max_length=64, blank=True, default="")  # as the snapshot said
    arch = models.CharField(max_length=32, blank=True, default="")
    system = models.BooleanField(default=False)
    unsymbolicated_frames = models.IntegerField(default=0)
    unsymbolicated_bytes = models.BigIntegerField(default=0)

    class Meta:
        indexes = [models.Index(fields=["app", "debug_id"], name="snapimage_app_debug_id")]


class Timeline(models.Model):
    """Live bytes and count of a snapshot over time (the Allocations track of Instruments),
    computed at ingest for the snapshots whose upload says when each block was made and freed
    (the events shape): `times[i]` is the end of bucket i (ms, on the upload's clock), the live
    bytes and count then. The buckets split the run in equal parts from `start_ms`, `bucket_ms`
    wide; TimedAllocationRow holds the snapshot's rows by the bucket they were made in."""

    snapshot = models.OneToOneField(  # no constraint: a distributed table's key has the app
        Snapshot, on_delete=models.CASCADE, primary_key=True, db_constraint=False,
        related_name="timeline",
    )  # fmt: skip
    app = models.ForeignKey(App, on_delete=models.CASCADE, db_constraint=False, related_name="+")
    start_ms = models.FloatField()
    bucket_ms = models.FloatField()
    buckets = models.IntegerField()
    live_bytes = models.JSONField(default=list)  # per bucket, at its end
    live_count = models.JSONField(default=list)
    # per bucket, what was made in it: [persistent, persistent bytes, transient, transient
    # bytes] (a range's totals); empty for a timeline stored before TimedCallTreeNode was kept
    made = models.JSONField(default=list)

    class Meta:
        db_table = "allocations_timeline"


class TimedAllocationRow(Counts):
    """An events snapshot's allocation rows split by the time bucket (Timeline) their blocks
    were made in: what a time range of the snapshot reads (the rows of AllocationRow are these
    summed over the buckets)."""

    app = models.ForeignKey(App, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    snapshot = models.ForeignKey(  # indexed by the composite index below, which starts with it
        Snapshot, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    bucket = models.IntegerField()
    category_id = models.BigIntegerField()
    stack_id = models.BigIntegerField(null=True)
    thread = models.IntegerField(null=True)
    generation = models.IntegerField(null=True)

    class Meta:
        db_table = "allocations_timedrow"
        indexes = [models.Index(fields=["snapshot", "bucket"], name="timedrow_snap_bucket")]


class TimedCallTreeNode(Counts):
    """CallTreeNode per time bucket of a snapshot's timeline: the inclusive and own counters of
    the allocations made in that bucket, for the nodes on their paths. A range's call tree is
    these summed over its buckets, a level at a time (`reads.calltree.ranged`), as the whole
    snapshot's is read from CallTreeNode."""

    app = models.ForeignKey(App, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    snapshot = models.ForeignKey(  # indexed by the composite index below, which starts with it
        Snapshot, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+"
    )
    bucket = models.IntegerField()
    node_id = models.BigIntegerField()
    parent_id = models.BigIntegerField(null=True)
    frame_id = models.BigIntegerField()
    self_persistent = models.BigIntegerField(default=0)
    self_persistent_bytes = models.BigIntegerField(default=0)
    self_transient = models.BigIntegerField(default=0)
    self_transient_bytes = models.BigIntegerField(default=0)

    class Meta:
        db_table = "allocations_timedcalltree"
        indexes = [
            models.Index(fields=["snapshot", "parent_id", "bucket"], name="timedtree_snap_parent")
        ]
