"""Writes of a snapshot's large tables from its columns: frames and stack nodes (shared by the
app's snapshots), allocation rows, call-tree totals and the per-category and per-generation
totals. Each table is one bulk write of numpy columns (`core.logic.rows.ArrayRows`: binary COPY on
PostgreSQL), inside the upload's transaction (`services.store_parsed_snapshot`)."""

from __future__ import annotations

import numpy as np

from memdash.allocations.logic.analysis import Block, as_signed64
from memdash.allocations.logic.columns import BlockColumns, RowColumns, leaves
from memdash.allocations.logic.document.parse import ParsedSnapshot
from memdash.allocations.logic.totals import CallTree, Nodes, Totals
from memdash.allocations.models import (
    ALLOCATION_ROW_INDEX,
    AllocationBlock,
    AllocationRow,
    CallTreeNode,
    CategoryTotal,
    Frame,
    GenerationCategoryTotal,
    StackNode,
)
from memdash.allocations.writes.partitions import (
    WriteTarget,
    analyze_after_commit,
    summarize_after_commit,
    write_target,
)
from memdash.core.logic.rows import ArrayRows
from memdash.core.writes.bulk import copy_rows, insert_ignore

COUNTERS = ["persistent", "persistent_bytes", "transient", "transient_bytes"]
ROW_COLUMNS = [
    "app_id", "snapshot_id", "category_id", "stack_id", "thread", "generation", *COUNTERS,
]  # fmt: skip
TREE_COLUMNS = [
    "app_id", "snapshot_id", "node_id", "parent_id", "frame_id", *COUNTERS,
    *[f"self_{c}" for c in COUNTERS],
]  # fmt: skip


def store_frames_and_nodes(
    app_id: int, parsed: ParsedSnapshot, frame_ids: list[int], nodes: Nodes
) -> None:
    """The document's frames and stack nodes, those the app does not have yet (none written
    when it has them all: `insert_ignore` looks first)."""
    frames = {}
    for fid, f in zip(frame_ids, parsed.frames, strict=True):
        frames[fid] = (
            fid, app_id, f.symbol, f.image, as_signed64(f.offset), as_signed64(f.address),
            f.file, f.line, f.is_system, f.inlined,
        )  # fmt: skip
    insert_ignore(
        Frame,
        ["id", "app_id", "symbol", "image", "offset", "address", "file", "line", "is_system",
         "inlined"],
        frames.values(),
        ["id", "app_id"],
        keys=list(frames),
        app_id=app_id,
    )  # fmt: skip
    add_source_locations(parsed, frame_ids)
    insert_ignore(
        StackNode,
        ["id", "app_id", "parent_id", "frame_id", "depth"],
        ArrayRows([nodes.ids, app_id, nodes.parent_ids, nodes.frame_id, nodes.depth]),
        ["id", "app_id"],
        keys=nodes.ids,
        app_id=app_id,
        # A node is stored with its parent, and so with every node above it: its leaves
        # stored, a document's every node is (one tenth of them in a deep profile).
        probe=nodes.ids[leaves(nodes.parent)],
    )


def category_id_column(names: list[str], category_ids: dict[str, int]) -> np.ndarray:
    """Each category's id, by its index among `names` (a row's or block's category index)."""
    return np.fromiter(map(category_ids.__getitem__, names), np.int64, len(names))


def stack_node_column(stack: np.ndarray, nodes: Nodes) -> np.ma.MaskedArray:
    """Each stored stack node's id, by its index among the document's nodes (`stack`; -1, no
    stack: masked, a NULL once written)."""
    with_stack = stack >= 0
    node = np.zeros(len(stack), dtype=np.int64)
    node[with_stack] = nodes.ids[nodes.of_node[stack[with_stack]]]
    return np.ma.MaskedArray(node, mask=~with_stack)


def store_allocation_rows(
    app_id: int, snapshot_id: int, rows: RowColumns, category_ids: dict[str, int], nodes: Nodes
) -> None:
    """The rows, written in the order of their category's id: the table's index on (snapshot,
    category) then grows at one end instead of everywhere at once (SQLite writes a million
    rows in half the time; their order is no one's concern)."""
    ids = category_id_column(rows.names, category_ids)
    target = write_target(AllocationRow._meta.db_table)
    copy_rows(
        AllocationRow,
        numbered(target, ROW_COLUMNS),
        ArrayRows(
            [
                *row_ids(target, snapshot_id, len(rows.category)),
                app_id,
                snapshot_id,
                ids[rows.category],
                stack_node_column(rows.stack, nodes),
                _nullable(rows.thread),
                _nullable(rows.generation),
                *rows.counts.T,
            ],
            order=np.argsort(_ranks(ids)[rows.category], kind="stable"),
        ),
        into=target.into,
        constants=target.constants,
    )
    summarize_after_commit(target, ALLOCATION_ROW_INDEX, app_id)
    analyze_after_commit(target)


def store_blocks(
    app_id: int, snapshot_id: int, blocks: list[Block], category_ids: dict[str, int], nodes: Nodes
) -> None:
    """An events run's allocations one by one (`AllocationBlock`), their rows' keys as the
    rows store them (categories by id, stacks by node id)."""
    if not blocks:
        return
    stacks = np.array([-1 if b.key[1] is None else b.key[1] for b in blocks], np.int64)
    node = np.zeros(len(blocks), dtype=np.int64)
    node[stacks >= 0] = nodes.ids[nodes.of_node[stacks[stacks >= 0]]]
    copy_rows(
        AllocationBlock,
        ["app_id", "snapshot_id", "address", "made_ms", "freed_ms", "size", "category_id",
         "stack_id", "thread", "generation"],
        (
            (app_id, snapshot_id, as_signed64(b.address), b.made_ms, b.ended_ms, b.size,
             category_ids[b.key[0]], None if b.key[1] is None else int(n), *b.key[2:])
            for b, n in zip(blocks, node.tolist(), strict=True)
        ),
    )  # fmt: skip


def store_block_columns(
    app_id: int, snapshot_id: int, blocks: BlockColumns, category_ids: dict[str, int],
    nodes: Nodes,
) -> None:  # fmt: skip
    """A file's allocations one by one from its columns (heaptrack's: millions, no address,
    thread or generation), one bulk write in the order they were made."""
    if not len(blocks):
        return
    ids = category_id_column(blocks.names, category_ids)
    copy_rows(
        AllocationBlock,
        ["app_id", "snapshot_id", "address", "made_ms", "freed_ms", "size", "category_id",
         "stack_id", "thread", "generation"],
        ArrayRows([
            app_id, snapshot_id, None, blocks.made_ms,
            np.ma.MaskedArray(blocks.freed_ms, mask=np.isnan(blocks.freed_ms)), blocks.size,
            ids[blocks.category], stack_node_column(blocks.stack, nodes), None, None,
        ]),
    )  # fmt: skip


def numbered(target: WriteTarget, columns: list[str]) -> list[str]:
    """The columns of a large table's rows, with their id where the writer gives it."""
    return ["id", *columns] if target.numbered else columns


def row_ids(target: WriteTarget, snapshot_id: int, count: int) -> list[np.ndarray]:
    """The id column of a snapshot's rows in a large table, where the writer gives it: the
    snapshot's id in the high 32 bits and the row's number in the low ones, unique without a
    sequence to draw from (migration 0010; a snapshot within the parse-memory bound holds far
    fewer than 2**32 rows)."""
    if not target.numbered:
        return []
    return [np.arange(count, dtype=np.int64) + (snapshot_id << 32)]


def _ranks(values: np.ndarray) -> np.ndarray:
    """Each value's rank among `values`, as small an integer as holds it (numpy sorts 16-bit
    integers by radix: a million rows in a few milliseconds)."""
    ranks = np.empty(len(values), dtype=np.uint16 if len(values) <= 1 << 16 else np.int64)
    ranks[np.argsort(values)] = np.arange(len(values))
    return ranks


def _nullable(column: np.ndarray) -> np.ma.MaskedArray:
    return np.ma.MaskedArray(column, mask=column < 0)


def store_call_tree(app_id: int, snapshot_id: int, nodes: Nodes, tree: CallTree) -> None:
    """The call-tree rows, written in the order of their parent's id (the roots, whose parent
    is NULL, last): the table's index on (snapshot, parent) then grows at one end, not at a
    random place per row (node ids are hashes)."""
    parents = nodes.parent_ids[tree.nodes]
    target = write_target(CallTreeNode._meta.db_table)
    copy_rows(
        CallTreeNode,
        numbered(target, TREE_COLUMNS),
        ArrayRows(
            [
                *row_ids(target, snapshot_id, len(tree.nodes)),
                app_id,
                snapshot_id,
                nodes.ids[tree.nodes],
                parents,
                nodes.frame_id[tree.nodes],
                *tree.inclusive.T,
                *tree.own.T,
            ],
            order=np.argsort(parents.filled(np.iinfo(np.int64).max), kind="stable"),
        ),
        into=target.into,
        constants=target.constants,
    )
    analyze_after_commit(target)


def store_totals(
    app_id: int,
    snapshot_id: int,
    rows: RowColumns,
    category_ids: dict[str, int],
    totals: Totals,
    callers: dict[str, tuple[str, int]],
) -> None:
    """The per-category totals (with each category's responsible caller) and the
    per-generation ones."""
    ids = category_id_column(rows.names, category_ids)
    id_list, names = ids.tolist(), rows.names
    copy_rows(
        CategoryTotal,
        [
            "app_id",
            "snapshot_id",
            "category_id",
            "responsible_caller",
            "responsible_frame_id",
            *COUNTERS,
        ],
        (
            (app_id, snapshot_id, id_list[c], *callers.get(names[c], ("", None)), *counts)
            for c, counts in zip(
                totals.categories.tolist(), totals.category_counts.tolist(), strict=True
            )
        ),
    )
    copy_rows(
        GenerationCategoryTotal,
        ["app_id", "snapshot_id", "generation", "category_id", *COUNTERS],
        ArrayRows(
            [
                app_id,
                snapshot_id,
                _nullable(totals.generation_of_pair),
                ids[totals.category_of_pair],
                *totals.pair_counts.T,
            ]
        ),
    )


def add_source_locations(parsed: ParsedSnapshot, frame_ids: list[int]) -> None:
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
