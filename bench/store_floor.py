"""The bare floor of storing a profile's stacks in PostgreSQL (issue 19's pprof target): what any
importer that keeps the stacks for pages to read must at least write, with psycopg alone.

Given the counts memdash stored for a profile (sample rows, stack nodes), binary-COPY made-up
rows of those counts, built with numpy, into empty tables that have only the index a page needs:

- stack nodes (`id` bigint primary key, parent, frame, depth), in id order;
- the call tree's nodes (snapshot, node, parent, frame and eight counters), indexed by
  (snapshot, parent) as the call-tree pages read it, in parent order;
- the sample rows (snapshot, category, stack, thread, generation and four counters), no index.

One transaction, committed without waiting for the disk (as memdash's own import), each COPY
timed. No file read, no decoding, no Django, no frames, totals or lookups: less than a real
import must do, so a target below this floor cannot be met by a store in PostgreSQL.

    python bench/store_floor.py --dsn postgresql://… --rows 54669 --nodes 195257

Prints one JSON line: seconds per table and for the commit, their total, and the counts.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import emit  # noqa: E402

COUNTERS = 4
TABLES = {
    "floor_stacknode": (
        "id bigint PRIMARY KEY, parent_id bigint, frame_id bigint, depth bigint",
        "",
    ),
    "floor_calltreenode": (
        "snapshot_id bigint, node_id bigint, parent_id bigint, frame_id bigint, "
        + ", ".join(f"c{i} bigint" for i in range(2 * COUNTERS)),
        "CREATE INDEX ON floor_calltreenode (snapshot_id, parent_id)",
    ),
    "floor_allocationrow": (
        "snapshot_id bigint, category_id bigint, stack_id bigint, thread bigint, "
        "generation bigint, " + ", ".join(f"c{i} bigint" for i in range(COUNTERS)),
        "",
    ),
}
HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)  # signature, flags, no extension
TRAILER = b"\xff\xff"


def copy_data(columns: list[np.ndarray]) -> bytes:
    """PostgreSQL's binary COPY of int64 columns: per row the field count, then each field's
    length and big-endian value."""
    fields = [("n", ">i2")]
    for i in range(len(columns)):
        fields += [(f"l{i}", ">i4"), (f"v{i}", ">i8")]
    block = np.empty(len(columns[0]), dtype=np.dtype(fields))
    block["n"] = len(columns)
    for i, column in enumerate(columns):
        block[f"l{i}"] = 8
        block[f"v{i}"] = column
    return HEADER + block.tobytes() + TRAILER


def made_up(rows: int, nodes: int, seed: int = 19) -> dict[str, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    ids = np.sort(rng.integers(-(2**62), 2**62, nodes))
    parents = np.sort(rng.integers(-(2**62), 2**62, nodes))
    small = rng.integers(0, 1000, nodes)
    return {
        "floor_stacknode": [ids, rng.permutation(ids), small, small % 64],
        "floor_calltreenode": [np.ones(nodes, np.int64), ids, parents, small]
        + [small] * (2 * COUNTERS),
        "floor_allocationrow": [np.ones(rows, np.int64), rng.integers(0, 5000, rows)]
        + [rng.choice(ids, rows), np.ones(rows, np.int64), np.zeros(rows, np.int64)]
        + [rng.integers(1, 4096, rows)] * COUNTERS,
    }


def measure(dsn: str, rows: int, nodes: int) -> dict[str, Any]:
    data = {name: copy_data(columns) for name, columns in made_up(rows, nodes).items()}
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name, (columns, index) in TABLES.items():
            conn.execute(f"DROP TABLE IF EXISTS {name}")
            conn.execute(f"CREATE TABLE {name} ({columns})")
            if index:
                conn.execute(index)
        conn.execute("CHECKPOINT")
        seconds: dict[str, float] = {}
        started = time.perf_counter()
        with conn.transaction():
            conn.execute("SET LOCAL synchronous_commit = off")
            for name, payload in data.items():
                at = time.perf_counter()
                with conn.cursor().copy(f"COPY {name} FROM STDIN (FORMAT BINARY)") as copy:
                    copy.write(payload)
                seconds[name] = time.perf_counter() - at
            at = time.perf_counter()
        seconds["commit"] = time.perf_counter() - at
        total = time.perf_counter() - started
        for name in TABLES:
            conn.execute(f"DROP TABLE {name}")
    return {"seconds": seconds, "total_seconds": total, "rows": rows, "nodes": nodes}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--nodes", type=int, required=True)
    args = parser.parse_args(argv)
    emit(measure(args.dsn, args.rows, args.nodes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
