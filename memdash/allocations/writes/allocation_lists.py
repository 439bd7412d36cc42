"""The Allocations List of a snapshot, made ahead once it is stored
(`tasks.make_allocation_list_task`): its entries (each row's live part and its freed part) with
their place in every order the list has (`ListEntry`), and each order as chunks of consecutive
entries (`ListOrderChunk`), so that a page of any sort, either way, is read without sorting
(`reads.allocation_list`).

One INSERT … SELECT numbers the entries in every order (window functions over the snapshot's
rows, their categories and their responsible callers: the same keys the list sorts by when it
reads the rows, `logic.listing.SORT_KEYS`, so a cursor names the same place either way). The
responsible callers are read outward from the listed stacks, only past system frames
(`reads.stacks.responsible_frame_ids`). Nothing is indexed but each table's key, written in its
order: a b-tree per order cost as much as the upload itself (docs/performance.md).

Made again when debug files renamed the snapshot's frames (its callers' keys changed) or keyed
its stacks again (`Snapshot.symbols_version` moved on): until then the list reads the rows."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
from django.db import connection

from memdash.allocations.logic.listing import LIST_ORDERS, SORT_KEYS
from memdash.allocations.models import (
    AllocationBlock,
    AllocationListOrder,
    AllocationRow,
    ListEntry,
    ListOrderChunk,
    Snapshot,
)
from memdash.allocations.reads.stacks import responsible_frame_ids
from memdash.core.logic.rows import ArrayRows
from memdash.core.reads.where_in import array_literal
from memdash.core.writes.bulk import copy_rows
from memdash.core.writes.table_statistics import analyze_when_grown

ROW_SQL = (
    "SELECT id, category_id, COALESCE(stack_id, 0), COALESCE(thread, -1), "
    "COALESCE(generation, -1), persistent, persistent_bytes, transient, transient_bytes "
    f"FROM {AllocationRow._meta.db_table} WHERE snapshot_id = %s AND app_id = %s"
)
FETCH_ROWS = 50_000


def _row_columns(app_id: int, snapshot_id: int) -> np.ndarray:
    """The snapshot's rows as one integer array, a row per allocation row (ROW_SQL's
    columns; no stack is 0, no thread or generation -1)."""
    parts = [np.zeros((0, 9), np.int64)]
    with connection.cursor() as cursor:
        cursor.execute(ROW_SQL, [snapshot_id, app_id])
        while batch := cursor.fetchmany(FETCH_ROWS):
            parts.append(np.array(batch, np.int64))
    return np.concatenate(parts)


@dataclass
class Entries:
    """A snapshot's list entries as columns: each row's live part, then each row's freed part
    (those with any)."""

    row_id: np.ndarray
    live: np.ndarray
    n: np.ndarray
    size: np.ndarray
    category: np.ndarray
    stack: np.ndarray  # 0: none
    thread: np.ndarray
    generation: np.ndarray
    caller: np.ndarray  # the responsible caller's frame (where `has_caller`)
    has_caller: np.ndarray
    # an events run's blocks (an entry each): address, made and freed (NaN: live) in ms
    address: np.ndarray | None = None
    made: np.ndarray | None = None
    freed: np.ndarray | None = None
    has_address: bool = True  # a heaptrack run's blocks have none (their `address` is 0)

    @classmethod
    def of_rows(cls, rows: np.ndarray, callers: dict[int, int]) -> Entries:
        live = (rows[:, 5] > 0) | (rows[:, 6] > 0)
        freed = (rows[:, 7] > 0) | (rows[:, 8] > 0)
        both = np.concatenate([rows[live], rows[freed]])
        flags = np.concatenate([np.ones(live.sum(), np.int64), np.zeros(freed.sum(), np.int64)])
        is_live = flags == 1
        caller, has_caller = _callers_of(both[:, 2], callers)
        return cls(
            row_id=both[:, 0], live=flags,
            n=np.where(is_live, both[:, 5], both[:, 7]),
            size=np.where(is_live, both[:, 6], both[:, 8]),
            category=both[:, 1], stack=both[:, 2], thread=both[:, 3], generation=both[:, 4],
            caller=caller, has_caller=has_caller,
        )  # fmt: skip

    @classmethod
    def of_blocks(
        cls, ints: np.ndarray, times: np.ndarray, has_address: bool, callers: dict[int, int]
    ) -> Entries:
        """BLOCK_SQL's rows as `_block_columns` reads them: each block an entry of one
        allocation, live if never freed (NaN)."""
        caller, has_caller = _callers_of(ints[:, 2], callers)
        return cls(
            row_id=ints[:, 0], live=np.isnan(times[:, 1]).astype(np.int64),
            n=np.ones(len(ints), np.int64), size=ints[:, 5], category=ints[:, 1],
            stack=ints[:, 2], thread=ints[:, 3], generation=ints[:, 4],
            caller=caller, has_caller=has_caller,
            address=ints[:, 6], made=times[:, 0], freed=times[:, 1], has_address=has_address,
        )  # fmt: skip


def _callers_of(stacks: np.ndarray, callers: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Each stack's responsible caller's frame, and whether it has one."""
    nodes = np.fromiter(callers.keys(), np.int64, len(callers))
    frames = np.fromiter(callers.values(), np.int64, len(callers))
    if not len(nodes):
        return np.zeros(len(stacks), np.int64), stacks != stacks
    sort = nodes.argsort()
    nodes, frames = nodes[sort], frames[sort]
    at = np.clip(np.searchsorted(nodes, stacks), 0, len(nodes) - 1)
    return frames[at], nodes[at] == stacks


BLOCK_SQL = (
    "SELECT id, category_id, COALESCE(stack_id, 0), COALESCE(thread, -1), "
    "COALESCE(generation, -1), size, COALESCE(address, 0), "
    "CASE WHEN address IS NULL THEN 0 ELSE 1 END, made_ms, freed_ms "
    f"FROM {AllocationBlock._meta.db_table} WHERE snapshot_id = %s AND app_id = %s"
)


def _block_columns(app_id: int, snapshot_id: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """The snapshot's blocks as BLOCK_SQL's integer columns (the address 0 where none) and
    its times (ms; NaN: never freed), a batch at a time (a heaptrack run has millions), and
    whether they have addresses (all of a snapshot's have, or none)."""
    ints, times = [np.zeros((0, 8), np.int64)], [np.zeros((0, 2), np.float64)]
    with connection.cursor() as cursor:
        cursor.execute(BLOCK_SQL, [snapshot_id, app_id])
        while batch := cursor.fetchmany(FETCH_ROWS):
            ints.append(np.array([b[:8] for b in batch], np.int64))
            times.append(
                np.array([(b[8], math.nan if b[9] is None else b[9]) for b in batch], np.float64)
            )
    whole = np.concatenate(ints)
    return whole[:, :7], np.concatenate(times), bool(len(whole)) and bool(whole[0, 7])


def _entries_of(app_id: int, snapshot_id: int) -> Entries:
    """The snapshot's entries: its blocks when its upload gave them, else its rows split."""
    ints, times, has_address = _block_columns(app_id, snapshot_id)
    if len(ints):
        stacks = np.unique(ints[:, 2][ints[:, 2] != 0]).tolist()
        return Entries.of_blocks(ints, times, has_address, responsible_frame_ids(app_id, stacks))
    rows = _row_columns(app_id, snapshot_id)
    stacks = np.unique(rows[:, 2][rows[:, 2] != 0]).tolist()
    return Entries.of_rows(rows, responsible_frame_ids(app_id, stacks))


def _dense_ranks(sql: str, params: list[Any]) -> dict[int | None, tuple[int, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {row[0]: tuple(row[1:]) for row in cursor.fetchall()}


def _ids_in(column: str, ids: list[int], params: list[Any]) -> str:
    if connection.vendor == "postgresql":
        params.append(array_literal(ids))
        return f"{column} = ANY(%s::bigint[])"
    params.append(orjson.dumps(ids).decode())
    return f"{column} IN (SELECT value FROM json_each(%s))"


def _text_ranks(app_id: int, entries: Entries) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each entry's place among the snapshot's keys of text (category, caller, library), as
    the database orders them (`SORT_KEYS`: equal keys share a place)."""
    params: list[Any] = [app_id]
    categories = _ids_in("c.id", np.unique(entries.category).tolist(), params)
    by_category = _dense_ranks(
        f"SELECT c.id, dense_rank() OVER (ORDER BY {SORT_KEYS['category']}) "
        f"FROM snapshots_category c WHERE c.app_id = %s AND {categories}",
        params,
    )
    params = [app_id]
    frames = _ids_in("rf.id", np.unique(entries.caller[entries.has_caller]).tolist(), params)
    keys = f"{SORT_KEYS['caller']} AS caller, {SORT_KEYS['library']} AS library"
    by_frame = _dense_ranks(
        "SELECT id, dense_rank() OVER (ORDER BY caller), dense_rank() OVER (ORDER BY library) "
        f"FROM (SELECT rf.id, {keys} FROM snapshots_frame rf WHERE rf.app_id = %s AND {frames} "
        f"UNION ALL SELECT NULL, {keys} FROM (SELECT {NO_FRAME}) rf) x",
        params,
    )
    category = _looked_up(by_category, entries.category)[:, 0]
    none = by_frame.pop(None)
    callers = _looked_up(by_frame, entries.caller)
    callers[~entries.has_caller] = none
    return category, callers[:, 0], callers[:, 1]


def _looked_up(table: dict[Any, tuple[int, ...]], keys: np.ndarray) -> np.ndarray:
    """`table[key]` for each key, as rows of an array (keys not in it: zeros)."""
    known = np.array(sorted(table), np.int64)
    values = np.array([table[k] for k in known.tolist()], np.int64).reshape(len(known), -1)
    if not len(known):
        return np.zeros((len(keys), 2), np.int64)
    at = np.clip(np.searchsorted(known, keys), 0, len(known) - 1)
    return np.where((known[at] == keys)[:, None], values[at], 0)


NO_FRAME = "CAST(NULL AS TEXT) AS symbol, CAST(NULL AS TEXT) AS image"


def _places(entries: Entries, app_id: int) -> dict[str, np.ndarray]:
    """Each order's places: `places[sort][i]`, entry i's position in it (ascending, ties by
    the row's id then live, as `logic.listing` orders)."""
    category, caller, library = _text_ranks(app_id, entries)
    keys = {
        "size": entries.size, "count": entries.n, "category": category, "caller": caller,
        "library": library, "generation": entries.generation, "thread": entries.thread,
        "live": entries.live, "snapshot": None, "time": entries.made,
        # unsigned: the sign bit flipped (a tagged pointer, 0xb4…, after 0x10)
        "address": None if entries.address is None or not entries.has_address
        else entries.address ^ np.int64(-(2**63)),
    }  # fmt: skip
    places = {}
    for sort in LIST_ORDERS:
        key = keys[sort]
        order = np.lexsort(
            (entries.live, entries.row_id) if key is None else (entries.live, entries.row_id, key)
        )
        place = np.empty(len(order), np.int64)
        place[order] = np.arange(len(order))
        places[sort] = place
    return places


ENTRY_COLUMNS = [
    "app_id", "snapshot_id", "row_id", "live", "n", "size", "category_id", "stack_id", "thread",
    "generation", "caller_frame_id", *[f"by_{sort}" for sort in LIST_ORDERS],
]  # fmt: skip


def _store(app_id: int, snapshot_id: int, entries: Entries, places: dict[str, np.ndarray]) -> None:
    """The entries in their key's order, then each order's chunks."""
    columns: list[Any] = [
        app_id, snapshot_id, entries.row_id, entries.live, entries.n, entries.size,
        entries.category, np.ma.MaskedArray(entries.stack, mask=entries.stack == 0),
        entries.thread, entries.generation,
        np.ma.MaskedArray(entries.caller, mask=~entries.has_caller),
        *[places[sort] for sort in LIST_ORDERS],
    ]  # fmt: skip
    names = ENTRY_COLUMNS
    if entries.address is not None and entries.made is not None and entries.freed is not None:
        # a block's address (none: heaptrack's) and times
        names = [*ENTRY_COLUMNS, "address", "made_ms", "freed_ms"]
        columns += [
            entries.address if entries.has_address else None, entries.made,
            np.ma.MaskedArray(entries.freed, mask=np.isnan(entries.freed)),
        ]  # fmt: skip
    copy_rows(ListEntry, names, ArrayRows(columns, order=places["snapshot"].argsort()))
    copy_rows(
        ListOrderChunk,
        ["app_id", "snapshot_id", "sort", "chunk", "rows", "lives"],
        _chunks(app_id, snapshot_id, entries, places),
    )


def _chunks(
    app_id: int, snapshot_id: int, entries: Entries, places: dict[str, np.ndarray]
) -> Iterator[tuple[Any, ...]]:
    size = ListOrderChunk.CHUNK
    for sort in LIST_ORDERS:
        order = places[sort].argsort()
        rows = entries.row_id[order].astype(">i8")
        lives = entries.live[order].astype(">i2")
        for start in range(0, len(order), size):
            yield (
                app_id, snapshot_id, sort, start // size, rows[start : start + size].tobytes(),
                lives[start : start + size].tobytes(),
            )  # fmt: skip


def forget_allocation_list(app_id: int, snapshot_id: int) -> None:
    """The snapshot's made list, gone (its rows were deleted, pruned or are written again).
    Found by the tables' keys, which start with the app: by the snapshot alone the entries of
    every snapshot were scanned, on each upload (a fifth of a worker's time under load)."""
    for model in (ListEntry, ListOrderChunk, AllocationListOrder):
        found = model.objects.filter(app_id=app_id, snapshot_id=snapshot_id)
        found._raw_delete(model.objects.db)


def make_allocation_list(snapshot: Snapshot) -> AllocationListOrder | None:
    """Make (or make again) the snapshot's list from its rows as they are now; None when its
    rows were pruned (nothing to list). No transaction of its own: the list is read only once
    its AllocationListOrder is written, last (a list half made is forgotten by the next)."""
    started = time.perf_counter()
    sid, app = snapshot.pk, snapshot.app_id
    forget_allocation_list(app, sid)
    if snapshot.rows_pruned_at is not None:
        return None
    entries = _entries_of(app, sid)
    _store(app, sid, entries, _places(entries, app))
    analyze_when_grown(ListEntry._meta.db_table)  # the table's statistics: its key is the way in
    return AllocationListOrder.objects.create(
        snapshot_id=sid,
        app_id=app,
        symbols_version=snapshot.symbols_version,
        entries=len(entries.row_id),
        seconds=time.perf_counter() - started,
    )
