"""The bare SQLite reference: read, gunzip, parse with orjson, `executemany` into tables
equivalent to memdash's in one transaction — no Django, no validation. memdash's own ingest is
measured against it (issue 8).

    python bench/reference_sqlite.py FILE.json.gz --db var/bench/reference.sqlite3 --reset

Prints one JSON line: phases (read, parse, prepare, store), total seconds, peak RSS, row counts.
The connection uses memdash's own pragmas (WAL, synchronous=NORMAL) so both sides write alike.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reference_common import (  # noqa: E402
    CALLTREE_COLUMNS,
    COUNTERS,
    FRAME_COLUMNS,
    NODE_COLUMNS,
    ROW_COLUMNS,
    TABLES,
    Timer,
    aggregate,
    allocation_rows,
    call_tree_rows,
    category_kind,
    create_table_sql,
    generation_growth,
    peak_rss_bytes,
    prepare_frames_and_nodes,
    read_and_parse,
    report,
    responsible_callers,
    table_summary,
)

APP_ID, BUILD_ID = 1, 1
BATCH = 50_000


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def reset_tables(conn: sqlite3.Connection) -> None:
    for table in TABLES:
        conn.execute(f'DROP TABLE IF EXISTS "{table}"')
    for statement in create_table_sql("sqlite"):
        conn.execute(statement)


def insert(
    conn: sqlite3.Connection,
    table: str,
    columns: tuple[str, ...],
    rows: Iterable[tuple],
    verb: str = "INSERT",
) -> None:
    cols = ", ".join(f'"{c}"' for c in columns)
    sql = f'{verb} INTO "{table}" ({cols}) VALUES ({", ".join("?" * len(columns))})'
    batch: list[tuple] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= BATCH:
            conn.executemany(sql, batch)
            batch.clear()
    if batch:
        conn.executemany(sql, batch)


def ingest(path: Path, db: Path) -> dict[str, Any]:
    timer = Timer()
    doc = read_and_parse(path, timer)
    prep = prepare_frames_and_nodes(doc, APP_ID)
    agg = aggregate(doc)
    responsible = responsible_callers(prep, agg)
    timer.lap("prepare")
    conn = connect(db)
    conn.execute("BEGIN IMMEDIATE")
    device = doc.get("device") or {}
    cur = conn.execute(
        "INSERT INTO snapshots_snapshot (app_id, build_id, source_format, session_id, "
        "captured_at, trigger, device_model, os, threads, created_at, persistent, "
        "persistent_bytes, transient, transient_bytes, row_count, category_count, "
        "stack_node_count, event_count, unmatched_frees, replaced_live_blocks, table_summary) "
        "VALUES "
        "(?, ?, 'memdash.snapshot', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0, ?)",
        [
            APP_ID,
            BUILD_ID,
            doc.get("session") or "",
            doc["captured_at"],
            doc.get("trigger") or "manual",
            device.get("model", ""),
            device.get("os", ""),
            orjson.dumps(doc.get("threads") or []).decode(),
            datetime.now(UTC).isoformat(),
            *agg.totals,
            len(doc["allocations"]),
            len(agg.per_category),
            len(prep.nodes),
            orjson.dumps(table_summary(agg.per_category)).decode(),
        ],
    )
    sid = cur.lastrowid
    names = sorted(agg.per_category)
    insert(
        conn,
        "snapshots_category",
        ("app_id", "name", "kind"),
        ((APP_ID, n, category_kind(n)) for n in names),
        "INSERT OR IGNORE",
    )
    ids = dict(conn.execute("SELECT name, id FROM snapshots_category WHERE app_id = ?", [APP_ID]))
    insert(conn, "snapshots_frame", FRAME_COLUMNS, prep.frames, "INSERT OR IGNORE")
    insert(conn, "snapshots_stacknode", NODE_COLUMNS, prep.nodes, "INSERT OR IGNORE")
    insert(conn, "snapshots_allocationrow", ROW_COLUMNS, allocation_rows(sid, doc, prep, ids))
    insert(
        conn,
        "snapshots_categorytotal",
        ("snapshot_id", "category_id", "responsible_caller", *COUNTERS),
        ((sid, ids[c], responsible.get(c, ""), *n) for c, n in agg.per_category.items()),
    )
    insert(
        conn,
        "snapshots_generationcategorytotal",
        ("snapshot_id", "generation", "category_id", *COUNTERS),
        ((sid, g, ids[c], *n) for (g, c), n in agg.per_generation.items()),
    )
    insert(conn, "snapshots_calltreenode", CALLTREE_COLUMNS, call_tree_rows(sid, prep, agg))
    insert(
        conn,
        "snapshots_generation",
        ("snapshot_id", "index", "name", "at_ms", "growth_bytes", "persistent"),
        ((sid, *mark) for mark in generation_growth(doc, agg)),
    )
    conn.executemany(
        "INSERT INTO snapshots_buildcategorytotal (build_id, category_id, persistent, "
        "persistent_bytes, transient, transient_bytes, snapshots) VALUES (?, ?, ?, ?, ?, ?, 1) "
        "ON CONFLICT (build_id, category_id) DO UPDATE SET "
        + ", ".join(
            f"{c} = snapshots_buildcategorytotal.{c} + excluded.{c}"
            for c in (*COUNTERS, "snapshots")
        ),
        sorted((BUILD_ID, ids[c], *n) for c, n in agg.per_category.items()),
    )
    conn.execute("COMMIT")
    conn.close()
    timer.lap("store")
    return {
        "side": "reference",
        "database": "sqlite",
        "file": str(path),
        "phases": timer.phases,
        "total": timer.total,
        "peak_rss": peak_rss_bytes(),
        "rows": len(doc["allocations"]),
        "snapshot_id": sid,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--db", type=Path, default=Path("var/bench/reference.sqlite3"))
    parser.add_argument("--reset", action="store_true", help="drop and recreate the tables")
    args = parser.parse_args(argv)
    args.db.parent.mkdir(parents=True, exist_ok=True)
    if args.reset:
        conn = connect(args.db)
        reset_tables(conn)
        conn.close()
    report(ingest(args.file, args.db))
    return 0


if __name__ == "__main__":
    sys.exit(main())
