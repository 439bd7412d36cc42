"""Pages of the Allocations List made ahead (`writes.allocation_lists`): a snapshot's entries
in one order are its chunks of that order (`ListOrderChunk`) from the cursor's place on, and a
page is the entries of the next chunk or two, read by their key (`ListEntry`), the filters
applied there. So a page costs the same at the millionth entry as at the first, in any order and
either way, and nothing is sorted when it is read.

A cursor's place in a snapshot is its entry's (looked up by its row and live), or, for a cursor
that is not one of the snapshot's entries (a build's list: the cursor is of one snapshot, the
other snapshots go on from the same place), found by bisection over the order. A build's page is
each of its snapshots' pages from that place, merged."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson
from django.db import connection

from memdash.allocations.logic.listing import MADE_KEYS, Cursor
from memdash.allocations.models import AllocationListOrder, ListEntry, ListOrderChunk
from memdash.core.reads.where_in import array_literal, is_postgres

CHUNK = ListOrderChunk.CHUNK
MAX_SPAN = 64 * CHUNK  # entries a filtered walk reads at once, at most
WALKS = 4  # reads of growing spans before a filter few entries pass is read by one pass
ENTRY = "e.row_id, e.live, e.snapshot_id, e.category_id, e.stack_id, e.thread, e.generation, e.n, e.size"  # noqa: E501
BLOCK = "e.address, e.made_ms, e.freed_ms"  # an events run's block's (after the sort value)
Identity = tuple[int, int]  # (row id, live)


def made_totals(app_id: int, snapshots: Sequence[tuple[int, int]]) -> dict[int, int]:
    """Of these (snapshot, symbols_version), those whose list is made from their frames as
    they are named now, with their number of entries."""
    wanted = dict(snapshots)
    orders = AllocationListOrder.objects.filter(app_id=app_id, snapshot_id__in=list(wanted))
    return {
        sid: entries
        for sid, version, entries in orders.values_list("snapshot_id", "symbols_version", "entries")
        if wanted.get(sid) == version
    }


@dataclass
class MadeRead:
    """What every read of a page shares: the order and the filters' SQL (over ListEntry `e`)
    with its parameters; the chunks read so far."""

    app_id: int
    sort: str
    ascending: bool
    where: str = ""
    where_params: list[Any] = field(default_factory=list)
    chunks: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def joins(self) -> str:
        key = MADE_KEYS[self.sort]
        sql = ""
        if "c." in key:
            sql += " JOIN snapshots_category c ON c.id = e.category_id AND c.app_id = e.app_id"
        if "rf." in key:
            sql += (
                " LEFT JOIN snapshots_frame rf ON rf.id = e.caller_frame_id "
                "AND rf.app_id = e.app_id"
            )
        return sql


def _chunk(read: MadeRead, snapshot_id: int, index: int) -> tuple[np.ndarray, np.ndarray]:
    """One chunk of the order: its entries' row ids and live flags."""
    key = (snapshot_id, index)
    if key not in read.chunks:
        found = ListOrderChunk.objects.filter(
            app_id=read.app_id, snapshot_id=snapshot_id, sort=read.sort, chunk=index
        ).values_list("rows", "lives")
        rows, lives = found.get()
        read.chunks[key] = (
            np.frombuffer(bytes(rows), ">i8").astype(np.int64),
            np.frombuffer(bytes(lives), ">i2").astype(np.int64),
        )
    return read.chunks[key]


def _identities(read: MadeRead, snapshot_id: int, first: int, last: int) -> list[Identity]:
    """The entries at places first … last of the order (inclusive), in that order."""
    rows, lives = [], []
    for index in range(first // CHUNK, last // CHUNK + 1):
        chunk_rows, chunk_lives = _chunk(read, snapshot_id, index)
        lo = max(first - index * CHUNK, 0)
        hi = min(last - index * CHUNK + 1, len(chunk_rows))
        rows.append(chunk_rows[lo:hi])
        lives.append(chunk_lives[lo:hi])
    return list(zip(np.concatenate(rows).tolist(), np.concatenate(lives).tolist(), strict=True))


def _rows_in(row_ids: list[int], params: list[Any]) -> str:
    if is_postgres():
        params.append(array_literal(row_ids))
        return "e.row_id = ANY(%s::bigint[])"
    params.append(orjson.dumps(row_ids).decode())
    return "e.row_id IN (SELECT value FROM json_each(%s))"


def _entries(
    read: MadeRead, snapshot_id: int, wanted: list[Identity], filtered: bool = True
) -> dict[Identity, tuple[Any, ...]]:
    """These entries of the snapshot (those the filters keep): their columns as a page reads
    them and their sort value, by (row id, live)."""
    if not wanted:
        return {}
    params: list[Any] = [read.app_id, snapshot_id]
    rows_in = _rows_in(sorted({row for row, _live in wanted}), params)
    where = f"e.app_id = %s AND e.snapshot_id = %s AND {rows_in}"
    if filtered and read.where:
        where += f" AND {read.where}"
        params += read.where_params
    sql = (
        f"SELECT {ENTRY}, {MADE_KEYS[read.sort]}, {BLOCK} FROM {ListEntry._meta.db_table} e"
        f"{read.joins()} WHERE {where}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {(row[0], row[1]): row for row in cursor.fetchall()}


def _order_key(row: tuple[Any, ...], sort: str) -> tuple[Any, int, int]:
    return (_in_order(row[9], sort), row[0], row[1])


def _in_order(key: Any, sort: str) -> Any:
    """A sort value as the order compares it: an address (stored signed) as unsigned, as
    `writes.allocation_lists` orders them (a tagged pointer, 0xb4…, after 0x10)."""
    return key ^ -(2**63) if sort == "address" and isinstance(key, int) else key


def _before(read: MadeRead, snapshot_id: int, total: int, cursor: Cursor) -> tuple[int, bool]:
    """How many of the snapshot's entries come before the cursor in the ascending order, and
    whether the cursor is one of them: its entry's place, else by bisection."""
    place = ListEntry.objects.filter(
        app_id=read.app_id, snapshot_id=snapshot_id, row_id=cursor.row, live=cursor.live
    ).values_list(f"by_{read.sort}", flat=True)
    found = _entries(read, snapshot_id, [(cursor.row, cursor.live)], filtered=False)
    own = found.get((cursor.row, cursor.live))
    if own is not None and own[9] == cursor.key and place:
        return place[0], True
    target = (_in_order(cursor.key, read.sort), cursor.row, cursor.live)
    lo, hi = 0, total
    while lo < hi:
        mid = (lo + hi) // 2
        identity = _identities(read, snapshot_id, mid, mid)[0]
        probe = _entries(read, snapshot_id, [identity], filtered=False)[identity]
        if _order_key(probe, read.sort) < target:
            lo = mid + 1
        else:
            hi = mid
    return lo, False


def _walk(
    read: MadeRead, snapshot_id: int, total: int, cursor: Cursor | None, need: int
) -> list[tuple[Any, ...]]:
    """Up to `need` entries of the snapshot after the cursor in the order read, that the
    filters keep: chunks from the cursor's place on, a growing span at a time."""
    if cursor is None:
        place = 0 if read.ascending else total - 1
    else:
        before, exact = _before(read, snapshot_id, total, cursor)
        place = before + int(exact) if read.ascending else before - 1
    found: list[tuple[Any, ...]] = []
    span = need + 1
    for _ in range(WALKS):
        if len(found) >= need or not 0 <= place < total:
            return found[:need]
        if read.ascending:
            first, last = place, min(total - 1, place + span - 1)
            place = last + 1
        else:
            first, last = max(0, place - span + 1), place
            place = first - 1
        wanted = _identities(read, snapshot_id, first, last)
        if not read.ascending:
            wanted.reverse()
        entries = _entries(read, snapshot_id, wanted)
        found += [entries[identity] for identity in wanted if identity in entries]
        span = min(span * 4, MAX_SPAN)
    if len(found) < need and 0 <= place < total:  # a filter few entries pass: the rest at once
        found += _scan(read, snapshot_id, place, need - len(found))
    return found[:need]


def _scan(read: MadeRead, snapshot_id: int, place: int, need: int) -> list[tuple[Any, ...]]:
    """The first `need` entries the filters keep from `place` on in the order read, by one
    pass over the snapshot's entries (their places stored: nothing but these is sorted)."""
    by = f"e.by_{read.sort}"
    params: list[Any] = [read.app_id, snapshot_id, place]
    where = f"e.app_id = %s AND e.snapshot_id = %s AND {by} {'>=' if read.ascending else '<='} %s"
    if read.where:
        where += f" AND {read.where}"
        params += read.where_params
    sql = (
        f"SELECT {ENTRY}, {MADE_KEYS[read.sort]}, {BLOCK} FROM {ListEntry._meta.db_table} e"
        f"{read.joins()} WHERE {where} ORDER BY {by} {'ASC' if read.ascending else 'DESC'} "
        f"LIMIT {need}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def made_page_rows(
    read: MadeRead, totals: dict[int, int], cursor: Cursor | None, need: int
) -> list[tuple[Any, ...]]:
    """The first `need` entries after the cursor over these snapshots (snapshot -> entries):
    each snapshot's own, merged in the order read. Rows as `allocation_list._page_rows` reads
    them (id, live, snapshot, category, stack, thread, generation, n, size, key)."""
    rows: list[tuple[Any, ...]] = []
    for snapshot_id, total in totals.items():
        rows += _walk(read, snapshot_id, total, cursor, need)
    rows.sort(key=lambda row: _order_key(row, read.sort), reverse=not read.ascending)
    return [_unmade(row) for row in rows[:need]]


def _unmade(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A made entry as the rows' list reads one: no thread and no generation as NULL."""
    thread, generation = row[5], row[6]
    return (*row[:5], None if thread < 0 else thread, None if generation < 0 else generation,
            *row[7:])  # fmt: skip
