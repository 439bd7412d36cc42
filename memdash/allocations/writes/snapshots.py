"""Writes of the snapshots domain: storing a validated snapshot, and deleting one.

`store_snapshot_document` runs inside the upload's transaction (opened by ingest): it validates
the whole document first, then bulk-loads frames, stack nodes, allocation rows and the
pre-aggregated tables (category totals, per-generation totals, call-tree totals, build totals)
that every page reads instead of the raw rows.
"""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction

from memdash.allocations.logic.analysis import category_kind, table_summary
from memdash.allocations.logic.callers import responsible_callers
from memdash.allocations.logic.document.parse import ParsedSnapshot, parse_snapshot
from memdash.allocations.logic.recording import RECORDING_RULE, drop_recording_frames
from memdash.allocations.logic.symbolicate import (
    FRAME_IDENTITY,
    frame_ids_and_nodes,
    image_ids,
    image_usage,
    key_by_function,
    symbolicate_parsed,
)
from memdash.allocations.logic.totals import Totals, generation_growth, snapshot_totals
from memdash.allocations.models import (
    AllocationBlock,
    AllocationRow,
    BuildCategoryTotal,
    CallTreeNode,
    Category,
    CategoryTotal,
    Frame,
    Generation,
    GenerationCategoryTotal,
    ListEntry,
    ListOrderChunk,
    Snapshot,
    SnapshotImage,
    StackNode,
    TimedAllocationRow,
    TimedCallTreeNode,
    category_hash,
)
from memdash.allocations.signals import snapshot_stored
from memdash.allocations.writes.tables import (
    COUNTERS,
    category_id_column,
    store_allocation_rows,
    store_block_columns,
    store_blocks,
    store_call_tree,
    store_frames_and_nodes,
    store_totals,
)
from memdash.allocations.writes.timeline import store_timeline
from memdash.core.models import App, Build
from memdash.core.reads.where_in import where_in_parts
from memdash.core.writes import apps as core_services
from memdash.core.writes.bulk import insert_ignore, upsert_add
from memdash.core.writes.uploads import Progress, StoreResult, UploadMeta, check_app, no_progress
from memdash.symbols import reads as symbols
from memdash.symbols.logic.lookup import normalize_debug_id


def store_snapshot_document(
    doc: Any,
    meta: UploadMeta,
    progress: Progress = no_progress,
    source_format: str = "memdash.snapshot",
    tool_figures: dict[str, dict[str, Any]] | None = None,
) -> StoreResult:
    """Validate a memdash.snapshot v1 document and store it as one snapshot of `meta.app`.
    Importers of other formats convert to this document and name their own `source_format`.
    `doc` may also be the snapshot `document_raw.read_snapshot` read and validated already."""
    progress("validate", 0.0)
    if isinstance(doc, ParsedSnapshot):  # read and validated from the bytes (document_raw)
        check_app({"id": doc.app_id, "platform": doc.platform}, meta)
        parsed = doc
    else:
        if isinstance(doc, dict):
            check_app(doc.get("app"), meta)
        parsed = parse_snapshot(doc)
    parsed.tool_figures = tool_figures or {}  # what the tool itself said (Snapshot.tool_figures)
    progress("validate", 1.0)
    return snapshot_result(store_parsed_snapshot(parsed, meta, progress, source_format))


def snapshot_result(snapshot: Snapshot) -> StoreResult:
    """What an upload that stored `snapshot` reports (its page and its counts)."""
    return StoreResult(
        kind="snapshot",
        url=snapshot.get_absolute_url(),
        object_id=snapshot.pk,
        counts={
            "rows": snapshot.row_count,
            "categories": snapshot.category_count,
            "stack_nodes": snapshot.stack_node_count,
            "events": snapshot.event_count,
            "unmatched_frees": snapshot.unmatched_frees,
            "replaced_live_blocks": snapshot.replaced_live_blocks,
        },
    )


def _category_ids(app: App, names: set[str]) -> dict[str, int]:
    """Ids of the app's categories by name, creating the missing ones: one read by hash, one
    bulk insert of what is missing (of two uploads racing to make one, both keep the one made
    first), one read of those. Thousands of them: the hashes go as one array (`where_in`) and
    the new rows by the bulk engine, not as thousands of placeholders and model instances."""
    hashes = {category_hash(n): n for n in names}
    ids: dict[str, int] = {}

    def read(wanted: list[int]) -> None:
        for part in where_in_parts("name_hash", wanted):
            found = Category.objects.filter(part)
            for name_hash, name, pk in found.filter(app=app).values_list("name_hash", "name", "id"):
                if hashes.get(name_hash) == name:
                    ids[name] = pk

    read(list(hashes))
    missing = sorted(h for h, n in hashes.items() if n not in ids)
    if missing:
        insert_ignore(
            Category,
            ["app_id", "name", "name_hash", "kind"],
            [(app.pk, hashes[h], h, category_kind(hashes[h])) for h in missing],
            ["app_id", "name_hash"],
        )
        read(missing)
    return ids


def store_parsed_snapshot(
    parsed: ParsedSnapshot,
    meta: UploadMeta,
    progress: Progress = no_progress,
    source_format: str = "memdash.snapshot",
) -> Snapshot:
    app = meta.app
    # Within the upload's transaction (ingest opens it) as a part of it, not in a savepoint:
    # an error rolls the whole upload back anyway. Called alone, it is its own transaction.
    with transaction.atomic(savepoint=False):
        progress("store", 0.0)
        parsed.to_columns()  # the rows as columns, whatever made them
        wanted = image_ids(parsed)
        if wanted:  # frames without names in images that may have debug files
            symbolicate_parsed(parsed, symbols.symbolicator(app, wanted))
        drop_recording_frames(parsed, source_format)  # a monitor's own hook is no caller
        key_by_function(parsed)  # every call site of a named function is one frame
        build = core_services.get_or_create_build(
            app, parsed.build_version, parsed.build_number, parsed.build_commit
        )
        device = None
        if parsed.device_id:
            device = core_services.get_or_create_device(
                app, parsed.device_id, parsed.device_model, parsed.device_os
            )
        rows = timed = parsed.columns
        assert rows is not None  # (to_columns)
        if rows.bucket is not None:  # an events upload's rows by time bucket: summed for these
            parsed.columns = rows = rows.untimed()
        snapshot = Snapshot.objects.create(
            app=app,
            build=build,
            device=device,
            upload_id=meta.upload_id,
            source_format=source_format,
            session_id=parsed.session,
            captured_at=parsed.captured_at,
            trigger=parsed.trigger,
            device_model=parsed.device_model,
            os=parsed.device_os,
            threads=parsed.threads,
            row_count=len(rows.category),
            stack_node_count=len(parsed.stack_parents),
            event_count=parsed.event_count,
            unmatched_frees=parsed.unmatched_frees,
            replaced_live_blocks=parsed.replaced_live_blocks,
            frame_identity=FRAME_IDENTITY,
            recording_rule=RECORDING_RULE,
            tool_figures=parsed.tool_figures,
        )
        category_ids = _category_ids(app, set(rows.names))
        progress("store", 0.1)
        store_images(snapshot, parsed, new=True)
        frame_ids, nodes = frame_ids_and_nodes(app.pk, parsed)
        store_frames_and_nodes(app.pk, parsed, frame_ids, nodes)
        progress("store", 0.3)
        store_allocation_rows(app.pk, snapshot.pk, rows, category_ids, nodes)
        store_blocks(app.pk, snapshot.pk, parsed.blocks, category_ids, nodes)
        if parsed.block_columns is not None:
            store_block_columns(app.pk, snapshot.pk, parsed.block_columns, category_ids, nodes)
        if parsed.timeline is not None and timed is not None:
            store_timeline(app.pk, snapshot.pk, timed, parsed.timeline, category_ids, nodes)
        del timed
        progress("store", 0.7)
        totals = snapshot_totals(rows, nodes)
        store_call_tree(app.pk, snapshot.pk, nodes, totals.call_tree)
        _store_aggregates(snapshot, build.pk, parsed, category_ids, frame_ids, totals)
        snapshot_stored.send(Snapshot, snapshot=snapshot)
        progress("store", 1.0)
    return snapshot


def _store_aggregates(
    snapshot: Snapshot,
    build_id: int,
    parsed: ParsedSnapshot,
    category_ids: dict[str, int],
    frame_ids: list[int],
    totals: Totals,
) -> None:
    """The small pre-aggregated tables: category and generation totals, generations, the
    build's totals and the snapshot's own (its row holds its totals and table summary)."""
    sid = snapshot.pk
    rows = parsed.to_columns()
    callers = responsible_callers(parsed, totals.heaviest(rows.names), frame_ids)
    store_totals(snapshot.app_id, sid, rows, category_ids, totals, callers)
    growth = generation_growth(totals, len(parsed.generations))
    Generation.objects.bulk_create(
        [
            Generation(
                snapshot=snapshot,
                app_id=snapshot.app_id,
                index=i,
                name=name,
                at_ms=round(at_ms),
                growth_bytes=growth[i][0],
                persistent=growth[i][1],
            )
            for i, (name, at_ms) in enumerate(parsed.generations)
        ]
    )
    per_category = totals.per_category(rows.names)
    ids = category_id_column(rows.names, category_ids).tolist()
    upsert_add(
        BuildCategoryTotal,
        ["build_id", "category_id", "app_id"],
        [*COUNTERS, "snapshots"],
        [
            (build_id, ids[c], snapshot.app_id, *counts, 1)
            for c, counts in zip(
                totals.categories.tolist(), totals.category_counts.tolist(), strict=True
            )
        ],
    )
    p, pb, t, tb = totals.totals
    snapshot.table_summary = table_summary(per_category)
    Snapshot.objects.filter(pk=sid).update(
        table_summary=snapshot.table_summary,
        unsymbolicated_bytes=snapshot.unsymbolicated_bytes,
        category_count=len(per_category),
        persistent=p,
        persistent_bytes=pb,
        transient=t,
        transient_bytes=tb,
    )
    snapshot.category_count = len(per_category)
    snapshot.persistent, snapshot.persistent_bytes = p, pb
    snapshot.transient, snapshot.transient_bytes = t, tb


def store_images(snapshot: Snapshot, parsed: ParsedSnapshot, *, new: bool = False) -> None:
    """The snapshot's images with what is still unnamed in them, replacing earlier ones. A `new`
    snapshot has none to replace, and its unnamed bytes go in with its totals (one UPDATE of
    its row, `_store_aggregates`): two statements fewer in every upload's transaction."""
    usage, unnamed_bytes = image_usage(parsed)
    if not new:
        SnapshotImage.objects.filter(snapshot_id=snapshot.pk).delete()
    SnapshotImage.objects.bulk_create(
        [
            SnapshotImage(
                snapshot_id=snapshot.pk,
                app_id=snapshot.app_id,
                name=u.name,
                debug_id=(normalize_debug_id(u.debug_id) or u.debug_id)[:64],
                arch=u.arch,
                system=u.system,
                unsymbolicated_frames=u.frames,
                unsymbolicated_bytes=u.bytes,
            )
            for u in usage.values()
        ],
        batch_size=500,
    )
    if not new:
        Snapshot.objects.filter(pk=snapshot.pk).update(unsymbolicated_bytes=unnamed_bytes)
    snapshot.unsymbolicated_bytes = unnamed_bytes


def delete_snapshot(snapshot: Snapshot) -> None:
    """Delete a snapshot with its rows, and take its share out of the build totals. The rows
    go in `delete_snapshot_data`, called by the pre_delete receiver (apps.py), so a snapshot
    deleted through the ORM leaves nothing behind either."""
    with transaction.atomic():
        snapshot.delete()


def delete_snapshot_data(snapshot: Snapshot) -> None:
    """What a snapshot owns outside the ORM's cascade: its share of the build totals, its raw
    rows and its stored totals (none of them has a database constraint to cascade through)."""
    sid = snapshot.pk
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {BuildCategoryTotal._meta.db_table} AS b SET "
                "persistent = b.persistent - c.persistent, "
                "persistent_bytes = b.persistent_bytes - c.persistent_bytes, "
                "transient = b.transient - c.transient, "
                "transient_bytes = b.transient_bytes - c.transient_bytes, "
                "snapshots = b.snapshots - 1 "
                f"FROM {CategoryTotal._meta.db_table} AS c "
                "WHERE c.snapshot_id = %s AND b.build_id = %s AND b.category_id = c.category_id "
                # the app on both sides: on Citus the two tables are joined on its worker
                "AND c.app_id = %s AND b.app_id = c.app_id",
                [sid, snapshot.build_id, snapshot.app_id],
            )
        # A category seen in no snapshot of the build any more has no row: the build's table
        # lists what its snapshots hold, never a category at zero.
        BuildCategoryTotal.objects.filter(
            app_id=snapshot.app_id, build_id=snapshot.build_id, snapshots__lte=0
        ).delete()
        for model in SNAPSHOT_TABLES:
            found = model.objects.filter(app_id=snapshot.app_id, snapshot_id=sid)
            found._raw_delete(model.objects.db)


# The tables keyed by snapshot without a database constraint: deleted by snapshot id in one
# statement each, never row by row, and by the app too: their keys (and on Citus their
# distribution) start with it, so a snapshot's rows are found without a scan of every app's.
SNAPSHOT_TABLES = (
    AllocationRow, CallTreeNode, CategoryTotal, GenerationCategoryTotal, TimedAllocationRow,
    TimedCallTreeNode, AllocationBlock, ListEntry, ListOrderChunk,
)  # fmt: skip


def delete_build_data(build: Build) -> None:
    """The rows of a build's snapshots, before the build and its snapshots are deleted. The
    build totals, generations and snapshots themselves go by the ORM's cascade."""
    # the ids themselves, not a subquery: on Citus a table that is not distributed (the list's
    # chunks) cannot be written by a subquery of a distributed one
    snapshots = Snapshot.objects.filter(app_id=build.app_id, build_id=build.pk)
    ids = list(snapshots.values_list("pk", flat=True))
    for model in SNAPSHOT_TABLES:
        found = model.objects.filter(app_id=build.app_id, snapshot_id__in=ids)
        found._raw_delete(model.objects.db)


def delete_app_data(app_id: int) -> None:
    """The rows of all of an app's snapshots and the app's frames and stack nodes (shared by
    its snapshots, so they go with the app only), before the app is deleted."""
    for model in SNAPSHOT_TABLES:
        model.objects.filter(app_id=app_id)._raw_delete(model.objects.db)
    for shared in (StackNode, Frame):
        shared.objects.filter(app_id=app_id)._raw_delete(shared.objects.db)
