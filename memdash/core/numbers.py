"""Whole numbers from text that users and tools send (pure: no Django).

`str.isdigit()` is true for "²" and "٣", which `int()` then refuses or reads; ids and counts in
URLs and reports are ASCII digits, and must fit the database's 64-bit integers.
"""

from __future__ import annotations

MAX_INT64 = 2**63 - 1  # the widest integer column (BIGINT): counts, bytes, ids, milliseconds


def whole_number(text: str | None, maximum: int = MAX_INT64) -> int | None:
    """The number `text` spells in ASCII digits, if it is at most `maximum`; else None."""
    if not text or not (text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if value <= maximum else None
