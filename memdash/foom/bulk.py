"""Set-based statements for the FOOM writes, on PostgreSQL and SQLite.

An upload moves tens of thousands of rows; these helpers move them in a few statements, as plain
tuples rather than model instances. PostgreSQL: the rows go into a temporary table by binary COPY
(psycopg writes those in C; arrays or VALUES lists would be quoted value by value in Python), and
one INSERT ... SELECT or UPDATE ... FROM applies them. SQLite: executemany of one statement,
which is as fast there. Lists of ids reach PostgreSQL as one array literal (`where_in`).
"""

from __future__ import annotations

import gc
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

from django.db import connection, models, transaction
from django.db.models import F
from django.db.models.lookups import In

from memdash.core.bulk import is_postgres


@contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while a batch builds its rows. A batch allocates a few
    hundred thousand short-lived containers, none of them in cycles, and each such allocation
    burst makes Python scan the whole heap several times (a tenth of an upload's time);
    reference counting frees them all the same. The cycles made meanwhile wait for the next
    collection."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def without_jit() -> None:
    """No JIT compilation for the rest of the transaction (PostgreSQL): the neighbour lookups
    look costly enough to the planner to compile, which takes longer than running them."""
    if is_postgres():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL jit = off")


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


def _fields(model: type[models.Model], columns: Sequence[str]) -> list[models.Field]:
    by_column = {f.attname: f for f in model._meta.concrete_fields}
    return [by_column[c] for c in columns]


def _pg_types(model: type[models.Model], columns: Sequence[str]) -> list[str]:
    """The column types for a binary COPY, varchar without its length."""
    types = []
    for f in _fields(model, columns):
        db_type = f.target_field.rel_db_type(connection) if f.is_relation else f.db_type(connection)
        types.append(db_type.split("(")[0])
    return types


def _staged(model: type[models.Model], columns: Sequence[str], rows: Iterable[tuple]) -> str:
    """Copy the rows into a temporary table of these columns (empty at each use, emptied at
    commit: call it inside a transaction); answers its name."""
    table = model._meta.db_table
    tmp = _q(f"tmp_{table}_{zlib.crc32(' '.join(columns).encode()):08x}")
    names = ", ".join(map(_q, columns))
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {tmp} ON COMMIT DELETE ROWS "
            f"AS SELECT {names} FROM {_q(table)} WITH NO DATA"
        )
        cursor.execute(f"TRUNCATE {tmp}")
        with cursor.cursor.copy(f"COPY {tmp} ({names}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(_pg_types(model, columns))
            for row in rows:
                copy.write_row(row)
    return tmp


def _sqlite_values(model: type[models.Model], columns: Sequence[str], rows: Iterable[tuple]):
    """SQLite stores datetimes as naive text in the connection's time zone: convert them as
    the ORM's adapt_datetimefield_value would (which is several times slower per value)."""
    stamps = [
        i for i, f in enumerate(_fields(model, columns)) if isinstance(f, models.DateTimeField)
    ]
    if not stamps:
        return list(rows)
    zone = connection.timezone
    converted = []
    for row in rows:
        row = list(row)
        for i in stamps:
            value = row[i]
            if value is not None:
                if value.tzinfo is not None:
                    value = value.astimezone(zone).replace(tzinfo=None)
                row[i] = str(value)
        converted.append(row)
    return converted


def upsert_rows(
    model: type[models.Model],
    columns: Sequence[str],
    rows: Sequence[tuple],
    conflict: Sequence[str],
    update: Sequence[str],
    returning: Sequence[str] = (),
) -> list[tuple]:
    """INSERT rows, or on a `conflict` UPDATE their `update` columns. Answers the `returning`
    columns of the rows on PostgreSQL (in no particular order), nothing on SQLite."""
    if not rows:
        return []
    table = _q(model._meta.db_table)
    names = ", ".join(map(_q, columns))
    sets = ", ".join(f"{_q(c)} = excluded.{_q(c)}" for c in update)
    on_conflict = f"ON CONFLICT ({', '.join(map(_q, conflict))}) DO UPDATE SET {sets}"
    if is_postgres():
        with transaction.atomic(savepoint=False), connection.cursor() as cursor:
            tmp = _staged(model, columns, rows)
            insert = f"INSERT INTO {table} ({names}) SELECT {names} FROM {tmp} {on_conflict}"
            if not returning:
                cursor.execute(insert)
                return []
            cursor.execute(f"{insert} RETURNING {', '.join(map(_q, returning))}")
            return cursor.fetchall()
    marks = ", ".join(["%s"] * len(columns))
    with connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {table} ({names}) VALUES ({marks}) {on_conflict}",
            _sqlite_values(model, columns, rows),
        )
    return []


def update_rows(model: type[models.Model], columns: Sequence[str], rows: Sequence[tuple]) -> None:
    """Set `columns` of the rows given as (pk, *values): what bulk_update does, without
    building a CASE WHEN per row and per column."""
    if not rows:
        return
    table, pk = _q(model._meta.db_table), _q(model._meta.pk.attname)
    if is_postgres():
        sets = ", ".join(f"{_q(c)} = v.{_q(c)}" for c in columns)
        pk_type = _pg_types(model, [model._meta.pk.attname])[0]
        # The pks once more as an array: without it the planner joins by reading the whole
        # table (an index probe per row looks dearer to it than it is in a cached table).
        with transaction.atomic(savepoint=False), connection.cursor() as cursor:
            tmp = _staged(model, [model._meta.pk.attname, *columns], rows)
            cursor.execute(
                f"UPDATE {table} SET {sets} FROM {tmp} AS v "
                f"WHERE {table}.{pk} = v.{pk} AND {table}.{pk} = ANY(%s::{pk_type}[])",
                [_array_literal(row[0] for row in rows)],
            )
        return
    sets = ", ".join(f"{_q(c)} = %s" for c in columns)
    values = [(*row[1:], row[0]) for row in rows]
    with connection.cursor() as cursor:
        cursor.executemany(
            f"UPDATE {table} SET {sets} WHERE {pk} = %s",
            _sqlite_values(model, [*columns, model._meta.pk.attname], values),
        )


class AnyOf(In):
    """`column IN (...)` that PostgreSQL gets as `column = ANY(%s::type[])` with the values in
    one array literal: the client sends one string instead of parsing thousands of
    placeholders and quoting each value. For integers and strings already of the column's
    type, which is why they are taken as they are."""

    def get_prep_lookup(self):
        return list(self.rhs)

    def as_postgresql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        field = self.lhs.output_field
        db_type = field.rel_db_type(connection) if field.is_relation else field.db_type(connection)
        array = f"%s::{db_type.split('(')[0]}[]"
        return f"{lhs} = ANY({array})", (*lhs_params, _array_literal(self.rhs))


def _array_literal(values: Iterable[int | str]) -> str:
    """A PostgreSQL array literal: `{1,2}` or `{"a","b \\"c\\""}`."""
    return "{" + ",".join(map(_array_item, values)) + "}"


def _array_item(value: int | str) -> str:
    if isinstance(value, int):
        return str(value)
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def where_in(name: str, values: Iterable) -> AnyOf:
    return AnyOf(F(name), list(values))
