"""Reads by many ids that stay near the database's own speed, on PostgreSQL and SQLite: a list of
ids reaches PostgreSQL as one array literal, SQLite as `IN (...)` lists within its bound on
parameters. The bulk writes (`core.writes.bulk`) look rows up through them too."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from django.db import connection
from django.db.models import F
from django.db.models.lookups import In


def is_postgres() -> bool:
    return connection.vendor == "postgresql"


class AnyOf(In):
    """`column IN (...)` that PostgreSQL gets as `column = ANY(%s::type[])` with the values in
    one array literal: the client sends one string instead of parsing thousands of
    placeholders and quoting each value. For integers and strings already of the column's
    type, which is why they are taken as they are."""

    def get_prep_lookup(self) -> list[Any]:
        return list(self.rhs)

    def as_postgresql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        field = self.lhs.output_field
        db_type = field.rel_db_type(connection) if field.is_relation else field.db_type(connection)
        array = f"%s::{db_type.split('(')[0]}[]"
        return f"{lhs} = ANY({array})", (*lhs_params, array_literal(self.rhs))


def array_literal(values: Sequence[int | str]) -> str:
    """A PostgreSQL array literal: `{1,2}` or `{"a","b \\"c\\""}`. The values are of one
    column, so of one type: integers (hundreds of thousands of stack node ids) are written
    without a look at each."""
    if values and isinstance(values[0], int):
        return "{" + ",".join(map(str, values)) + "}"
    return "{" + ",".join(map(_array_item, values)) + "}"


def _array_item(value: int | str) -> str:
    if isinstance(value, int):
        return str(value)
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def where_in(name: str, values: Iterable[int | str]) -> AnyOf:
    """A filter for `.filter(where_in("pk", ids))`: `name` is any of `values`."""
    return AnyOf(F(name), list(values))


SQLITE_IN_CHUNK = 10_000  # values per `IN (...)` on SQLite, within its bound on parameters


def where_in_parts(name: str, values: Sequence[int] | Sequence[str]) -> Iterator[AnyOf]:
    """`where_in` for any number of values, as filters to read one after the other: one on
    PostgreSQL (one array, however long), one per `SQLITE_IN_CHUNK` values on SQLite (one
    placeholder each)."""
    size = len(values) if is_postgres() else SQLITE_IN_CHUNK
    for start in range(0, len(values), max(size, 1)):
        yield where_in(name, values[start : start + size])
