"""Naming the frames of snapshots already stored, when debug files arrive after them.

Nothing is reprocessed from the uploads: a stored snapshot is read back as the document it was
stored from (its frames, stack nodes and allocation rows; the ids it is stored under kept), the
frames are named by `symbolicate.symbolicate_parsed` exactly as at ingest, and what depends on
frame identity is written again by the same functions ingest uses: the frames and stack nodes,
the allocation rows (now on the merged stacks), the call-tree totals, each category's
responsible caller and the snapshot's images. Counts, category and build totals do not depend
on frames and are left as they are. One transaction per snapshot, so a page reads either the
old tree or the new one.

A snapshot whose rows were pruned keeps its call-tree totals: those are renamed from their own
self counts (the responsible callers, worked out from rows, stay as they were).
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import F

from memdash.allocations.callers import responsible_callers
from memdash.allocations.document import FrameInfo, ImageInfo, ParsedSnapshot
from memdash.allocations.models import (
    AllocationRow,
    CallTreeNode,
    Category,
    CategoryTotal,
    Frame,
    Snapshot,
    SnapshotImage,
    StackNode,
)
from memdash.allocations.services import (
    COUNTERS,
    Sums,
    _call_tree_rows,
    _frame_and_node_ids,
    _store_frames_and_nodes,
    allocation_copy_rows,
    store_images,
)
from memdash.allocations.symbolicate import Resolver, symbolicate_parsed
from memdash.core.bulk import copy_rows

_CHUNK = 2000
UINT64_MASK = 2**64 - 1
NO_CATEGORY = ""  # rows rebuilt from call-tree totals (pruned snapshots) have none


def snapshots_to_name(app_id: int, debug_ids: list[str]) -> list[int]:
    """The snapshots of the app with unnamed frames in images of these debug ids."""
    return sorted(
        SnapshotImage.objects.filter(
            app_id=app_id, debug_id__in=debug_ids, unsymbolicated_frames__gt=0
        )
        .values_list("snapshot_id", flat=True)
        .distinct()
    )


def image_ids_of(snapshot_ids: list[int]) -> set[str]:
    return set(
        SnapshotImage.objects.filter(snapshot_id__in=snapshot_ids, unsymbolicated_frames__gt=0)
        .exclude(debug_id="")
        .values_list("debug_id", flat=True)
    )


def _stack_nodes(ids: set[int]) -> dict[int, tuple[int | None, int, int]]:
    """Stack node id -> (parent id, frame id, depth), for `ids` and every node above them."""
    nodes: dict[int, tuple[int | None, int, int]] = {}
    pending = set(ids)
    while pending:
        wanted = list(pending)
        parents: set[int] = set()
        for start in range(0, len(wanted), _CHUNK):
            for nid, parent, frame, depth in StackNode.objects.filter(
                id__in=wanted[start : start + _CHUNK]
            ).values_list("id", "parent_id", "frame_id", "depth"):
                nodes[nid] = (parent, frame, depth)
                if parent is not None:
                    parents.add(parent)
        pending = parents - nodes.keys()
    return nodes


def _frames(ids: list[int], image_ids: dict[str, str]) -> dict[int, FrameInfo]:
    frames = {}
    for start in range(0, len(ids), _CHUNK):
        for row in Frame.objects.filter(id__in=ids[start : start + _CHUNK]).values_list(
            "id", "symbol", "image", "offset", "address", "file", "line", "is_system", "inlined"
        ):
            fid, symbol, image, offset, address, file, line, is_system, inlined = row
            frames[fid] = FrameInfo(
                symbol=symbol, image=image,
                offset=offset & UINT64_MASK if offset is not None else None,
                address=address & UINT64_MASK if address is not None else None,
                file=file, line=line, is_system=is_system, debug_id=image_ids.get(image, ""),
                inlined=inlined, known_id=fid,
            )  # fmt: skip
    return frames


def stored_as_parsed(snapshot: Snapshot) -> tuple[ParsedSnapshot, dict[str, int]] | None:
    """The snapshot as the plain data ingest stores (ids kept), with its category ids by name;
    None when neither its rows nor its call tree are kept."""
    images = list(SnapshotImage.objects.filter(snapshot_id=snapshot.pk))
    parsed = ParsedSnapshot(
        app_id="", platform="", app_name="", build_version="", build_number="", build_commit="",
        captured_at=snapshot.captured_at,
        images=[ImageInfo(i.name, i.debug_id, None, i.system, i.arch) for i in images],
    )  # fmt: skip
    rows_kept = snapshot.rows_pruned_at is None
    if rows_kept:
        names = dict(Category.objects.filter(app_id=snapshot.app_id).values_list("id", "name"))
        category_ids = {name: cid for cid, name in names.items()}
        raw = [
            (names[c], s, t, g, counts)
            for c, s, t, g, *counts in AllocationRow.objects.filter(
                snapshot_id=snapshot.pk
            ).values_list("category_id", "stack_id", "thread", "generation", *COUNTERS)
        ]
    else:
        category_ids = {NO_CATEGORY: 0}
        raw = [
            (NO_CATEGORY, nid, None, None, counts)
            for nid, *counts in CallTreeNode.objects.filter(snapshot_id=snapshot.pk)
            .exclude(
                self_persistent=0, self_persistent_bytes=0, self_transient=0, self_transient_bytes=0
            )
            .values_list("node_id", *[f"self_{c}" for c in COUNTERS])
        ]
        if not raw:
            return None
    nodes = _stack_nodes({s for _, s, _, _, _ in raw if s is not None})
    order = sorted(nodes, key=lambda nid: nodes[nid][2])  # parents (less deep) first
    index = {nid: i for i, nid in enumerate(order)}
    frame_rows = _frames(
        list({nodes[n][1] for n in order}), {i.name: i.debug_id for i in images if i.debug_id}
    )
    frame_index: dict[int, int] = {}
    for fid, info in frame_rows.items():
        frame_index[fid] = len(parsed.frames)
        parsed.frames.append(info)
    for nid in order:
        parent, frame, _ = nodes[nid]
        parsed.stack_parents.append(index[parent] if parent is not None else None)
        parsed.stack_frames.append(frame_index[frame])
    for category, stack, thread, generation, counts in raw:
        key = (category, index[stack] if stack is not None else None, thread, generation)
        acc = parsed.rows.setdefault(key, [0, 0, 0, 0])
        for k in range(4):
            acc[k] += counts[k]
    return parsed, category_ids


def resymbolicate_snapshot(snapshot: Snapshot, resolve: Resolver) -> int:
    """Name what `resolve` knows of a stored snapshot and store what depends on it again;
    answers how many of its frames were named (0: nothing changed)."""
    with transaction.atomic():
        snapshot = Snapshot.objects.select_for_update().get(pk=snapshot.pk)
        read = stored_as_parsed(snapshot)
        if read is None:
            return 0
        parsed, category_ids = read
        named = symbolicate_parsed(parsed, resolve)
        if not named:
            return 0
        app = snapshot.app
        frame_ids, node_ids = _frame_and_node_ids(app, parsed)
        _store_frames_and_nodes(app, parsed, frame_ids, node_ids)
        sid = snapshot.pk
        sums = Sums()
        rows = allocation_copy_rows(sid, parsed, category_ids, node_ids, sums)
        if snapshot.rows_pruned_at is None:
            AllocationRow.objects.filter(snapshot_id=sid)._raw_delete(AllocationRow.objects.db)
            copy_rows(
                AllocationRow,
                ["snapshot_id", "category_id", "stack_id", "thread", "generation", *COUNTERS],
                rows,
            )
            _rename_responsible_callers(sid, parsed, category_ids, sums, frame_ids)
        else:
            for _ in rows:  # only the sums: the rows themselves are gone
                pass
        CallTreeNode.objects.filter(snapshot_id=sid)._raw_delete(CallTreeNode.objects.db)
        copy_rows(
            CallTreeNode,
            ["snapshot_id", "node_id", "parent_id", "frame_id", *COUNTERS]
            + [f"self_{c}" for c in COUNTERS],
            _call_tree_rows(sid, parsed, frame_ids, node_ids, sums.per_node),
        )
        store_images(snapshot, parsed)
        Snapshot.objects.filter(pk=sid).update(symbols_version=F("symbols_version") + 1)
    return named


def _rename_responsible_callers(
    snapshot_id: int, parsed: ParsedSnapshot, category_ids: dict[str, int], sums: Sums,
    frame_ids: list[int],
) -> None:  # fmt: skip
    callers = {category_ids[name]: caller for name, caller in
               responsible_callers(parsed, sums.heaviest, frame_ids).items()}  # fmt: skip
    totals = list(
        CategoryTotal.objects.filter(snapshot_id=snapshot_id).only(
            "id", "category_id", "responsible_caller", "responsible_frame_id"
        )
    )
    changed = []
    for total in totals:
        label, frame = callers.get(total.category_id, ("", None))
        if (total.responsible_caller, total.responsible_frame_id) != (label, frame):
            total.responsible_caller, total.responsible_frame_id = label, frame
            changed.append(total)
    CategoryTotal.objects.bulk_update(
        changed, ["responsible_caller", "responsible_frame_id"], batch_size=500
    )
