"""Whole numbers from text that users and tools send (pure: no Django).

`str.isdigit()` is true for "²" and "٣", which `int()` then refuses or reads; ids and counts in
URLs and reports are ASCII digits, and must fit the database's 64-bit integers.
"""

from __future__ import annotations

import hashlib
import struct

# A percentage from 0% to 100% as a query parameter takes it (`0.5%`, `12%`, `100%`), as a regular
# expression: the schema states it and the parser reads what it matches, no more.
PERCENT_PATTERN = r"(?:100(?:\.0+)?|\d{1,2}(?:\.\d+)?)%"
MAX_INT64 = 2**63 - 1  # the widest integer column (BIGINT): counts, bytes, ids, milliseconds
MIN_INT64 = -(2**63)  # hash ids (frames, stack nodes) use the whole signed range
MAX_INT32 = 2**31 - 1  # an INTEGER column: line numbers, generation indexes


def whole_number(text: str | None, maximum: int = MAX_INT64) -> int | None:
    """The number `text` spells in ASCII digits, if it is at most `maximum`; else None."""
    if not text or not (text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if value <= maximum else None


def int64(text: str) -> int | None:
    """The signed 64-bit integer `text` spells (ASCII digits, an optional leading `-`), as ids
    that use the whole range are written; None for anything else or out of range."""
    value = whole_number(text.removeprefix("-"), 2**63)
    if value is None:
        return None
    value = -value if text.startswith("-") else value
    return value if MIN_INT64 <= value <= MAX_INT64 else None


def hash64(*parts: object) -> int:
    """A stable signed 64-bit id (fits a BIGINT) of what identifies a row: frames and stack
    nodes are keyed by it, and text of any length (a category name) is indexed by it, since a
    btree over the raw text fails past PostgreSQL's row limit (~2,700 bytes)."""
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    value: int = struct.unpack("<q", digest)[0]
    return value
