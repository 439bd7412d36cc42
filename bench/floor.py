"""The bare floor of an ingest (issue 19): read the file, gunzip it (with ISA-L, as memdash
does: the fastest inflater there is), parse it with orjson and binary-COPY its allocation rows,
as they are, into one table without any index — no Django, no validation, no frames, stacks or
derived tables. Nothing that stores a snapshot can be faster by much, so memdash's ingest of
the same file is reported as a multiple of it (bench/ingest.py).

    python bench/floor.py FILE.json.gz --dsn postgresql://postgres@127.0.0.1:5432/md_bench_floor
    python bench/floor.py FILE.json.gz --db var/bench/floor.sqlite3
    python bench/floor.py FILE.json.gz --dsn … --totals   # + category and call-tree totals

`--totals` (issue 36's end-to-end floor, bench/end_to_end.py) also works out what every page of
a snapshot needs besides its rows, with numpy and nothing else: the rows as columns, each
category's totals and each stack node's inclusive totals (a depth level at a time), and COPYs
the category totals and the call tree next to the rows.

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


TOTALS = "floor_categorytotal"
TREE = "floor_calltreenode"
COUNTS = ("persistent", "persistent_bytes", "transient", "transient_bytes")


def totals(doc: dict[str, Any], rows: list[dict[str, Any]]) -> tuple[list[tuple], list[tuple]]:
    """(category, 4 counters) per category and (node, parent, 8 counters) per stack node with
    anything at or below it: the rows as numpy columns, grouped sums, inclusive sums up the
    tree a depth level at a time."""
    import numpy as np

    codes: dict[str, int] = {}
    category = np.fromiter((codes.setdefault(r["category"], len(codes)) for r in rows), np.int64)
    stack = np.fromiter((-1 if r.get("stack") is None else r["stack"] for r in rows), np.int64)
    counts = np.array([[r.get(c, 0) for c in COUNTS] for r in rows], dtype=np.int64)
    per_category = np.zeros((len(codes), 4), dtype=np.int64)
    np.add.at(per_category, category, counts)
    parents = np.fromiter((-1 if p is None else p for p, _ in doc["stacks"]), np.int64)
    depth = np.zeros(len(parents), dtype=np.int64)
    for i, p in enumerate(parents.tolist()):  # parents first
        depth[i] = depth[p] + 1 if p >= 0 else 0
    own = np.zeros((len(parents), 4), dtype=np.int64)
    np.add.at(own, stack[stack >= 0], counts[stack >= 0])
    inclusive = own.copy()
    order = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[order], np.arange(int(depth.max(initial=0)) + 2))
    for d in range(len(bounds) - 2, 0, -1):
        level = order[bounds[d] : bounds[d + 1]]
        np.add.at(inclusive, parents[level], inclusive[level])
    kept = np.flatnonzero(inclusive.any(axis=1))
    names = list(codes)
    category_rows = [(names[i], *c) for i, c in enumerate(per_category.tolist())]
    tree = np.column_stack([kept, parents[kept], inclusive[kept], own[kept]]).tolist()
    return category_rows, [(n, None if p < 0 else p, *c) for n, p, *c in tree]


def store_totals_pg(dsn: str, category_rows: list[tuple], tree: list[tuple]) -> None:
    import psycopg

    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        for table, types, data in (
            (TOTALS, ["text"] + ["bigint"] * 4, category_rows),
            (TREE, ["bigint"] * 10, tree),
        ):
            with cur.copy(f"COPY {table} FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(types)
                for row in data:
                    copy.write_row(row)
        conn.commit()


def reset(dsn: str | None, db: str | None) -> None:
    create = f"CREATE TABLE {TABLE} ({', '.join(f'{n} {t}' for n, t in COLUMNS)})"
    counters = ", ".join(f"{c} bigint" for c in COUNTS)
    own = ", ".join(f"self_{c} bigint" for c in COUNTS)
    if dsn:
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            for table in (TABLE, TOTALS, TREE):
                conn.execute(f"DROP TABLE IF EXISTS {table}")
            conn.execute(create)
            conn.execute(f"CREATE TABLE {TOTALS} (category text, {counters})")
            conn.execute(f"CREATE TABLE {TREE} (node bigint, parent bigint, {counters}, {own})")
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


def measure(
    file: Path, dsn: str | None, db: str | None, with_totals: bool = False
) -> dict[str, Any]:
    reset(dsn, db)
    phases: dict[str, float] = {}
    started = clock = time.perf_counter()
    content = igzip.decompress(file.read_bytes())
    phases["read"] = time.perf_counter() - clock
    clock = time.perf_counter()
    doc = orjson.loads(content)
    rows = doc["allocations"]
    del content
    phases["parse"] = time.perf_counter() - clock
    if with_totals:
        clock = time.perf_counter()
        category_rows, tree = totals(doc, rows)
        phases["totals"] = time.perf_counter() - clock
    clock = time.perf_counter()
    if dsn:
        store_pg(dsn, rows)
        if with_totals:
            store_totals_pg(dsn, category_rows, tree)
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
    parser.add_argument("--totals", action="store_true", help="category and call-tree totals too")
    args = parser.parse_args(argv)
    if args.totals and not args.dsn:
        parser.error("--totals needs --dsn")
    emit(measure(args.file, args.dsn, args.db, args.totals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
