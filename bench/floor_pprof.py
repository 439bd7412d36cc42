"""The bare floor of storing a pprof heap profile so that its call tree can be shown (issue 36):
read and gunzip it (ISA-L), decode it and make its frame table, stack tree and rows (memdash's
own pure decoder and conversion, the fastest there is here: numpy over the protobuf's bytes),
work out each stack node's inclusive totals (memdash's own pure passes, a depth level at a
time), and binary-COPY the
frames, the stack nodes, the call tree and the rows into four tables without any index — no
Django, no validation, no ids kept across uploads, no categories or follow-up work.

`go tool pprof -top` does less (flat and cumulative per function, no tree kept), so this floor's
multiple of it says how far under it any importer that keeps the tree can go on this machine.

    python bench/floor_pprof.py FILE.pb.gz --dsn postgresql://postgres@127.0.0.1:5432/md_floor

Prints one JSON line: phases (read, decode, totals, store), total seconds, peak RSS, counts.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from isal import igzip

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import emit, peak_rss_bytes  # noqa: E402

from memdash.allocations.logic.columns import by_depth, depths, inclusive_sums  # noqa: E402
from memdash.core.logic.rows import ArrayRows, binary_copy_data  # noqa: E402
from memdash.ingest.logic.pprof import convert  # noqa: E402
from memdash.ingest.logic.pprof.columns import decode  # noqa: E402

TABLES = {
    "floor_frame": "id bigint, image bigint, address bigint, symbol text, file text, line bigint",
    "floor_node": "id bigint, parent bigint, frame bigint",
    "floor_tree": "node bigint, parent bigint, "
    + ", ".join(f"{kind}{c} bigint" for kind in ("", "self_") for c in ("p", "pb", "t", "tb")),
    "floor_row": "category bigint, stack bigint, p bigint, pb bigint, t bigint, tb bigint",
}


def copy_arrays(cur: psycopg.Cursor[Any], table: str, columns: list[Any]) -> None:
    types = ["bigint"] * len(columns)
    with cur.copy(f"COPY {table} FROM STDIN (FORMAT BINARY)") as copy:
        for block in binary_copy_data(ArrayRows(columns), types):
            copy.write(block)


def measure(file: Path, dsn: str) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table, columns in TABLES.items():
            conn.execute(f"DROP TABLE IF EXISTS {table}")
            conn.execute(f"CREATE TABLE {table} ({columns})")
    phases: dict[str, float] = {}
    started = clock = time.perf_counter()
    data = igzip.decompress(file.read_bytes())
    phases["read"] = time.perf_counter() - clock
    clock = time.perf_counter()
    content = convert.heap_content(decode(data))
    del data
    phases["decode"] = time.perf_counter() - clock
    clock = time.perf_counter()
    parents, counts = content.stack_parents, content.row_counts
    own = np.zeros((len(parents), 4), np.int64)
    has_stack = content.row_stack >= 0
    np.add.at(own, content.row_stack[has_stack], counts[has_stack])
    touched = np.zeros(len(parents), np.bool_)
    touched[content.row_stack[has_stack]] = True
    inclusive, reached = inclusive_sums(parents, by_depth(depths(parents)), own, touched)
    kept = np.flatnonzero(reached)
    phases["totals"] = time.perf_counter() - clock
    clock = time.perf_counter()
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        with cur.copy("COPY floor_frame FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["bigint", "bigint", "bigint", "text", "text", "bigint"])
            for i, (image, address, symbol, source, line) in enumerate(content.frame_table):
                copy.write_row((i, image, address, symbol, source, line))
        node_parent = np.ma.masked_less(parents, 0)
        copy_arrays(cur, "floor_node", [np.arange(len(parents)), node_parent, content.stack_frames])
        tree = [kept, node_parent[kept]]
        tree += [inclusive[kept, c] for c in range(4)] + [own[kept, c] for c in range(4)]
        copy_arrays(cur, "floor_tree", tree)
        rows = [content.row_category, np.ma.masked_less(content.row_stack, 0)]
        copy_arrays(cur, "floor_row", rows + [counts[:, c] for c in range(4)])
        conn.commit()
    phases["store"] = time.perf_counter() - clock
    return {
        "side": "floor",
        "file": str(file),
        "phases": phases,
        "total": time.perf_counter() - started,
        "peak_rss": peak_rss_bytes(),
        "frames": len(content.frame_table),
        "stack_nodes": len(parents),
        "tree_nodes": len(kept),
        "rows": len(counts),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--dsn", required=True, help="PostgreSQL connection string")
    args = parser.parse_args(argv)
    emit(measure(args.file, args.dsn))
    return 0


if __name__ == "__main__":
    sys.exit(main())
