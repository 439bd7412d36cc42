"""The Allocations List (Instruments' Allocations instrument, "Allocations List"): the allocation
rows of a snapshot or of a build's snapshots, one entry per row and lifespan.

A stored row aggregates the allocations of one (category, stack, thread, generation): those still
alive (# Persistent, Persistent Bytes) and those freed (# Transient, Transient Bytes). The list
shows them as Instruments shows allocations: an entry is live or freed, with its count and size,
so a row with both is two entries (the lifespan filter keeps one kind, as the statistics table's
does). Read by keyset: a page is the entries after (or before) a cursor — the sort value, the
row's id and live — in one query, so the millionth row is read as fast as the first page and no
OFFSET walks the rows before it. Only reads; what is not there raises DoesNotExist."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import connection

from memdash.allocations.logic.analysis import BASELINE
from memdash.allocations.logic.listing import (
    BLOCK_KEYS,
    CALLER_KEYS,
    MADE_KEYS,
    SORT_KEYS,
    Cursor,
    keyset_condition,
    order_clause,
)
from memdash.allocations.models import (
    AllocationBlock,
    AllocationRow,
    Category,
    Snapshot,
    TimedAllocationRow,
    Timeline,
)
from memdash.allocations.reads.made_lists import MadeRead, made_page_rows, made_totals
from memdash.allocations.reads.stacks import (
    CALLERS_CTE,
    MATCHED_CALLERS_CTE,
    StackFrame,
    like_pattern,
    responsible_of,
    stack_frames,
)
from memdash.core.reads.where_in import array_literal, is_postgres

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
MAX_SEARCH = 200  # characters of a search


@dataclass(frozen=True)
class ListQuery:
    """What a list shows: the filters, the sort and the page (a cursor and a direction)."""

    category: str = ""  # a category's name; "" for all
    generation: int | str | None = None  # an index, BASELINE or None for all
    lifespan: str = "all"  # all | persistent (live) | transient (freed)
    search: str = ""  # category, responsible caller or library containing it
    sort: str = "size"
    descending: bool = True
    after: Cursor | None = None
    before: Cursor | None = None
    limit: int = DEFAULT_LIMIT
    # only what a snapshot made in a time range: (column, first, last), `timeline.TimeRange.span`
    # (an events run's time buckets, read from its rows by bucket; a massif run's snapshots)
    time_range: tuple[str, int, int] | None = None


@dataclass
class Entry:
    """One entry of the list: the allocations of a row that are live, or those that were freed."""

    row: int
    live: bool
    snapshot: int
    category: str
    kind: str  # heap | vm
    count: int
    size: int
    thread: str | None
    generation: int | None
    stack: int | None
    caller: StackFrame | None = None  # the responsible caller's frame (first app frame)
    sort_value: int | str = 0
    # an events run's allocation, listed one by one: its address, when made and freed (ms)
    address: int | None = None
    made_ms: float | None = None
    freed_ms: float | None = None

    @property
    def cursor(self) -> Cursor:
        return Cursor(self.sort_value, self.row, int(self.live))


@dataclass
class ListPage:
    entries: list[Entry]
    next: Cursor | None  # the cursor after the last entry, when more follow
    previous: Cursor | None  # the cursor before the first entry, when some come before
    pruned: list[int] = field(default_factory=list)  # listed snapshots whose rows were pruned


def category_id_in(app_id: int, name: str) -> int:
    """The id of the app's category of this name (Category.DoesNotExist when it has none)."""
    return Category.objects.named([name]).get(app_id=app_id).pk


def _matching_categories(app_id: int, search: str) -> list[int]:
    return list(
        Category.objects.filter(app_id=app_id, name__icontains=search).values_list("pk", flat=True)
    )


def _in(column: str, values: Sequence[int], params: list[Any]) -> str:
    """`column` among `values`: one array on PostgreSQL, an IN list on SQLite."""
    if not values:
        return "1 = 0"
    if is_postgres():
        params.append(array_literal(list(values)))
        return f"{column} = ANY(%s::bigint[])"
    params.extend(values)
    return f"{column} IN ({', '.join(['%s'] * len(values))})"


def _ctes(app_id: int, snapshots: Sequence[int], query: ListQuery) -> tuple[list[str], list[Any]]:
    """The recursive parts the query needs: the stacks whose responsible caller matches the
    search, and every stack's responsible caller when the list is sorted by it. Each part of
    each names the app (Citus runs a recursive CTE only with its distribution column in it)."""
    ctes: list[str] = []
    params: list[Any] = []

    def snapshots_of_app() -> str:
        params.append(app_id)
        return "t.app_id = %s AND " + _in("t.snapshot_id", snapshots, params)

    if query.search:
        where = snapshots_of_app()
        pattern = like_pattern(query.search)
        params += [pattern, pattern]
        snapshots_of_app()
        ctes.append(MATCHED_CALLERS_CTE.format(snapshots=where))
    if query.sort in CALLER_KEYS:
        where = snapshots_of_app()
        snapshots_of_app()
        ctes.append(CALLERS_CTE.format(snapshots=where))
    return ctes, params


def _made_in_buckets(snapshot_id: int, first: int, last: int, params: list[Any]) -> str:
    """An events run's blocks made in its time buckets [first, last], as its rows by bucket
    are (`logic.timeline.Buckets.of`: the same division, the first and last bucket holding
    what lies before and after the run)."""
    timeline = Timeline.objects.get(snapshot_id=snapshot_id)
    where = []
    at = "(a.made_ms - %s) / %s"
    if first > 0:
        where.append(f"{at} >= %s")
        params += [timeline.start_ms, timeline.bucket_ms, first]
    if last < timeline.buckets - 1:
        where.append(f"{at} < %s")
        params += [timeline.start_ms, timeline.bucket_ms, last + 1]
    return " AND ".join(where) or "1 = 1"


def _row_filters(
    app_id: int, snapshots: Sequence[int], query: ListQuery, blocks: bool = False
) -> tuple[str, list[Any]]:
    """The WHERE of the rows listed (before the lifespan split), and its parameters; `blocks`:
    of an events run's blocks."""
    params: list[Any] = [app_id]  # on Citus the whole read then goes to the app's worker
    where = ["a.app_id = %s", _in("a.snapshot_id", snapshots, params)]
    if query.category:
        where.append("a.category_id = %s")
        params.append(category_id_in(app_id, query.category))
    if query.generation == BASELINE:
        where.append("a.generation IS NULL")
    elif query.generation is not None:
        where.append("a.generation = %s")
        params.append(int(query.generation))
    if query.time_range is not None and blocks:
        _column, first, last = query.time_range
        where.append(_made_in_buckets(snapshots[0], first, last, params))
    elif query.time_range is not None:
        column, first, last = query.time_range
        where.append(f"a.{'bucket' if column == 'bucket' else 'generation'} BETWEEN %s AND %s")
        params += [first, last]
    if query.search:  # its category, its responsible caller or library
        matching = _matching_categories(app_id, query.search)
        by_name = _in("a.category_id", matching, params)
        where.append(f"({by_name} OR a.stack_id IN (SELECT node FROM matched))")
    return " AND ".join(where), params


def _entries_sql(
    where: str, where_params: list[Any], lifespan: str, by_bucket: bool = False
) -> tuple[str, list[Any]]:
    """Rows split into live and freed entries (those the lifespan filter keeps); `by_bucket`:
    an events run's rows by time bucket (TimedAllocationRow: the same columns and a bucket)."""
    table = TimedAllocationRow._meta.db_table if by_bucket else AllocationRow._meta.db_table
    parts = []
    params: list[Any] = []
    kinds = ((1, "persistent", "persistent_bytes"), (0, "transient", "transient_bytes"))
    for live, count, size in kinds:
        if (live and lifespan == "transient") or (not live and lifespan == "persistent"):
            continue
        parts.append(
            f"SELECT a.id AS id, {live} AS live, a.snapshot_id AS snapshot, "
            "a.category_id AS category, a.stack_id AS stack, a.thread AS thread, "
            f"a.generation AS generation, a.{count} AS n, a.{size} AS size "
            f"FROM {table} a WHERE {where} AND (a.{count} > 0 OR a.{size} > 0)"
        )
        params += where_params
    return " UNION ALL ".join(parts), params


def _blocks_sql(where: str, where_params: list[Any], lifespan: str) -> tuple[str, list[Any]]:
    """An events run's blocks as entries (each one allocation, live if never freed; those the
    lifespan filter keeps), with their address and times: its list before it is made. Named
    with the app (on Citus the whole read then goes to the app's worker)."""
    live = "CASE WHEN a.freed_ms IS NULL THEN 1 ELSE 0 END"
    if lifespan != "all":
        where += f" AND a.freed_ms IS {'' if lifespan == 'persistent' else 'NOT '}NULL"
    sql = (
        f"SELECT a.id AS id, {live} AS live, a.snapshot_id AS snapshot, "
        "a.category_id AS category, a.stack_id AS stack, a.thread AS thread, "
        "a.generation AS generation, 1 AS n, a.size AS size, a.address AS address, "
        f"a.made_ms AS made_ms, a.freed_ms AS freed_ms FROM {AllocationBlock._meta.db_table} a "
        f"WHERE {where}"
    )
    return sql, where_params


# A block's address in the order of the list made ahead (unsigned: a tagged pointer, 0xb4…,
# after 0x10): the sign bit flipped, as `writes.allocation_lists` orders them. The cursor keeps
# the address as stored (as the made list's does), flipped where it is compared.
SIGN = "(-9223372036854775807 - 1)"
UNSIGNED_ADDRESS = f"((e.address | {SIGN}) - (e.address & {SIGN}))"


def _flipped(cursor: Cursor | None) -> Cursor | None:
    if cursor is None or not isinstance(cursor.key, int):
        return cursor
    return cursor._replace(key=cursor.key ^ -(2**63))


def _page_rows(
    app_id: int, snapshots: Sequence[int], query: ListQuery, blocks: bool = False
) -> tuple[list[tuple[Any, ...]], bool]:
    """The page's rows (id, live, snapshot, category, stack, thread, generation, n, size, key)
    in the list's order, and whether more follow in the direction read; `blocks`: an events
    run's blocks one by one (each row then ends with the block's address and times)."""
    ctes, params = _ctes(app_id, snapshots, query)
    where, where_params = _row_filters(app_id, snapshots, query, blocks)
    by_bucket = (query.time_range or ("",))[0] == "bucket"
    if blocks:
        entries, entry_params = _blocks_sql(where, where_params, query.lifespan)
    else:
        entries, entry_params = _entries_sql(where, where_params, query.lifespan, by_bucket)
    params += entry_params
    key = order_key = MADE_KEYS[query.sort] if query.sort in BLOCK_KEYS else SORT_KEYS[query.sort]
    backwards = query.before is not None
    descending = query.descending != backwards  # read a previous page in the other order
    cursor = query.before if backwards else query.after
    if query.sort == "address":
        order_key, cursor = UNSIGNED_ADDRESS, _flipped(cursor)
    times = ", e.address, e.made_ms, e.freed_ms" if blocks else ""
    sql = f"SELECT e.id, e.live, e.snapshot, e.category, e.stack, e.thread, e.generation, e.n, e.size, {key} AS k{times} FROM ({entries}) e"  # noqa: E501
    if ctes:
        sql = "WITH RECURSIVE " + ", ".join(ctes) + " " + sql
    if query.sort == "category":
        sql += " JOIN snapshots_category c ON c.id = e.category AND c.app_id = %s"
        params.append(app_id)
    elif query.sort in CALLER_KEYS:
        sql += " LEFT JOIN callers ON callers.node = e.stack"
        sql += " LEFT JOIN snapshots_frame rf ON rf.id = callers.frame AND rf.app_id = %s"
        params.append(app_id)
    if cursor is not None:
        condition, values = keyset_condition(order_key, cursor, descending)
        sql += f" WHERE {condition}"
        params += values
    sql += f" ORDER BY {order_clause(order_key, descending)} LIMIT %s"
    params.append(query.limit + 1)
    with connection.cursor() as db:
        db.execute(sql, params)
        rows = db.fetchall()
    more = len(rows) > query.limit
    rows = rows[: query.limit]
    if backwards:
        rows.reverse()
    return rows, more


def has_blocks(app_id: int, snapshot_ids: Sequence[int]) -> bool:
    """Whether these snapshots' uploads gave their allocations one by one (an events run, a
    heaptrack file)."""
    return AllocationBlock.objects.filter(app_id=app_id, snapshot_id__in=snapshot_ids).exists()


def listed_blocks(app_id: int, snapshot_id: int) -> tuple[bool, bool]:
    """Whether the snapshot's allocations are listed one by one, and whether with their
    addresses (an events run's; a heaptrack file has none): its first block says both, as a
    snapshot's blocks all have an address or none has."""
    first = AllocationBlock.objects.filter(app_id=app_id, snapshot_id=snapshot_id)
    addresses = list(first.values_list("address", flat=True)[:1])
    return bool(addresses), bool(addresses) and addresses[0] is not None


def _made_filters(app_id: int, query: ListQuery) -> tuple[str, list[Any]]:
    """The WHERE of the entries listed from the list made ahead (ListEntry `e`)."""
    params: list[Any] = []
    where = []
    if query.lifespan != "all":
        where.append(f"e.live = {int(query.lifespan == 'persistent')}")
    if query.category:
        where.append("e.category_id = %s")
        params.append(category_id_in(app_id, query.category))
    if query.generation is not None:
        where.append("e.generation = %s")
        params.append(-1 if query.generation == BASELINE else int(query.generation))
    if query.search:  # its category, or its responsible caller's frame (stored with it)
        by_name = _in("e.category_id", _matching_categories(app_id, query.search), params)
        by_caller = _in("e.caller_frame_id", _matching_frames(app_id, query.search), params)
        where.append(f"({by_name} OR {by_caller})")
    return " AND ".join(where), params


def _matching_frames(app_id: int, search: str) -> list[int]:
    """The app's frames outside system images whose symbol or image contains the search, as
    MATCHED_CALLERS_CTE matches them."""
    pattern = like_pattern(search)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM snapshots_frame f WHERE f.app_id = %s AND NOT f.is_system AND "
            "(LOWER(f.symbol) LIKE %s ESCAPE '!' OR LOWER(f.image) LIKE %s ESCAPE '!')",
            [app_id, pattern, pattern],
        )
        return [row[0] for row in cursor.fetchall()]


def _made_rows(
    app_id: int, totals: dict[int, int], query: ListQuery
) -> tuple[list[tuple[Any, ...]], bool]:
    """`_page_rows` from the lists made ahead of these snapshots (`reads.made_lists`)."""
    where, where_params = _made_filters(app_id, query)
    backwards = query.before is not None
    read = MadeRead(
        app_id, query.sort, ascending=query.descending == backwards, where=where,
        where_params=where_params,
    )  # fmt: skip
    rows = made_page_rows(read, totals, query.before or query.after, query.limit + 1)
    more = len(rows) > query.limit
    rows = rows[: query.limit]
    if backwards:
        rows.reverse()
    return rows, more


def _category_names(ids: set[int]) -> dict[int, tuple[str, str]]:
    rows = Category.objects.filter(pk__in=ids).values_list("pk", "name", "kind")
    return {pk: (name, kind) for pk, name, kind in rows}


def _thread_names(snapshot_ids: set[int]) -> dict[int, list[str]]:
    return dict(Snapshot.objects.filter(pk__in=snapshot_ids).values_list("pk", "threads"))


def _entries(app_id: int, rows: list[tuple[Any, ...]]) -> list[Entry]:
    categories = _category_names({r[3] for r in rows})
    threads = _thread_names({r[2] for r in rows})
    callers = responsible_of(app_id, {r[4] for r in rows if r[4] is not None})
    entries = []
    for row, live, snapshot, category, stack, thread, generation, n, size, key, *block in rows:
        names = threads.get(snapshot) or []
        name, kind = categories.get(category, ("", "heap"))
        entries.append(
            Entry(
                row=row, live=bool(live), snapshot=snapshot, category=name, kind=kind, count=n,
                size=size,
                thread=names[thread] if thread is not None and 0 <= thread < len(names) else None,
                generation=generation, stack=stack,
                caller=callers.get(stack) if stack is not None else None, sort_value=key,
                **dict(zip(("address", "made_ms", "freed_ms"), block, strict=False)),
            )
        )  # fmt: skip
    return entries


def allocation_page(app_id: int, snapshots: Sequence[Snapshot], query: ListQuery) -> ListPage:
    """A page of the list over these snapshots (one, or a build's), from its cursor. Snapshots
    whose rows retention pruned list nothing; `pruned` names them."""
    pruned = [s.pk for s in snapshots if s.rows_pruned_at is not None]
    kept = [s.pk for s in snapshots if s.rows_pruned_at is None]
    versions = [(s.pk, s.symbols_version) for s in snapshots if s.rows_pruned_at is None]
    made = made_totals(app_id, versions) if query.time_range is None else {}
    all_made = bool(kept) and len(made) == len(kept)
    blocks = bool(kept) and has_blocks(app_id, kept)  # an events run's, listed one by one
    try:
        if all_made and (not query.category or blocks):
            rows, more = _made_rows(app_id, made, query)
        elif blocks and len(kept) == 1:  # until its list is made, and those made in a range
            rows, more = _page_rows(app_id, kept, query, blocks=True)
        elif query.sort in BLOCK_KEYS:  # a build's (no range): its lists are being made
            rows, more = [], False
        else:  # until the lists are made (none of a time range is), and a category's (the
            # rows' index finds its few rows)
            rows, more = _page_rows(app_id, kept, query)
    except Category.DoesNotExist:
        rows, more = [], False
    entries = _entries(app_id, rows)
    first, last = (entries[0].cursor, entries[-1].cursor) if entries else (None, None)
    if query.before is not None:  # read backwards: more lie before the first
        return ListPage(entries, last, first if more else None, pruned)
    return ListPage(entries, last if more else None, first if query.after else None, pruned)


def every_entry(
    app_id: int, snapshots: Sequence[Snapshot], query: ListQuery, chunk: int = 5000
) -> Iterator[Entry]:
    """Every entry of the list in its order (a CSV export), read a keyset page at a time."""
    query = replace(query, before=None, after=None, limit=chunk)
    while True:
        page = allocation_page(app_id, snapshots, query)
        yield from page.entries
        if page.next is None:
            return
        query = replace(query, after=page.next)


def stack_of(app_id: int, stack_id: int) -> list[StackFrame]:
    """The whole stack of a row, innermost frame first (StackNode.DoesNotExist when the app has
    no such stack)."""
    return stack_frames(app_id, stack_id)
