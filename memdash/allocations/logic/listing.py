"""The Allocations List's order and cursors, pure: the SQL expression each sort column reads, the
keyset condition of a page after (or before) a cursor, and the cursor as a URL carries it.

An entry is ordered by its sort value, then its row's id, then live before freed (one row makes at
most one entry of each), so the order is total and a cursor names one place in it."""

from __future__ import annotations

import base64
import re
from typing import NamedTuple

MAX_INT64 = 2**63 - 1
MAX_KEY_TEXT = 100_000  # a category name's length in a cursor, at most

KEY_CHARS = 200  # characters of a text sort key: a b-tree row holds it (ListEntry's indexes)


def text_key(sql: str) -> str:
    """A text column as the list sorts by it: lower case, its first KEY_CHARS characters."""
    return f"SUBSTR(LOWER({sql}), 1, {KEY_CHARS})"


# Sort column -> the SQL expression of the entry (`e`) or its category (`c`) that orders it,
# when the list is read from the snapshot's rows.
SORT_KEYS = {
    "size": "e.size",
    "count": "e.n",
    "live": "e.live",
    "category": text_key("c.name"),
    "generation": "COALESCE(e.generation, -1)",
    "thread": "COALESCE(e.thread, -1)",
    "snapshot": "e.snapshot",
    # the responsible caller's frame (`rf`, found by the callers of every stack), by symbol then
    # image: an unnamed frame (`image + 0x…`) sorts by its image
    "caller": text_key("COALESCE(rf.symbol, '') || '\x1f' || COALESCE(rf.image, '')"),
    "library": text_key("COALESCE(rf.image, '')"),
}
# The same keys over the list made ahead (ListEntry `e`, no generation or thread is -1; its
# category `c` and responsible caller's frame `rf` joined as the rows' are).
MADE_KEYS = {
    **SORT_KEYS,
    "generation": "e.generation",
    "thread": "e.thread",
    "snapshot": "e.snapshot_id",
    "address": "e.address",  # signed 64-bit as stored; its order is the unsigned one's
    "time": "CAST(ROUND(e.made_ms * 1000) AS BIGINT)",  # µs: a cursor's key is an integer
}
# The orders of the list made ahead (ListEntry's `by_<order>` places, ListOrderChunk's `sort`):
# every sort column, and an events run's blocks by address and by the time they were made.
LIST_ORDERS = ("size", "count", "category", "caller", "library", "generation", "thread", "live",
               "address", "time", "snapshot")  # fmt: skip
BLOCK_KEYS = frozenset({"address", "time"})
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


def order_clause(key: str, descending: bool, row: str = "e.id") -> str:
    word = "DESC" if descending else "ASC"
    return f"{key} {word}, {row} {word}, e.live {word}"


def encode_cursor(cursor: Cursor) -> str:
    """The cursor as a URL parameter, `<key>.<row>.<live>`: a number key as it is, a text key
    as `t` and its UTF-8 in base64url (unpadded)."""
    key = cursor.key
    if isinstance(key, str):
        key = "t" + base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")
    return f"{key}.{cursor.row}.{cursor.live}"


CURSOR_SHAPE = re.compile(r"(-?[0-9]{1,19}|t[A-Za-z0-9_-]*)\.([0-9]{1,19})\.([01])")


def _text_key(body: str) -> str:
    """Any base64url text as a key: a place in the order whatever it holds (the bytes read as
    UTF-8, a bad sequence as U+FFFD; no NUL, which PostgreSQL text cannot hold)."""
    if len(body) % 4 == 1:
        body = body[:-1]
    raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    return raw.decode("utf-8", "replace").replace("\x00", "")


def decode_cursor(text: str) -> Cursor | None:
    """The cursor a parameter carries, or None when it has not a cursor's shape (or a number
    past 64 bits)."""
    match = CURSOR_SHAPE.fullmatch(text)
    if match is None or len(text) > MAX_KEY_TEXT * 2:
        return None
    key_text, row_text, live = match.groups()
    row = int(row_text)
    key: int | str
    if key_text.startswith("t"):
        key = _text_key(key_text[1:])
    else:
        key = int(key_text)
        if not -MAX_INT64 - 1 <= key <= MAX_INT64:
            return None
    if row > MAX_INT64:
        return None
    return Cursor(key, row, int(live))


def fits(cursor: Cursor, sort: str) -> bool:
    """Whether the cursor is a place in a list sorted by `sort` (a text key for a text column)."""
    return isinstance(cursor.key, str) == (sort in TEXT_KEYS)
