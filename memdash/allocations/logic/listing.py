"""The Allocations List's order and cursors, pure: the SQL expression each sort column reads, the
keyset condition of a page after (or before) a cursor, and the cursor as a URL carries it.

An entry is ordered by its sort value, then its row's id, then live before freed (one row makes at
most one entry of each), so the order is total and a cursor names one place in it."""

from __future__ import annotations

import base64
import binascii
from typing import NamedTuple

import orjson

MAX_INT64 = 2**63 - 1
MAX_KEY_TEXT = 100_000  # a category name's length in a cursor, at most

# Sort column -> the SQL expression of the entry (`e`) or its category (`c`) that orders it.
SORT_KEYS = {
    "size": "e.size",
    "count": "e.n",
    "live": "e.live",
    "category": "LOWER(c.name)",
    "generation": "COALESCE(e.generation, -1)",
    "thread": "COALESCE(e.thread, -1)",
    "snapshot": "e.snapshot",
    # the responsible caller's frame (`rf`, found by the callers of every stack), by symbol then
    # image: an unnamed frame (`image + 0x…`) sorts by its image
    "caller": "LOWER(COALESCE(rf.symbol, '')) || '\x1f' || LOWER(COALESCE(rf.image, ''))",
    "library": "LOWER(COALESCE(rf.image, ''))",
}
CALLER_KEYS = frozenset({"caller", "library"})
TEXT_KEYS = frozenset({"category", *CALLER_KEYS})


class Cursor(NamedTuple):
    """A place in the list: the sort value of an entry, its row's id, and 1 if live."""

    key: int | str
    row: int
    live: int


def keyset_condition(key: str, cursor: Cursor, descending: bool) -> tuple[str, list[int | str]]:
    """The SQL condition (with its parameters) of the entries after `cursor` in the order."""
    op = "<" if descending else ">"
    sql = f"({key} {op} %s OR ({key} = %s AND (e.id {op} %s OR (e.id = %s AND e.live {op} %s))))"
    return sql, [cursor.key, cursor.key, cursor.row, cursor.row, cursor.live]


def order_clause(key: str, descending: bool) -> str:
    word = "DESC" if descending else "ASC"
    return f"{key} {word}, e.id {word}, e.live {word}"


def encode_cursor(cursor: Cursor) -> str:
    """The cursor as a URL parameter: base64url of its JSON, unpadded."""
    return base64.urlsafe_b64encode(orjson.dumps(list(cursor))).decode().rstrip("=")


def decode_cursor(text: str, sort: str) -> Cursor | None:
    """The cursor a parameter carries, or None when it is not one of a list sorted by `sort`."""
    if len(text) > MAX_KEY_TEXT * 2:
        return None
    try:
        value = orjson.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (binascii.Error, ValueError, orjson.JSONDecodeError):
        return None
    if not isinstance(value, list) or len(value) != 3:
        return None
    key, row, live = value
    if not isinstance(key, int | str):
        return None
    wanted: type = str if sort in TEXT_KEYS else int
    if not isinstance(key, wanted) or isinstance(key, bool):
        return None
    if isinstance(key, int) and not -MAX_INT64 - 1 <= key <= MAX_INT64:
        return None
    if isinstance(key, str) and ("\x00" in key or len(key) > MAX_KEY_TEXT):
        return None
    if not isinstance(row, int) or isinstance(row, bool) or not 0 <= row <= MAX_INT64:
        return None
    if live not in (0, 1) or isinstance(live, bool):
        return None
    return Cursor(key, row, live)
