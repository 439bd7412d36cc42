"""The bare floor of an ingest (issue 19): read the file, gunzip it (with ISA-L, as memdash
does: the fastest inflater there is), parse it with orjson and binary-COPY its allocation rows,
as they are, into one table without any index — no Django, no validation, no frames, stacks or
derived tables. Nothing that stores a snapshot can be faster by much, so memdash's ingest of
the same file is reported as a multiple of it (bench/ingest.py).

    python bench/floor.py FILE.json.gz --dsn postgresql://postgres@127.0.0.1:5432/md_bench_floor
    python bench/floor.py FILE.json.gz --db var/bench/floor.sqlite3

PostgreSQL: psycopg's binary COPY (`write_row`, which psycopg encodes in C). SQLite: one
executemany of the rows into the table, in one transaction. Prints one JSON line: phases (read,
parse, store), total seconds, peak RSS, rows. The table is dropped and made again first (not
timed).
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import orjson
from isal import igzip

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import emit, peak_rss_bytes  # noqa: E402

TABLE = "floor_allocationrow"
COLUMNS = (
    ("category", "text"),
    ("stack", "bigint"),
    ("thread", "integer"),
    ("generation", "integer"),
    ("persistent", "bigint"),
    ("persistent_bytes", "bigint"),
    ("transient", "bigint"),
    ("transient_bytes", "bigint"),
)
NAMES = ", ".join(name for name, _ in COLUMNS)


def row_tuples(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (
            r["category"],
            r.get("stack"),
            r.get("thread"),
            r.get("generation"),
            r.get("persistent", 0),
            r.get("persistent_bytes", 0),
            r.get("transient", 0),
            r.get("transient_bytes", 0),
        )  # fmt: skip
        for r in rows
    ]


def store_pg(dsn: str, rows: list[dict[str, Any]]) -> None:
    import psycopg

    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        with cur.copy(f"COPY {TABLE} ({NAMES}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types([kind for _, kind in COLUMNS])
            for row in row_tuples(rows):
                copy.write_row(row)
        conn.commit()


def store_sqlite(path: str, rows: list[dict[str, Any]]) -> None:
    conn = sqlite3.connect(path)
    try:
        with conn:
            conn.executemany(
                f"INSERT INTO {TABLE} ({NAMES}) VALUES ({', '.join('?' * len(COLUMNS))})",
                row_tuples(rows),
            )
    finally:
        conn.close()


def reset(dsn: str | None, db: str | None) -> None:
    create = f"CREATE TABLE {TABLE} ({', '.join(f'{n} {t}' for n, t in COLUMNS)})"
    if dsn:
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
            conn.execute(create)
        return
    assert db is not None
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    conn = sqlite3.connect(db)
    # memdash's own settings for its SQLite database (memdash.settings, init_command).
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(create)
    conn.commit()
    conn.close()


def measure(file: Path, dsn: str | None, db: str | None) -> dict[str, Any]:
    reset(dsn, db)
    phases: dict[str, float] = {}
    started = clock = time.perf_counter()
    content = igzip.decompress(file.read_bytes())
    phases["read"] = time.perf_counter() - clock
    clock = time.perf_counter()
    rows = orjson.loads(content)["allocations"]
    del content
    phases["parse"] = time.perf_counter() - clock
    clock = time.perf_counter()
    if dsn:
        store_pg(dsn, rows)
    else:
        assert db is not None
        store_sqlite(db, rows)
    phases["store"] = time.perf_counter() - clock
    return {
        "side": "floor",
        "file": str(file),
        "phases": phases,
        "total": time.perf_counter() - started,
        "peak_rss": peak_rss_bytes(),
        "rows": len(rows),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--dsn", help="PostgreSQL connection string")
    where.add_argument("--db", help="SQLite database file")
    args = parser.parse_args(argv)
    emit(measure(args.file, args.dsn, args.db))
    return 0


if __name__ == "__main__":
    sys.exit(main())
