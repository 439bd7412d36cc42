"""Writes of a build's call trees made ahead (`models.BuildTree`, read by `reads.calltree.made`).

`refresh_build_trees` reads the allocation rows of the build's snapshots whose rows are kept
once (summed per snapshot and stack, all four counters), the stack paths and frames once, builds
each snapshot's tree under each lifespan filter, and from those the tree of the whole build and
of each value of each filter (the medians per snapshot of the trees of the snapshots it keeps:
`per_snapshot.PerSnapshotTree`, as `reads.calltree.trees` builds it on demand), with its default
flame graph and Top Functions; then replaces the build's stored ones (one upsert per lifespan)
and drops those of filter values no snapshot has any longer. Run by the task that makes the
build's statistics tables (`tasks.refresh_build_tables`), queued once a snapshot's transaction
commits, batched: a burst of uploads to one build makes them once.

A build small enough to build its trees in a request (at most
`MEMDASH_BUILD_TABLE_INLINE_SNAPSHOTS` snapshots, at most `MEMDASH_TREE_INLINE_ROWS` rows kept)
has none made: its pages build them on demand, current, as before.
"""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from django.conf import settings
from django.db.models import Sum
from django.utils import timezone

from memdash.allocations.logic.analysis import LIFESPANS
from memdash.allocations.logic.build_views import filter_keys
from memdash.allocations.logic.calltree.build import build_call_tree
from memdash.allocations.logic.calltree.per_snapshot import PerSnapshotTree
from memdash.allocations.logic.calltree.products import make_product
from memdash.allocations.logic.calltree.tree import CallTree, FrameInfo, StackInfo, TreeRow
from memdash.allocations.models import AllocationRow, BuildTree, Snapshot
from memdash.allocations.reads.calltree.made import (
    MADE_PRODUCTS,
    TREE,
    chosen_key,
    product_kind,
    signature_of,
)
from memdash.allocations.reads.calltree.query import CallTreeQuery
from memdash.allocations.reads.calltree.stored import frame_infos
from memdash.allocations.reads.calltree.trees import stack_paths
from memdash.core.models import Build
from memdash.core.reads.where_in import where_in_parts

Counters = tuple[int, int, int, int]  # persistent, persistent bytes, transient, transient bytes
StackSums = list[tuple[int | None, Counters]]  # a snapshot's rows summed per stack
_FIGURES = {"all": ((1, 3), (0, 2)), "persistent": ((1,), (0,)), "transient": ((3,), (2,))}


class _Listed(NamedTuple):
    pk: int
    trigger: str
    model: str
    os: str
    created_at: datetime
    symbols_version: int
    rows_pruned_at: datetime | None
    row_count: int


def _pack(value: object) -> bytes:
    return zlib.compress(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL), 1)


def _rows_by_snapshot(app_id: int, kept: Sequence[int]) -> dict[int, StackSums]:
    """The kept snapshots' allocation rows summed per stack, all four counters."""
    out: dict[int, StackSums] = {sid: [] for sid in kept}
    for part in where_in_parts("snapshot_id", list(kept)):
        sums = (
            AllocationRow.objects.filter(part, app_id=app_id)
            .values("snapshot_id", "stack_id")
            .annotate(
                p=Sum("persistent"),
                pb=Sum("persistent_bytes"),
                t=Sum("transient"),
                tb=Sum("transient_bytes"),
            )  # fmt: skip
            .values_list("snapshot_id", "stack_id", "p", "pb", "t", "tb")
            .order_by()
        )
        for sid, stack, p, pb, t, tb in sums:
            out[sid].append((stack, (p or 0, pb or 0, t or 0, tb or 0)))
    return out


def _snapshot_tree(
    rows: StackSums,
    lifespan: str,
    stacks: dict[int, StackInfo],
    frames: dict[int, FrameInfo],
) -> CallTree:
    sizes, counts = _FIGURES[lifespan]
    tree_rows = [
        TreeRow(stack, None, sum(c[i] for i in sizes), sum(c[i] for i in counts))
        for stack, c in rows
    ]
    return build_call_tree(tree_rows, stacks, frames, CallTreeQuery(lifespan=lifespan).options)


def _of(trees: list[CallTree], lifespan: str, stacks: dict[int, StackInfo],
        frames: dict[int, FrameInfo]) -> CallTree:  # fmt: skip
    """The build's tree over these snapshots' trees, as `trees._compute_tree` builds it: their
    medians per snapshot, or the one snapshot's tree (an empty one of none)."""
    options = CallTreeQuery(lifespan=lifespan).options
    if len(trees) > 1:
        return PerSnapshotTree(trees, options)
    return trees[0] if trees else build_call_tree([], stacks, frames, options)


def makes_trees(snapshots: int, kept_rows: int) -> bool:
    """Whether a build of this size has its trees made ahead (else built in its requests)."""
    return (
        snapshots > settings.MEMDASH_BUILD_TABLE_INLINE_SNAPSHOTS
        or kept_rows > settings.MEMDASH_TREE_INLINE_ROWS
    )


def refresh_build_trees(build: Build) -> int:
    """Make and store the build's trees made ahead (each with the signature of the snapshots
    it was made from, read before their rows); the number of rows stored."""
    listed = [
        _Listed(*row)
        for row in Snapshot.objects.filter(app_id=build.app_id, build_id=build.pk)
        .order_by("pk")
        .values_list(
            "pk",
            "trigger",
            "device_model",
            "os",
            "created_at",
            "symbols_version",
            "rows_pruned_at",
            "row_count",
        )  # fmt: skip
    ]
    kept_rows = sum(s.row_count for s in listed if s.rows_pruned_at is None)
    gone = BuildTree.objects.filter(app_id=build.app_id, build_id=build.pk)
    if not makes_trees(len(listed), kept_rows):
        if gone.exists():
            gone.delete()
        return 0
    keys = filter_keys([(s.trigger, s.model, s.os) for s in listed])
    kept = [s.pk for s in listed if s.rows_pruned_at is None]
    rows = _rows_by_snapshot(build.app_id, kept)
    stacks = stack_paths(build.app_id, {st for r in rows.values() for st, _ in r}, [])
    frames = frame_infos(s.frame_id for s in stacks.values())
    made_at = timezone.now()
    stored = 0
    for lifespan in LIFESPANS:
        trees = {sid: _snapshot_tree(rows[sid], lifespan, stacks, frames) for sid in kept}
        made = []
        for (name, value), chosen in keys.items():
            picked = [listed[int(i)] for i in chosen]
            of_kept = [s for s in picked if s.rows_pruned_at is None]
            tree = _of([trees[s.pk] for s in of_kept], lifespan, stacks, frames)
            fields = _fields(build, name, value, lifespan, picked, of_kept, made_at)
            made.append(BuildTree(kind=TREE, data=_pack(tree), **fields))
            for product in MADE_PRODUCTS:
                kind = product_kind(product)
                assert kind is not None
                made.append(BuildTree(kind=kind, data=_pack(make_product(tree, product)),
                                      **fields))  # fmt: skip
        BuildTree.objects.bulk_create(
            made,
            update_conflicts=True,
            unique_fields=["app", "build", "chosen", "lifespan", "kind"],
            update_fields=["filter", "value", "snapshots", "kept", "rows", "signature", "data",
                           "made_at"],
        )  # fmt: skip
        stored += len(made)
        del trees, made
    old = gone.filter(made_at__lt=made_at)
    if old.exists():
        old.delete()
    return stored


def _fields(
    build: Build,
    name: str,
    value: str,
    lifespan: str,
    picked: list[_Listed],
    kept: list[_Listed],
    made_at: datetime,
) -> dict[str, object]:
    """The columns of a stored row besides its kind and data: what it was made from."""
    signature = signature_of(
        len(picked), sum(s.pk for s in picked), max((s.created_at for s in picked), default=None),
        sum(s.symbols_version for s in picked),
    )  # fmt: skip
    return {
        "app_id": build.app_id,
        "build": build,
        "chosen": chosen_key(name, value),
        "filter": name,
        "value": value,
        "lifespan": lifespan,
        "snapshots": len(picked),
        "kept": len(kept),
        "rows": sum(s.row_count for s in kept),
        "signature": signature,
        "made_at": made_at,
    }
