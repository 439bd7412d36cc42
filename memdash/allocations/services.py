"""Writes of the snapshots domain: storing a validated snapshot, and deleting one.

`store_snapshot_document` runs inside the upload's transaction (opened by ingest): it validates
the whole document first, then bulk-loads frames, stack nodes, allocation rows and the
pre-aggregated tables (category totals, per-generation totals, call-tree totals, build totals)
that every page reads instead of the raw rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction

from memdash.allocations.analysis import (
    as_signed64,
    category_kind,
    inclusive_totals,
    table_summary,
)
from memdash.allocations.callers import responsible_callers
from memdash.allocations.document import ParsedSnapshot, parse_snapshot
from memdash.allocations.models import (
    AllocationRow,
    BuildCategoryTotal,
    CallTreeNode,
    Category,
    CategoryTotal,
    Frame,
    Generation,
    GenerationCategoryTotal,
    Snapshot,
    SnapshotImage,
    StackNode,
    category_hash,
)
from memdash.allocations.symbolicate import (
    FRAME_IDENTITY,
    frame_and_node_ids,
    image_ids,
    image_usage,
    key_by_function,
    symbolicate_parsed,
)
from memdash.core import services as core_services
from memdash.core.bulk import Row, copy_rows, insert_ignore, upsert_add
from memdash.core.models import App
from memdash.core.uploads import Progress, StoreResult, UploadMeta, check_app, no_progress
from memdash.symbols import selectors as symbols
from memdash.symbols.lookup import normalize_debug_id


def store_snapshot_document(
    doc: Any,
    meta: UploadMeta,
    progress: Progress = no_progress,
    source_format: str = "memdash.snapshot",
    tool_figures: dict[str, dict[str, Any]] | None = None,
) -> StoreResult:
    """Validate a memdash.snapshot v1 document and store it as one snapshot of `meta.app`.
    Importers of other formats convert to this document and name their own `source_format`."""
    progress("validate", 0.0)
    if isinstance(doc, dict):
        check_app(doc.get("app"), meta)
    parsed = parse_snapshot(doc)
    parsed.tool_figures = tool_figures or {}  # what the tool itself said (Snapshot.tool_figures)
    progress("validate", 1.0)
    snapshot = store_parsed_snapshot(parsed, meta, progress, source_format)
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
    """Ids of the app's categories by name, creating the missing ones."""
    ids: dict[str, int] = {}

    def read(chosen: list[str]) -> None:
        for start in range(0, len(chosen), 500):
            found = Category.objects.filter(app=app).named(chosen[start : start + 500])
            ids.update(found.values_list("name", "id"))

    read(sorted(names))
    missing = [n for n in sorted(names) if n not in ids]
    if missing:
        Category.objects.bulk_create(
            [
                Category(app=app, name=n, name_hash=category_hash(n), kind=category_kind(n))
                for n in missing
            ],
            ignore_conflicts=True,
            batch_size=500,
        )
        read(missing)
    return ids


def _store_frames_and_nodes(
    app: App, parsed: ParsedSnapshot, frame_ids: list[int], node_ids: list[int]
) -> None:
    frames = {}
    for fid, f in zip(frame_ids, parsed.frames, strict=True):
        frames[fid] = (
            fid, app.pk, f.symbol, f.image, as_signed64(f.offset), as_signed64(f.address),
            f.file, f.line, f.is_system, f.inlined,
        )  # fmt: skip
    insert_ignore(
        Frame,
        ["id", "app_id", "symbol", "image", "offset", "address", "file", "line", "is_system",
         "inlined"],
        frames.values(),
        ["id"],
    )  # fmt: skip
    _add_source_locations(parsed, frame_ids)
    nodes: dict[int, tuple[int, int, int | None, int, int]] = {}
    depth: list[int] = []
    for i, (parent, frame) in enumerate(
        zip(parsed.stack_parents, parsed.stack_frames, strict=True)
    ):
        depth.append(depth[parent] + 1 if parent is not None else 0)
        nid = node_ids[i]
        if nid not in nodes:
            parent_id = node_ids[parent] if parent is not None else None
            nodes[nid] = (nid, app.pk, parent_id, frame_ids[frame], depth[i])
    insert_ignore(
        StackNode,
        ["id", "app_id", "parent_id", "frame_id", "depth"],
        nodes.values(),
        ["id"],
    )


@dataclass
class Sums:
    """What one pass over the aggregated rows adds up for the pre-aggregated tables."""

    per_generation: dict[tuple[int | None, str], list[int]] = field(default_factory=dict)
    per_node: dict[int, list[int]] = field(default_factory=dict)  # self counts by node hash
    heaviest: dict[str, tuple[int, int]] = field(default_factory=dict)  # category: (bytes, stack)

    @property
    def per_category(self) -> dict[str, list[int]]:
        """Summed from the per-generation totals (a few per category), not from the rows."""
        out: dict[str, list[int]] = {}
        for (_, category), counts in self.per_generation.items():
            _add(out, category, counts)
        return out

    @property
    def totals(self) -> list[int]:
        out = [0, 0, 0, 0]
        for counts in self.per_generation.values():
            for k in range(4):
                out[k] += counts[k]
        return out


def _add[K](table: dict[K, list[int]], key: K, counts: Sequence[int]) -> None:
    acc = table.get(key)
    if acc is None:
        table[key] = list(counts)
    else:
        acc[0] += counts[0]
        acc[1] += counts[1]
        acc[2] += counts[2]
        acc[3] += counts[3]


def allocation_copy_rows(
    snapshot_id: int, parsed: ParsedSnapshot, category_ids: dict[str, int], node_ids: list[int],
    sums: Sums,
) -> Iterator[Row]:  # fmt: skip
    """The AllocationRow tuples for COPY. It also fills `sums` as it goes, so that a million
    rows are walked once in Python, not once per aggregate table (the additions are written out
    here rather than calling `_add`: this loop runs once per row)."""
    per_generation, per_node, heaviest = sums.per_generation, sums.per_node, sums.heaviest
    for (category, stack, thread, generation), counts in parsed.rows.items():
        p, pb, t, tb = counts
        acc = per_generation.get((generation, category))
        if acc is None:
            per_generation[generation, category] = [p, pb, t, tb]
        else:
            acc[0] += p
            acc[1] += pb
            acc[2] += t
            acc[3] += tb
        if stack is None:
            yield (snapshot_id, category_ids[category], None, thread, generation, p, pb, t, tb)
            continue
        node = node_ids[stack]
        yield (snapshot_id, category_ids[category], node, thread, generation, p, pb, t, tb)
        acc = per_node.get(node)
        if acc is None:
            per_node[node] = [p, pb, t, tb]
        else:
            acc[0] += p
            acc[1] += pb
            acc[2] += t
            acc[3] += tb
        size = pb + tb
        best = heaviest.get(category)
        if best is None or size > best[0]:
            heaviest[category] = (size, stack)


def _call_tree_rows(
    snapshot_id: int, parsed: ParsedSnapshot, frame_ids: list[int], node_ids: list[int],
    self_counts: dict[int, list[int]],
) -> Iterator[Row]:  # fmt: skip
    """Rows of CallTreeNode: every node on the path of some allocation, with inclusive totals."""
    order: list[int] = []
    parent_of: dict[int, int | None] = {}
    frame_of: dict[int, int] = {}
    for i, nid in enumerate(node_ids):
        if nid in parent_of:
            continue
        parent = parsed.stack_parents[i]
        parent_of[nid] = node_ids[parent] if parent is not None else None
        frame_of[nid] = frame_ids[parsed.stack_frames[i]]
        order.append(nid)
    inclusive = inclusive_totals(order, parent_of, self_counts)
    zero = (0, 0, 0, 0)
    for nid, (p, pb, t, tb) in inclusive.items():
        own = self_counts.get(nid, zero)
        yield (
            snapshot_id, nid, parent_of[nid], frame_of[nid], p, pb, t, tb,
            own[0], own[1], own[2], own[3],
        )  # fmt: skip


COUNTERS = ["persistent", "persistent_bytes", "transient", "transient_bytes"]


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
        wanted = image_ids(parsed)
        if wanted:  # frames without names in images that may have debug files
            symbolicate_parsed(parsed, symbols.symbolicator(app, wanted))
        key_by_function(parsed)  # every call site of a named function is one frame
        build = core_services.get_or_create_build(
            app, parsed.build_version, parsed.build_number, parsed.build_commit
        )
        device = None
        if parsed.device_id:
            device = core_services.get_or_create_device(
                app, parsed.device_id, parsed.device_model, parsed.device_os
            )
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
            row_count=len(parsed.rows),
            stack_node_count=len(parsed.stack_parents),
            event_count=parsed.event_count,
            unmatched_frees=parsed.unmatched_frees,
            replaced_live_blocks=parsed.replaced_live_blocks,
            frame_identity=FRAME_IDENTITY,
            tool_figures=parsed.tool_figures,
        )
        category_ids = _category_ids(app, {key[0] for key in parsed.rows})
        progress("store", 0.1)
        store_images(snapshot, parsed)
        frame_ids, node_ids = frame_and_node_ids(app.pk, parsed)
        _store_frames_and_nodes(app, parsed, frame_ids, node_ids)
        progress("store", 0.3)
        sums = Sums()
        copy_rows(
            AllocationRow,
            ["snapshot_id", "category_id", "stack_id", "thread", "generation", *COUNTERS],
            allocation_copy_rows(snapshot.pk, parsed, category_ids, node_ids, sums),
        )
        progress("store", 0.7)
        _store_aggregates(snapshot, build.pk, parsed, category_ids, frame_ids, node_ids, sums)
        progress("store", 1.0)
    return snapshot


def _store_aggregates(
    snapshot: Snapshot,
    build_id: int,
    parsed: ParsedSnapshot,
    category_ids: dict[str, int],
    frame_ids: list[int],
    node_ids: list[int],
    sums: Sums,
) -> None:
    sid = snapshot.pk
    per_category = sums.per_category
    callers = responsible_callers(parsed, sums.heaviest, frame_ids)
    copy_rows(
        CategoryTotal,
        ["snapshot_id", "category_id", "responsible_caller", "responsible_frame_id", *COUNTERS],
        (
            (sid, category_ids[name], *callers.get(name, ("", None)), *counts)
            for name, counts in per_category.items()
        ),
    )
    copy_rows(
        GenerationCategoryTotal,
        ["snapshot_id", "generation", "category_id", *COUNTERS],
        (
            (sid, gen, category_ids[name], *counts)
            for (gen, name), counts in sums.per_generation.items()
        ),
    )
    copy_rows(
        CallTreeNode,
        ["snapshot_id", "node_id", "parent_id", "frame_id", *COUNTERS]
        + [f"self_{c}" for c in COUNTERS],
        _call_tree_rows(sid, parsed, frame_ids, node_ids, sums.per_node),
    )
    growth: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for (gen, _), counts in sums.per_generation.items():
        if gen is not None:
            growth[gen][0] += counts[1]
            growth[gen][1] += counts[0]
    Generation.objects.bulk_create(
        [
            Generation(
                snapshot=snapshot,
                index=i,
                name=name,
                at_ms=round(at_ms),
                growth_bytes=growth[i][0],
                persistent=growth[i][1],
            )
            for i, (name, at_ms) in enumerate(parsed.generations)
        ]
    )
    upsert_add(
        BuildCategoryTotal,
        ["build_id", "category_id"],
        [*COUNTERS, "snapshots"],
        [(build_id, category_ids[n], *c, 1) for n, c in per_category.items()],
    )
    p, pb, t, tb = sums.totals
    snapshot.table_summary = table_summary(per_category.items())
    Snapshot.objects.filter(pk=sid).update(
        table_summary=snapshot.table_summary,
        category_count=len(per_category),
        persistent=p,
        persistent_bytes=pb,
        transient=t,
        transient_bytes=tb,
    )
    snapshot.category_count = len(per_category)
    snapshot.persistent, snapshot.persistent_bytes = p, pb
    snapshot.transient, snapshot.transient_bytes = t, tb


def _add_source_locations(parsed: ParsedSnapshot, frame_ids: list[int]) -> None:
    """A function's frame is shared by every upload of the app that names it: it gets the first
    file a use gives (an upload may have named it without one), and keeps a line only while
    every use agrees on it (`symbolicate.key_by_function` within one document)."""
    located = {
        fid: (f.file, f.line)
        for fid, f in zip(frame_ids, parsed.frames, strict=True)
        if f.symbol and (f.file or f.line is not None)
    }
    ids = list(located)
    for start in range(0, len(ids), 500):
        updates = []
        for fid, file, line in Frame.objects.filter(id__in=ids[start : start + 500]).values_list(
            "id", "file", "line"
        ):
            new_file, new_line = located[fid]
            if not file and new_file:
                updates.append(Frame(id=fid, file=new_file, line=new_line))
            elif None not in (line, new_line) and (new_file or file, new_line) != (file, line):
                updates.append(Frame(id=fid, file=file, line=None))
        Frame.objects.bulk_update(updates, ["file", "line"], batch_size=500)


def store_images(snapshot: Snapshot, parsed: ParsedSnapshot) -> None:
    """The snapshot's images with what is still unnamed in them (replacing earlier ones)."""
    usage, unnamed_bytes = image_usage(parsed)
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
                "WHERE c.snapshot_id = %s AND b.build_id = %s AND b.category_id = c.category_id",
                [sid, snapshot.build_id],
            )
        # A category seen in no snapshot of the build any more has no row: the build's table
        # lists what its snapshots hold, never a category at zero.
        BuildCategoryTotal.objects.filter(build_id=snapshot.build_id, snapshots__lte=0).delete()
        delete_snapshot_rows(sid)
        for model in (CategoryTotal, GenerationCategoryTotal):
            model.objects.filter(snapshot_id=sid)._raw_delete(model.objects.db)


def delete_snapshot_rows(snapshot_id: int) -> None:
    """Raw rows only (allocation rows and call-tree totals), in plain DELETEs."""
    for model in (AllocationRow, CallTreeNode):
        model.objects.filter(snapshot_id=snapshot_id)._raw_delete(model.objects.db)


# The tables keyed by snapshot without a database constraint: deleted by snapshot id in one
# statement each, never row by row.
SNAPSHOT_TABLES = (AllocationRow, CallTreeNode, CategoryTotal, GenerationCategoryTotal)


def delete_build_data(build_id: int) -> None:
    """The rows of a build's snapshots, before the build and its snapshots are deleted. The
    build totals, generations and snapshots themselves go by the ORM's cascade."""
    snapshots = Snapshot.objects.filter(build_id=build_id).values("pk")
    for model in SNAPSHOT_TABLES:
        model.objects.filter(snapshot_id__in=snapshots)._raw_delete(model.objects.db)


def delete_app_data(app_id: int) -> None:
    """The rows of all of an app's snapshots and the app's frames and stack nodes (shared by
    its snapshots, so they go with the app only), before the app is deleted."""
    snapshots = Snapshot.objects.filter(app_id=app_id).values("pk")
    for model in SNAPSHOT_TABLES:
        model.objects.filter(snapshot_id__in=snapshots)._raw_delete(model.objects.db)
    for shared in (StackNode, Frame):
        shared.objects.filter(app_id=app_id)._raw_delete(shared.objects.db)
