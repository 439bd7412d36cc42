"""Bulk loading that stays near the database's own speed: PostgreSQL COPY, SQLite executemany.

Rows are plain tuples in the order of `columns`. Never row-by-row ORM saves for large tables.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db import connection

BATCH = 50_000


def is_postgres() -> bool:
    return connection.vendor == "postgresql"


def _names(columns: Sequence[str]) -> str:
    return ", ".join(connection.ops.quote_name(c) for c in columns)


def copy_rows(table: str, columns: Sequence[str], rows: Iterable[tuple]) -> None:
    """Append rows to `table` (which must not conflict: use `insert_ignore` for that)."""
    cols = _names(columns)
    with connection.cursor() as cursor:
        if is_postgres():
            with cursor.cursor.copy(f"COPY {table} ({cols}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            marks = ", ".join("?" * len(columns))
            raw = connection.connection
            sql = f"INSERT INTO {table} ({cols}) VALUES ({marks})"
            batch: list[tuple] = []
            for row in rows:
                batch.append(row)
                if len(batch) >= BATCH:
                    raw.executemany(sql, batch)
                    batch.clear()
            if batch:
                raw.executemany(sql, batch)


def insert_ignore(
    table: str, columns: Sequence[str], rows: Iterable[tuple], conflict: Sequence[str]
) -> None:
    """Insert rows, skipping those whose `conflict` columns already exist (hash-keyed rows)."""
    cols = _names(columns)
    on = _names(conflict)
    if is_postgres():
        tmp = f"tmp_{table}"
        with connection.cursor() as cursor:
            cursor.execute(
                f"CREATE TEMP TABLE IF NOT EXISTS {tmp} (LIKE {table} INCLUDING DEFAULTS) "
                "ON COMMIT DELETE ROWS"
            )
            cursor.execute(f"TRUNCATE {tmp}")
        copy_rows(tmp, columns, rows)
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {tmp} "
                f"ON CONFLICT ({on}) DO NOTHING"
            )
            cursor.execute(f"TRUNCATE {tmp}")
    else:
        marks = ", ".join("?" * len(columns))
        sql = f"INSERT INTO {table} ({cols}) VALUES ({marks}) ON CONFLICT ({on}) DO NOTHING"
        raw = connection.connection
        batch: list[tuple] = []
        for row in rows:
            batch.append(row)
            if len(batch) >= BATCH:
                raw.executemany(sql, batch)
                batch.clear()
        if batch:
            raw.executemany(sql, batch)


def upsert_add(
    table: str,
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
