"""Bulk writes that stay near the database's own speed, on PostgreSQL and SQLite.

An upload moves up to millions of rows; these helpers move them in a few statements, as plain
tuples in the order of `columns` rather than model instances (never row-by-row ORM saves).
PostgreSQL: rows go by binary COPY (psycopg writes those in C; arrays or VALUES lists would be
quoted value by value in Python), straight into the table or into a temporary table that one
INSERT ... SELECT or UPDATE ... FROM then applies. SQLite: executemany of one statement, which
is as fast there. Lists of ids reach PostgreSQL as one array literal (`core.reads.where_in`).

Rows of integers may also come as columns (`core.logic.rows.ArrayRows`: numpy arrays, masked where
NULL): to PostgreSQL as binary COPY data that numpy lays out, to SQLite as tuples made by
`.tolist()`: a million rows without a Python loop over them.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import batched
from typing import Any, cast

import numpy as np
from django.db import IntegrityError, InternalError, connection, models, transaction

from memdash.core.logic.rows import BLOCK_ROWS, ArrayRows, Row, binary_copy_data
from memdash.core.reads.citus import is_citus
from memdash.core.reads.where_in import array_literal, is_postgres, where_in

UPSERT_BATCH = 5_000  # rows per executemany of `upsert_add`


# --- Columns -------------------------------------------------------------------------------


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


def _names(columns: Sequence[str]) -> str:
    return ", ".join(map(_q, columns))


def _fields(model: type[models.Model], columns: Sequence[str]) -> list[models.Field[Any, Any]]:
    by_column = {f.attname: f for f in model._meta.concrete_fields}
    return [by_column[c] for c in columns]


def _pg_types(model: type[models.Model], columns: Sequence[str]) -> list[str]:
    """The column types for a binary COPY (several times faster than text COPY), varchar
    without its length."""
    types = []
    for f in _fields(model, columns):
        # Concrete fields: a relation is a foreign key, and every column has a database type.
        db_type = cast(
            str,
            cast("models.ForeignKey[Any, Any]", f).target_field.rel_db_type(connection)
            if f.is_relation
            else f.db_type(connection),
        )
        types.append(db_type.split("(")[0])
    return types


# --- The two backends ----------------------------------------------------------------------


@contextmanager
def _duplicate_key_as_integrity() -> Iterator[None]:
    """Citus passes on a worker's unique violation in a COPY as an internal error (SQLSTATE
    XX000, where an INSERT keeps 23505): made the IntegrityError it is everywhere else, known
    by its message as PostgreSQL words it."""
    try:
        yield
    except InternalError as exc:
        if str(exc).startswith("duplicate key value violates unique constraint"):
            raise IntegrityError(*exc.args) from exc
        raise


def _pg_copy(
    model: type[models.Model],
    table: str,
    columns: Sequence[str],
    rows: Iterable[Row],
    constants: Mapping[str, int] | None = None,
) -> None:
    """Binary COPY of the rows into `table` (quoted), typed as the model's columns; then the
    `constants`, integer columns the model does not have, one value for every row."""
    extra = dict(constants or {})
    types = _pg_types(model, columns) + ["integer"] * len(extra)
    # The COPY goes by psycopg's own cursor: its errors are made Django's here.
    with (
        connection.cursor() as cursor,
        _duplicate_key_as_integrity(),
        connection.wrap_database_errors,
    ):
        sql = f"COPY {table} ({_names([*columns, *extra])}) FROM STDIN (FORMAT BINARY)"
        with cursor.cursor.copy(sql) as copy:
            if isinstance(rows, ArrayRows):
                with_extra = ArrayRows([*rows.columns, *extra.values()], rows.order)
                for data in binary_copy_data(with_extra, types):
                    copy.write(data)
                return
            copy.set_types(types)
            values = tuple(extra.values())
            for row in rows:
                copy.write_row((*row, *values))


def _staged(model: type[models.Model], columns: Sequence[str], rows: Iterable[Row]) -> str:
    """Copy the rows into a temporary table of these columns (empty at each use, emptied at
    commit: call it inside a transaction); answers its name."""
    table = model._meta.db_table
    tmp = _q(f"tmp_{table}_{zlib.crc32(' '.join(columns).encode()):08x}")
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {tmp} ON COMMIT DELETE ROWS "
            f"AS SELECT {_names(columns)} FROM {_q(table)} WITH NO DATA"
        )
        cursor.execute(f"TRUNCATE {tmp}")
    _pg_copy(model, tmp, columns, rows)
    return tmp


def _sqlite_rows(
    model: type[models.Model], columns: Sequence[str], rows: Iterable[Row]
) -> Iterable[Sequence[Any]]:
    """SQLite stores datetimes as naive text in the connection's time zone: convert them as
    the ORM's adapt_datetimefield_value would (which is several times slower per value).
    Lazily, so that a generator of a million rows is never held whole."""
    if isinstance(rows, ArrayRows):
        return rows.tuples()
    stamps = [
        i for i, f in enumerate(_fields(model, columns)) if isinstance(f, models.DateTimeField)
    ]
    if not stamps:
        return rows
    return (_naive_stamps(row, stamps) for row in rows)


def _naive_stamps(row: Row, stamps: Sequence[int]) -> list[Any]:
    values = list(row)
    for i in stamps:
        value = values[i]
        if value is not None:
            if value.tzinfo is not None:
                value = value.astimezone(connection.timezone).replace(tzinfo=None)
            values[i] = str(value)
    return values


def _sqlite_many(
    sql: str, model: type[models.Model], columns: Sequence[str], rows: Iterable[Row]
) -> None:
    """One statement (with %s for the `columns` of each row) executed for every row, a block
    of rows at a time: Django's SQLite cursor peeks at the first row of what it is given with
    `itertools.tee`, which then keeps every row of a generator in memory until the end."""
    with connection.cursor() as cursor:
        for block in batched(_sqlite_rows(model, columns, rows), BLOCK_ROWS):
            cursor.executemany(sql, block)


def _marks(columns: Sequence[str]) -> str:
    return ", ".join(["%s"] * len(columns))


# --- Writes --------------------------------------------------------------------------------


def copy_rows(
    model: type[models.Model],
    columns: Sequence[str],
    rows: Iterable[Row],
    into: str | None = None,
    constants: Mapping[str, int] | None = None,
) -> None:
    """Append rows to the model's table (rows that must not conflict: see `insert_ignore`).
    PostgreSQL may be told to write them `into` another table of the same columns (a partition)
    with `constants` (its partition key)."""
    table = _q(into or model._meta.db_table)
    if is_postgres():
        _pg_copy(model, table, columns, rows, constants)
    else:
        sql = f"INSERT INTO {table} ({_names(columns)}) VALUES ({_marks(columns)})"
        _sqlite_many(sql, model, columns, rows)


def insert_ignore(
    model: type[models.Model],
    columns: Sequence[str],
    rows: Iterable[Row],
    conflict: Sequence[str],
    keys: Sequence[int] | np.ndarray[Any, Any] | None = None,
    *,
    app_id: int | None = None,
    probe: np.ndarray[Any, Any] | None = None,
) -> None:
    """Insert rows, skipping those whose `conflict` columns already exist (hash-keyed rows).
    With `keys`, the rows' keys in the one `conflict` column, in the rows' order (PostgreSQL),
    the rows go by arrays (`_insert_by_keys`): none written when every key is stored already
    (an app's next upload: its frames and stack nodes), else those of the keys not stored by
    one COPY straight into the table; only if another upload stored one of them meanwhile do
    the rows go the staged way below. `app_id`: the app whose rows these are (the model's
    `app_id`), which scopes every look to the app's rows (one worker's on Citus) and lets an
    app's first upload copy without one. `probe`: keys whose being stored means every key is
    (a stack node is stored only with its ancestors: its leaves), looked at in their stead."""
    if keys is not None and is_postgres():
        rows = rows if isinstance(rows, ArrayRows) else list(rows)  # read twice if need be
        wanted = np.asarray(keys, dtype=np.int64)
        if _insert_by_keys(model, columns, rows, conflict[0], wanted, app_id, probe):
            return
    table = _q(model._meta.db_table)
    names, on_conflict = _names(columns), f"ON CONFLICT ({_names(conflict)}) DO NOTHING"
    if is_postgres():
        # In key order: the index grows page by page rather than everywhere at once, and two
        # uploads inserting the same keys take their locks in one order.
        with transaction.atomic(savepoint=False), connection.cursor() as cursor:
            tmp = _staged(model, columns, rows)
            cursor.execute(
                f"INSERT INTO {table} ({names}) SELECT {names} FROM {tmp} "
                f"ORDER BY {_names(conflict)} {on_conflict}"
            )
        return
    sql = f"INSERT INTO {table} ({names}) VALUES ({_marks(columns)}) {on_conflict}"
    _sqlite_many(sql, model, columns, rows)


KEYS_SAMPLED = 64  # keys looked up first: what a mostly new upload pays to learn it is
# Up to this many keys, all of them are looked up at once: the look costs the database about
# what the sample's does, and an upload of a few thousand stored keys (most uploads) is
# answered in one statement rather than two.
SAMPLED_ABOVE = 8_192


def all_stored(
    model: type[models.Model],
    column: str,
    keys: Sequence[int] | np.ndarray[Any, Any],
    app_id: int | None = None,
) -> bool:
    """Whether every one of these integer keys is in the model's table (PostgreSQL; False on
    SQLite, whose INSERT OR IGNORE of stored rows costs no more than the look), among the
    rows of `app_id` when given. A sample of them first, so that an upload of new keys pays
    one small look, not one per key; then all, in one array. Stored means committed: a key
    another upload is inserting right now is not counted, and the rows go the inserting way,
    which waits for it."""
    if not is_postgres() or not len(keys):
        return False
    unique = _distinct(np.asarray(keys, dtype=np.int64))
    return _all_of_them_stored(_scoped(model, app_id), column, unique)


def _scoped(model: type[models.Model], app_id: int | None) -> models.QuerySet[Any]:
    """The model's rows, those of one app when given."""
    rows = model._default_manager.all()
    return rows if app_id is None else rows.filter(app_id=app_id)


def _distinct(keys: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The distinct keys, ascending, by one sort: numpy 2.5's `np.unique` without `return_*`
    goes by a hash table, which is tens of times slower for a million distinct ids."""
    ordered = np.sort(keys)
    first = np.ones(len(ordered), dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    return ordered[first]


def _all_of_them_stored(rows: models.QuerySet[Any], column: str, unique: np.ndarray) -> bool:
    sample = unique[:: max(1, len(unique) // KEYS_SAMPLED)]
    for wanted in (sample, unique) if len(unique) > SAMPLED_ABOVE else (unique,):
        if rows.filter(where_in(column, wanted.tolist())).count() < len(wanted):
            return False
    return True


def _insert_by_keys(
    model: type[models.Model],
    columns: Sequence[str],
    rows: ArrayRows | list[Row],
    key: str,
    keys: np.ndarray[Any, Any],
    app_id: int | None = None,
    probe: np.ndarray[Any, Any] | None = None,
) -> bool:
    """Store the rows whose keys the table lacks by one COPY into the table itself, in key
    order; True when done (or when every key is stored). An app without any row of the model
    (its first upload) has every row copied without a look at a key; otherwise the keys
    stored are looked up (`probe`'s first, when given), and the others copied. No temporary
    table, no speculative insertion (ON CONFLICT): new stack nodes cost the database less with
    the look for stored ones than staged (measured on a snapshot's 195,000). But the COPY
    fails on a key stored meanwhile by another upload: it runs in a savepoint, and such a
    failure (False) leaves the transaction as it was, for the staged way."""
    scoped = _scoped(model, app_id)
    if app_id is not None and not scoped.exists():  # nothing of the app's to look at
        return _copy_chosen(model, columns, rows, keys, np.arange(len(keys)))
    unique = _distinct(keys if probe is None else np.asarray(probe, dtype=np.int64))
    if _all_of_them_stored(scoped, key, unique):
        return True
    if probe is not None:
        unique = _distinct(keys)
    stored = np.fromiter(
        scoped.filter(where_in(key, unique.tolist())).values_list(key, flat=True), dtype=np.int64
    )
    return _copy_chosen(model, columns, rows, keys, np.flatnonzero(~np.isin(keys, stored)))


def _copy_chosen(
    model: type[models.Model],
    columns: Sequence[str],
    rows: ArrayRows | list[Row],
    keys: np.ndarray[Any, Any],
    chosen: np.ndarray[Any, Any],
) -> bool:
    """COPY the `chosen` rows into the model's table in key order (two uploads lock shared
    keys in one order), in a savepoint: False, and nothing written, when one is stored."""
    chosen = chosen[np.argsort(keys[chosen], kind="stable")]
    if isinstance(rows, ArrayRows):
        picked: Iterable[Row] = ArrayRows(
            [c[chosen] if isinstance(c, np.ndarray) else c for c in rows.columns]
        )
    else:
        picked = [rows[i] for i in chosen.tolist()]
    try:
        with transaction.atomic():
            _pg_copy(model, _q(model._meta.db_table), columns, picked)
    except IntegrityError:
        return False
    return True


def upsert_rows(
    model: type[models.Model],
    columns: Sequence[str],
    rows: Sequence[Row],
    conflict: Sequence[str],
    update: Sequence[str],
    returning: Sequence[str] = (),
) -> list[Row]:
    """INSERT rows, or on a `conflict` UPDATE their `update` columns. Answers the `returning`
    columns of the rows on PostgreSQL (in no particular order), nothing on SQLite."""
    if not rows:
        return []
    table, names = _q(model._meta.db_table), _names(columns)
    sets = ", ".join(f"{_q(c)} = excluded.{_q(c)}" for c in update)
    on_conflict = f"ON CONFLICT ({_names(conflict)}) DO UPDATE SET {sets}"
    if not is_postgres():
        sql = f"INSERT INTO {table} ({names}) VALUES ({_marks(columns)}) {on_conflict}"
        _sqlite_many(sql, model, columns, rows)
        return []
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        tmp = _staged(model, columns, rows)
        insert = f"INSERT INTO {table} ({names}) SELECT {names} FROM {tmp} {on_conflict}"
        if not returning:
            cursor.execute(insert)
            return []
        cursor.execute(f"{insert} RETURNING {_names(returning)}")
        returned: list[Row] = cursor.fetchall()
        return returned


def update_rows(model: type[models.Model], columns: Sequence[str], rows: Sequence[Row]) -> None:
    """Set `columns` of the rows given as (pk, *values): what bulk_update does, without
    building a CASE WHEN per row and per column."""
    if not rows:
        return
    table, pk_column = _q(model._meta.db_table), model._meta.pk.attname
    pk = _q(pk_column)
    if not is_postgres():
        sets = ", ".join(f"{_q(c)} = %s" for c in columns)
        values = ((*row[1:], row[0]) for row in rows)
        _sqlite_many(
            f"UPDATE {table} SET {sets} WHERE {pk} = %s", model, [*columns, pk_column], values
        )
        return
    sets = ", ".join(f"{_q(c)} = v.{_q(c)}" for c in columns)
    pk_type = _pg_types(model, [pk_column])[0]
    if is_citus():  # Citus joins no temporary table to a distributed or reference one
        _update_from_arrays(model, [pk_column, *columns], rows, sets)
        return
    # The pks once more as an array: without it the planner joins by reading the whole table
    # (an index probe per row looks dearer to it than it is in a cached table).
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        tmp = _staged(model, [pk_column, *columns], rows)
        cursor.execute(
            f"UPDATE {table} SET {sets} FROM {tmp} AS v "
            f"WHERE {table}.{pk} = v.{pk} AND {table}.{pk} = ANY(%s::{pk_type}[])",
            [array_literal([row[0] for row in rows])],
        )


def _update_from_arrays(
    model: type[models.Model], columns: Sequence[str], rows: Sequence[Row], sets: str
) -> None:
    """`update_rows` by one UPDATE from the rows sent as one array per column."""
    table, pk = _q(model._meta.db_table), _q(columns[0])
    arrays = ", ".join(f"%s::{t}[]" for t in _pg_types(model, columns))
    values = [list(column) for column in zip(*rows, strict=True)]  # psycopg makes arrays
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET {sets} FROM unnest({arrays}) AS v({_names(columns)}) "
            f"WHERE {table}.{pk} = v.{pk}",
            values,
        )


def upsert_add(
    model: type[models.Model],
    key_columns: Sequence[str],
    add_columns: Sequence[str],
    rows: Sequence[Row],
) -> None:
    """Insert rows or add their counters to the existing row with the same key.

    Rows are taken in key order so two workers updating the same build lock rows in the same
    order and cannot deadlock. PostgreSQL: one INSERT ... SELECT from the rows sent as one
    array per column (a statement, where staging them in a temporary table took four), which
    sums rows of one key first (one ON CONFLICT DO UPDATE statement refuses a key twice);
    SQLite: one statement per row (executemany).
    """
    if not rows:
        return
    table = _q(model._meta.db_table)
    columns = [*key_columns, *add_columns]
    updates = ", ".join(f"{q} = {table}.{q} + excluded.{q}" for q in map(_q, add_columns))
    if is_postgres():
        keys, sums = _names(key_columns), ", ".join(f"sum({_q(c)})" for c in add_columns)
        arrays = ", ".join(f"%s::{t}[]" for t in _pg_types(model, columns))
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} ({_names(columns)}) SELECT {keys}, {sums} "
                f"FROM unnest({arrays}) AS v({_names(columns)}) "
                f"GROUP BY {keys} ORDER BY {keys} "
                f"ON CONFLICT ({keys}) DO UPDATE SET {updates}",
                [array_literal(values) for values in zip(*rows, strict=True)],
            )
        return
    sql = (
        f"INSERT INTO {table} ({_names(columns)}) VALUES ({_marks(columns)}) "
        f"ON CONFLICT ({_names(key_columns)}) DO UPDATE SET {updates}"
    )
    ordered = sorted(rows, key=lambda r: r[: len(key_columns)])
    with connection.cursor() as cursor:
        for start in range(0, len(ordered), UPSERT_BATCH):
            cursor.executemany(sql, ordered[start : start + UPSERT_BATCH])
