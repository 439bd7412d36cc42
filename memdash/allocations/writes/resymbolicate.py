"""Naming the frames of snapshots already stored, when debug files arrive after them.

Nothing is reprocessed from the uploads: a stored snapshot is read back as the document it was
stored from (its frames, stack nodes and allocation rows; the ids it is stored under kept), the
frames are named by `symbolicate.symbolicate_parsed` exactly as at ingest, and what depends on
frame identity is written again by the same functions ingest uses: the frames and stack nodes,
the allocation rows (now on the merged stacks), the call-tree totals, each category's
responsible caller and the snapshot's images; an events run's blocks, its rows by time bucket
and their trees move to the new nodes (`rekey`), and its list made ahead is forgotten (the job
queues it again). Counts, category and build totals do not depend
on frames and are left as they are. One transaction per snapshot, so a page reads either the
old tree or the new one.

A snapshot whose rows were pruned keeps its call-tree totals: those are renamed from their own
self counts (the responsible callers, worked out from rows, stay as they were).

A snapshot stored under an older frame identity rule (`Snapshot.frame_identity` below
`symbolicate.FRAME_IDENTITY`) or recording rule (`Snapshot.recording_rule` below
`recording.RECORDING_RULE`) is keyed again the same way, whether or not a debug file names
anything in it: its format's recording frames are dropped and its named frames become their
functions' frames, so it merges with what is stored today. The recording rule runs on every
snapshot the job reads, as a debug file may just have named a monitor's hook. Every job does
this for the app's older snapshots, and `manage.py resymbolicate` for every app.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.db import transaction
from django.db.models import F, Q

from memdash.allocations.logic.analysis import Block
from memdash.allocations.logic.callers import responsible_callers
from memdash.allocations.logic.calltree.tree import StackInfo
from memdash.allocations.logic.document.parse import FrameInfo, ImageInfo, ParsedSnapshot
from memdash.allocations.logic.recording import RECORDING_RULE, drop_recording_frames
from memdash.allocations.logic.symbolicate import (
    FRAME_IDENTITY,
    NODES_BY_MIX,
    Resolver,
    frame_id,
    frame_ids_and_nodes,
    key_by_function,
    symbolicate_parsed,
)
from memdash.allocations.logic.totals import snapshot_totals
from memdash.allocations.models import (
    AllocationRow,
    CallTreeNode,
    Category,
    CategoryTotal,
    Frame,
    Snapshot,
    SnapshotImage,
)
from memdash.allocations.reads.calltree.trees import stack_paths
from memdash.allocations.writes.allocation_lists import forget_allocation_list
from memdash.allocations.writes.rekey import rekey_blocks, rekey_timed_rows
from memdash.allocations.writes.snapshots import store_images
from memdash.allocations.writes.tables import (
    COUNTERS,
    store_allocation_rows,
    store_call_tree,
    store_frames_and_nodes,
)
from memdash.core.reads.where_in import where_in_parts

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


def snapshots_to_key(app_id: int) -> list[int]:
    """The snapshots of the app stored under an older frame identity or recording rule."""
    older = Q(frame_identity__lt=FRAME_IDENTITY) | Q(recording_rule__lt=RECORDING_RULE)
    return sorted(Snapshot.objects.filter(older, app_id=app_id).values_list("pk", flat=True))


def image_ids_of(snapshot_ids: list[int]) -> set[str]:
    return set(
        SnapshotImage.objects.filter(snapshot_id__in=snapshot_ids, unsymbolicated_frames__gt=0)
        .exclude(debug_id="")
        .values_list("debug_id", flat=True)
    )


def _parents_first(stacks: Mapping[int, StackInfo]) -> list[int]:
    """The stack node ids, each after its parent (the order a document lists its stacks in)."""
    order: list[int] = []
    placed: set[int] = set()
    for start in stacks:
        chain: list[int] = []
        node: int | None = start
        while node is not None and node not in placed:
            placed.add(node)
            chain.append(node)
            node = stacks[node].parent_id
        order.extend(reversed(chain))
    return order


def _frames(ids: list[int], image_ids: dict[str, str]) -> dict[int, FrameInfo]:
    frames = {}
    for part in where_in_parts("id", ids):
        for row in Frame.objects.filter(part).values_list(
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


def stored_as_parsed(
    snapshot: Snapshot,
) -> tuple[ParsedSnapshot, dict[str, int], list[int]] | None:
    """The snapshot as the plain data ingest stores (ids kept), with its category ids by name
    and the stored node of each of its stacks; None when neither its rows nor its call tree
    are kept."""
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
    stacks = stack_paths(snapshot.app_id, {s for _, s, _, _, _ in raw if s is not None}, [snapshot])
    order = _parents_first(stacks)
    index = {nid: i for i, nid in enumerate(order)}
    frame_rows = _frames(
        list({stacks[n].frame_id for n in order}),
        {i.name: i.debug_id for i in images if i.debug_id},
    )
    frame_index: dict[int, int] = {}
    for fid, info in frame_rows.items():
        frame_index[fid] = len(parsed.frames)
        parsed.frames.append(info)
    for nid in order:
        parent = stacks[nid].parent_id
        parsed.stack_parents.append(index[parent] if parent is not None else None)
        parsed.stack_frames.append(frame_index[stacks[nid].frame_id])
    for category, stack, thread, generation, counts in raw:
        key = (category, index[stack] if stack is not None else None, thread, generation)
        acc = parsed.rows.setdefault(key, [0, 0, 0, 0])
        for k in range(4):
            acc[k] += counts[k]
    return parsed, category_ids, order


def resymbolicate_snapshot(snapshot: Snapshot, resolve: Resolver) -> int:
    """Name what `resolve` knows of a stored snapshot and store what depends on it again;
    answers how many of its frames were named (0: nothing changed)."""
    with transaction.atomic():
        snapshot = Snapshot.objects.select_for_update().get(pk=snapshot.pk, app_id=snapshot.app_id)
        stale = snapshot.frame_identity < FRAME_IDENTITY or snapshot.recording_rule < RECORDING_RULE
        read = stored_as_parsed(snapshot)
        if read is None:
            if stale:
                _mark_keyed(snapshot.pk, bump=False)
            return 0
        parsed, category_ids, old_nodes = read
        # Each stored node rides along as a block (whatever moves the rows to the nodes their
        # stacks become moves the blocks too): where it went is where its blocks and rows go.
        parsed.blocks = [Block(0, 0.0, None, 0, (NO_CATEGORY, i, None, None))
                         for i in range(len(old_nodes))]  # fmt: skip
        app = snapshot.app
        named = symbolicate_parsed(parsed, resolve)
        # Frames a debug file named (or an older rule kept) may be a monitor's own hook.
        dropped = drop_recording_frames(parsed, snapshot.source_format)
        # Stack nodes stored under other ids (an older rule digested their text), or named
        # frames (an older rule keyed them by place too).
        moved = stale and (
            snapshot.frame_identity < NODES_BY_MIX
            or any(
                f.symbol and f.known_id is not None and frame_id(app.pk, f) != f.known_id
                for f in parsed.frames
            )
        )
        if not (key_by_function(parsed) or named or moved or dropped):
            if stale:
                _mark_keyed(snapshot.pk, bump=False)
            return 0
        frame_ids, nodes = frame_ids_and_nodes(app.pk, parsed)
        store_frames_and_nodes(app.pk, parsed, frame_ids, nodes)
        sid = snapshot.pk
        rows = parsed.to_columns()
        totals = snapshot_totals(rows, nodes)
        if snapshot.rows_pruned_at is None:  # else only the call tree: the rows are gone
            AllocationRow.objects.filter(app_id=app.pk, snapshot_id=sid)._raw_delete(
                AllocationRow.objects.db
            )
            store_allocation_rows(app.pk, sid, rows, category_ids, nodes)
            heaviest = totals.heaviest(rows.names)
            _rename_responsible_callers(sid, parsed, category_ids, heaviest, frame_ids)
        CallTreeNode.objects.filter(app_id=app.pk, snapshot_id=sid)._raw_delete(
            CallTreeNode.objects.db
        )
        store_call_tree(app.pk, sid, nodes, totals.call_tree)
        moved_to = [b.key[1] for b in parsed.blocks]
        rekey_timed_rows(app.pk, sid, dict(zip(old_nodes, moved_to, strict=True)), nodes)
        new_ids = nodes.ids[nodes.of_node].tolist()
        node_ids = {old: None if to is None else new_ids[to]
                    for old, to in zip(old_nodes, moved_to, strict=True)}  # fmt: skip
        rekey_blocks(app.pk, sid, node_ids)
        forget_allocation_list(app.pk, sid)  # its rows' ids and stacks are new: made again (tasks)
        store_images(snapshot, parsed)
        _mark_keyed(sid, bump=True)
    return named


def _mark_keyed(snapshot_id: int, bump: bool) -> None:
    """The snapshot is keyed by today's rules; `bump`: its frames changed (cached trees of it are
    stale)."""
    changes: dict[str, object] = {
        "frame_identity": FRAME_IDENTITY,
        "recording_rule": RECORDING_RULE,
    }
    if bump:
        changes["symbols_version"] = F("symbols_version") + 1
    Snapshot.objects.filter(pk=snapshot_id).update(**changes)


def _rename_responsible_callers(
    snapshot_id: int, parsed: ParsedSnapshot, category_ids: dict[str, int],
    heaviest: dict[str, int], frame_ids: list[int],
) -> None:  # fmt: skip
    callers = {category_ids[name]: caller for name, caller in
               responsible_callers(parsed, heaviest, frame_ids).items()}  # fmt: skip
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
