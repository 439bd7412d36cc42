"""The bare PostgreSQL reference: read, gunzip, parse with orjson, COPY into tables equivalent to
memdash's — no Django, no validation. memdash's own ingest is measured against it (issue 8).

    python bench/reference_pg.py FILE.json.gz --dsn postgresql://postgres@127.0.0.1:5432/md_bench_ref

Prints one JSON line: phases (read, parse, prepare, store), total seconds, peak RSS, row counts.
`--reset` drops and recreates the tables first (not timed).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import orjson
import psycopg

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


def quoted(columns: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f'"{c}"' for c in columns)


def reset_tables(conn: psycopg.Connection) -> None:
    with conn.cursor() as cur:
        for table in TABLES:
            cur.execute(f'DROP TABLE IF EXISTS "{table}" CASCADE')
        for statement in create_table_sql("postgresql"):
            cur.execute(statement)
    conn.commit()


def pg_types(table: str, columns: tuple[str, ...]) -> list[str]:
    """Column types for a binary COPY (what memdash's bulk loader uses too)."""
    declared = dict(TABLES[table.removeprefix("tmp_")])
    return [
        declared[c].removesuffix(" null").split("(")[0].replace("serial", "bigint") for c in columns
    ]


def copy(cur: psycopg.Cursor, table: str, columns: tuple[str, ...], rows) -> None:
    with cur.copy(f'COPY "{table}" ({quoted(columns)}) FROM STDIN (FORMAT BINARY)') as out:
        out.set_types(pg_types(table, columns))
        for row in rows:
            out.write_row(row)


def copy_ignoring_existing(cur: psycopg.Cursor, table: str, columns: tuple[str, ...], rows) -> None:
    """Hash-keyed rows (frames, nodes) are stored once per app: COPY to a temporary table, then
    insert what is not there yet."""
    tmp = f"tmp_{table}"
    cur.execute(
        f'CREATE TEMP TABLE IF NOT EXISTS "{tmp}" (LIKE "{table}" INCLUDING DEFAULTS) '
        "ON COMMIT DELETE ROWS"
    )
    copy(cur, tmp, columns, rows)
    cols = quoted(columns)
    cur.execute(f'INSERT INTO "{table}" ({cols}) SELECT {cols} FROM "{tmp}" ON CONFLICT DO NOTHING')


def category_ids(cur: psycopg.Cursor, names: list[str]) -> dict[str, int]:
    cur.execute(
        "INSERT INTO snapshots_category (app_id, name, kind) "
        "SELECT %s, n, k FROM unnest(%s::text[], %s::text[]) AS t(n, k) ON CONFLICT DO NOTHING",
        [APP_ID, names, [category_kind(n) for n in names]],
    )
    cur.execute(
        "SELECT name, id FROM snapshots_category WHERE app_id = %s AND name = ANY(%s)",
        [APP_ID, names],
    )
    return dict(cur.fetchall())


def ingest(path: Path, dsn: str) -> dict[str, Any]:
    timer = Timer()
    doc = read_and_parse(path, timer)
    prep = prepare_frames_and_nodes(doc, APP_ID)
    agg = aggregate(doc)
    responsible = responsible_callers(prep, agg)
    timer.lap("prepare")
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute(
            "INSERT INTO snapshots_snapshot (app_id, build_id, source_format, session_id, "
            "captured_at, trigger, device_model, os, threads, created_at, persistent, "
            "persistent_bytes, transient, transient_bytes, row_count, category_count, "
            "stack_node_count, event_count, unmatched_frees, replaced_live_blocks, table_summary) "
            "VALUES "
            "(%s, %s, 'memdash.snapshot', %s, %s, %s, %s, %s, %s, now(), %s, %s, %s, %s, %s, "
            "%s, %s, 0, 0, 0, %s) RETURNING id",
            [
                APP_ID,
                BUILD_ID,
                doc.get("session") or "",
                doc["captured_at"],
                doc.get("trigger") or "manual",
                (doc.get("device") or {}).get("model", ""),
                (doc.get("device") or {}).get("os", ""),
                orjson.dumps(doc.get("threads") or []).decode(),
                *agg.totals,
                len(doc["allocations"]),
                len(agg.per_category),
                len(prep.nodes),
                orjson.dumps(table_summary(agg.per_category)).decode(),
            ],
        )
        sid = cur.fetchone()[0]
        ids = category_ids(cur, sorted(agg.per_category))
        copy_ignoring_existing(cur, "snapshots_frame", FRAME_COLUMNS, prep.frames)
        copy_ignoring_existing(cur, "snapshots_stacknode", NODE_COLUMNS, prep.nodes)
        copy(cur, "snapshots_allocationrow", ROW_COLUMNS, allocation_rows(sid, doc, prep, ids))
        copy(
            cur,
            "snapshots_categorytotal",
            ("snapshot_id", "category_id", "responsible_caller", *COUNTERS),
            ((sid, ids[c], responsible.get(c, ""), *n) for c, n in agg.per_category.items()),
        )
        copy(
            cur,
            "snapshots_generationcategorytotal",
            ("snapshot_id", "generation", "category_id", *COUNTERS),
            ((sid, g, ids[c], *n) for (g, c), n in agg.per_generation.items()),
        )
        copy(cur, "snapshots_calltreenode", CALLTREE_COLUMNS, call_tree_rows(sid, prep, agg))
        cur.executemany(
            "INSERT INTO snapshots_generation (snapshot_id, index, name, at_ms, growth_bytes, "
            "persistent) VALUES (%s, %s, %s, %s, %s, %s)",
            [(sid, *mark) for mark in generation_growth(doc, agg)],
        )
        cur.executemany(
            "INSERT INTO snapshots_buildcategorytotal (build_id, category_id, persistent, "
            "persistent_bytes, transient, transient_bytes, snapshots) "
            "VALUES (%s, %s, %s, %s, %s, %s, 1) ON CONFLICT (build_id, category_id) DO UPDATE SET "
            + ", ".join(
                f"{c} = snapshots_buildcategorytotal.{c} + excluded.{c}"
                for c in (*COUNTERS, "snapshots")
            ),
            sorted((BUILD_ID, ids[c], *n) for c, n in agg.per_category.items()),
        )
        conn.commit()
    timer.lap("store")
    return {
        "side": "reference",
        "database": "postgresql",
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
    parser.add_argument(
        "--dsn",
        default=os.environ.get(
            "REFERENCE_DSN", "postgresql://postgres@127.0.0.1:5432/md_bench_ref"
        ),
    )
    parser.add_argument("--reset", action="store_true", help="drop and recreate the tables")
    args = parser.parse_args(argv)
    if args.reset:
        with psycopg.connect(args.dsn) as conn:
            reset_tables(conn)
    report(ingest(args.file, args.dsn))
    return 0


if __name__ == "__main__":
    sys.exit(main())
