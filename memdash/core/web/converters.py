"""The `<id:…>` path converter: a row id as the widest id column holds it.

Django's `<id:…>` matches any run of digits, and a number past BIGINT reaches the database,
where SQLite raises OverflowError (a 500) on a foreign-key lookup. An id past 2^63 - 1 names no
row, so it matches no route: a 404, like any other id that is not there.
"""

from __future__ import annotations

from memdash.core.logic.numbers import MAX_INT64


class IdConverter:
    regex = "[0-9]{1,19}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if number > MAX_INT64:
            raise ValueError(f"{value} is past the widest id")
        return number

    def to_url(self, value: int) -> str:
        return str(int(value))
