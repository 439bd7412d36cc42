"""Bulk loading that stays near the database's own speed: PostgreSQL COPY, SQLite executemany.

Rows are plain tuples in the order of `columns`. Never row-by-row ORM saves for large tables.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db import connection
from django.db.models import Model

BATCH = 50_000


def is_postgres() -> bool:
    return connection.vendor == "postgresql"


def _names(columns: Sequence[str]) -> str:
    return ", ".join(connection.ops.quote_name(c) for c in columns)


def _pg_types(model: type[Model], columns: Sequence[str]) -> list[str]:
    """The column types for a binary COPY (several times faster than text COPY)."""
    fields = {f.attname: f for f in model._meta.concrete_fields}
    types = []
    for column in columns:
        field = fields[column]
        if field.is_relation:
            db_type = field.target_field.rel_db_type(connection)
        else:
            db_type = field.db_type(connection)
        types.append(db_type.split("(")[0])
    return types


def _sqlite_insert(sql: str, rows: Iterable[tuple]) -> None:
    raw = connection.connection
    batch: list[tuple] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= BATCH:
            raw.executemany(sql, batch)
            batch.clear()
    if batch:
        raw.executemany(sql, batch)


def _pg_copy(table: str, types: list[str], columns: Sequence[str], rows: Iterable[tuple]) -> None:
    with connection.cursor() as cursor:
        sql = f"COPY {table} ({_names(columns)}) FROM STDIN (FORMAT BINARY)"
        with cursor.cursor.copy(sql) as copy:
            copy.set_types(types)
            for row in rows:
                copy.write_row(row)


def copy_rows(model: type[Model], columns: Sequence[str], rows: Iterable[tuple]) -> None:
    """Append rows to the model's table (rows that must not conflict: see `insert_ignore`)."""
    table = model._meta.db_table
    if is_postgres():
        _pg_copy(table, _pg_types(model, columns), columns, rows)
    else:
        marks = ", ".join("?" * len(columns))
        _sqlite_insert(f"INSERT INTO {table} ({_names(columns)}) VALUES ({marks})", rows)


def insert_ignore(
    model: type[Model], columns: Sequence[str], rows: Iterable[tuple], conflict: Sequence[str]
) -> None:
    """Insert rows, skipping those whose `conflict` columns already exist (hash-keyed rows)."""
    table = model._meta.db_table
    cols, on = _names(columns), _names(conflict)
    if is_postgres():
        tmp = f"tmp_{table}"
        with connection.cursor() as cursor:
            cursor.execute(
                f"CREATE TEMP TABLE IF NOT EXISTS {tmp} (LIKE {table}) ON COMMIT DELETE ROWS"
            )
        _pg_copy(tmp, _pg_types(model, columns), columns, rows)
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {tmp} "
                f"ON CONFLICT ({on}) DO NOTHING"
            )
            cursor.execute(f"TRUNCATE {tmp}")
    else:
        marks = ", ".join("?" * len(columns))
        _sqlite_insert(
            f"INSERT INTO {table} ({cols}) VALUES ({marks}) ON CONFLICT ({on}) DO NOTHING", rows
        )


def upsert_add(
    model: type[Model],
    key_columns: Sequence[str],
    add_columns: Sequence[str],
    rows: Sequence[tuple],
) -> None:
    """Insert rows or add their counters to the existing row with the same key.

    Rows are sorted by key first so two workers updating the same build lock rows in the same
    order and cannot deadlock.
    """
    if not rows:
        return
    table = model._meta.db_table
    columns = [*key_columns, *add_columns]
    cols = _names(columns)
    marks = ", ".join(["%s"] * len(columns))
    updates = ", ".join(
        f"{q} = {table}.{q} + excluded.{q}" for q in map(connection.ops.quote_name, add_columns)
    )
    sql = (
        f"INSERT INTO {table} ({cols}) VALUES ({marks}) "
        f"ON CONFLICT ({_names(key_columns)}) DO UPDATE SET {updates}"
    )
    ordered = sorted(rows, key=lambda r: r[: len(key_columns)])
    with connection.cursor() as cursor:
        for start in range(0, len(ordered), 5_000):
            cursor.executemany(sql, ordered[start : start + 5_000])
