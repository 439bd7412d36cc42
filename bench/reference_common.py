"""What the bare reference scripts share: read, gunzip, parse, and turn a memdash.snapshot v1
document into the rows of memdash's tables — with no framework and no validation.

This is the floor memdash's own ingest is measured against (issue 8): the least work a script
must do to fill tables equivalent to memdash's (same columns, same indexes, the same 64-bit hash
ids for frames and stack nodes, the same pre-aggregated category, generation and call-tree
totals). It trusts its input: the generator's rows are already unique by (category, stack,
thread, generation), so it does not merge them, and it checks nothing. Named frames are keyed by
function (symbol, image) as memdash keys them; the generator calls each function from one place
on its stacks, so no two stack nodes merge over them and the nodes need no merging either.

No Django here (the scripts must run without it); `tests/bench` checks that the tables below
still match memdash's models.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import resource
import struct
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

COUNTERS = ("persistent", "persistent_bytes", "transient", "transient_bytes")

# Tables equivalent to memdash's (memdash/snapshots/models.py), as Django names them; the
# indexes are those of the models (foreign keys are indexed even without a constraint).
TABLES: dict[str, list[tuple[str, str]]] = {
    "snapshots_category": [
        ("id", "serial"),
        ("app_id", "bigint"),
        ("name", "text"),
        ("kind", "varchar(8)"),
    ],
    "snapshots_frame": [
        ("id", "bigint"),
        ("app_id", "bigint"),
        ("symbol", "text"),
        ("image", "text"),
        ("offset", "bigint null"),
        ("address", "bigint null"),
        ("file", "text"),
        ("line", "integer null"),
        ("is_system", "boolean"),
        ("inlined", "boolean"),
    ],
    "snapshots_stacknode": [
        ("id", "bigint"),
        ("app_id", "bigint"),
        ("parent_id", "bigint null"),
        ("frame_id", "bigint"),
        ("depth", "integer"),
    ],
    "snapshots_snapshot": [
        ("id", "serial"),
        ("app_id", "bigint"),
        ("build_id", "bigint"),
        ("device_id", "bigint null"),
        ("upload_id", "bigint null"),
        ("source_format", "varchar(40)"),
        ("session_id", "varchar(200)"),
        ("captured_at", "timestamptz"),
        ("trigger", "varchar(20)"),
        ("device_model", "varchar(128)"),
        ("os", "varchar(128)"),
        ("threads", "jsonb"),
        ("created_at", "timestamptz"),
        ("persistent", "bigint"),
        ("persistent_bytes", "bigint"),
        ("transient", "bigint"),
        ("transient_bytes", "bigint"),
        ("row_count", "integer"),
        ("category_count", "integer"),
        ("stack_node_count", "integer"),
        ("event_count", "integer"),
        ("unmatched_frees", "integer"),
        ("replaced_live_blocks", "integer"),
        ("rows_pruned_at", "timestamptz null"),
        ("table_summary", "jsonb"),
        # symbolication's bookkeeping (written by memdash after ingest; left empty here)
        ("symbols_version", "integer null"),
        ("unsymbolicated_bytes", "bigint null"),
        ("frame_identity", "integer null"),
    ],
    "snapshots_generation": [
        ("id", "serial"),
        ("snapshot_id", "bigint"),
        ("index", "integer"),
        ("name", "varchar(255)"),
        ("at_ms", "bigint"),
        ("growth_bytes", "bigint"),
        ("persistent", "bigint"),
    ],
    "snapshots_allocationrow": [
        ("id", "serial"),
        ("persistent", "bigint"),
        ("persistent_bytes", "bigint"),
        ("transient", "bigint"),
        ("transient_bytes", "bigint"),
        ("snapshot_id", "bigint"),
        ("category_id", "bigint"),
        ("stack_id", "bigint null"),
        ("thread", "integer null"),
        ("generation", "integer null"),
    ],
    "snapshots_categorytotal": [
        ("id", "serial"),
        ("persistent", "bigint"),
        ("persistent_bytes", "bigint"),
        ("transient", "bigint"),
        ("transient_bytes", "bigint"),
        ("snapshot_id", "bigint"),
        ("category_id", "bigint"),
        ("responsible_caller", "text"),
        ("responsible_frame_id", "bigint null"),
        ("total_bytes", "stored persistent_bytes + transient_bytes"),
    ],
    "snapshots_generationcategorytotal": [
        ("id", "serial"),
        ("persistent", "bigint"),
        ("persistent_bytes", "bigint"),
        ("transient", "bigint"),
        ("transient_bytes", "bigint"),
        ("snapshot_id", "bigint"),
        ("generation", "integer null"),
        ("category_id", "bigint"),
    ],
    "snapshots_calltreenode": [
        ("id", "serial"),
        ("persistent", "bigint"),
        ("persistent_bytes", "bigint"),
        ("transient", "bigint"),
        ("transient_bytes", "bigint"),
        ("snapshot_id", "bigint"),
        ("node_id", "bigint"),
        ("parent_id", "bigint null"),
        ("frame_id", "bigint"),
        ("self_persistent", "bigint"),
        ("self_persistent_bytes", "bigint"),
        ("self_transient", "bigint"),
        ("self_transient_bytes", "bigint"),
    ],
    "snapshots_buildcategorytotal": [
        ("id", "serial"),
        ("persistent", "bigint"),
        ("persistent_bytes", "bigint"),
        ("transient", "bigint"),
        ("transient_bytes", "bigint"),
        ("build_id", "bigint"),
        ("category_id", "bigint"),
        ("snapshots", "integer"),
    ],
}

# (name, table, columns, unique)
INDEXES: list[tuple[str, str, tuple[str, ...], bool]] = [
    ("category_identity", "snapshots_category", ("app_id", "name"), True),
    ("ref_category_app", "snapshots_category", ("app_id",), False),
    ("ref_frame_app", "snapshots_frame", ("app_id",), False),
    ("ref_stacknode_app", "snapshots_stacknode", ("app_id",), False),
    ("ref_snapshot_app", "snapshots_snapshot", ("app_id",), False),
    ("ref_snapshot_build", "snapshots_snapshot", ("build_id",), False),
    ("ref_snapshot_device", "snapshots_snapshot", ("device_id",), False),
    ("ref_snapshot_upload", "snapshots_snapshot", ("upload_id",), False),
    ("ref_snapshot_session", "snapshots_snapshot", ("session_id",), False),
    ("snapshot_build_time", "snapshots_snapshot", ("build_id", "captured_at"), False),
    ("generation_identity", "snapshots_generation", ("snapshot_id", "index"), True),
    ("ref_generation_snapshot", "snapshots_generation", ("snapshot_id",), False),
    ("allocrow_snap_cat", "snapshots_allocationrow", ("snapshot_id", "category_id"), False),
    ("ref_cattotal_category", "snapshots_categorytotal", ("category_id",), False),
    ("cattotal_snap_cat", "snapshots_categorytotal", ("snapshot_id", "category_id"), False),
    ("cattotal_snap_size", "snapshots_categorytotal", ("snapshot_id", "total_bytes"), False),
    ("ref_gentotal_category", "snapshots_generationcategorytotal", ("category_id",), False),
    (
        "gentotal_snap_gen",
        "snapshots_generationcategorytotal",
        ("snapshot_id", "generation"),
        False,
    ),
    ("calltree_snap_parent", "snapshots_calltreenode", ("snapshot_id", "parent_id"), False),
    ("ref_buildcat_build", "snapshots_buildcategorytotal", ("build_id",), False),
    ("ref_buildcat_category", "snapshots_buildcategorytotal", ("category_id",), False),
    ("buildcat_identity", "snapshots_buildcategorytotal", ("build_id", "category_id"), True),
]

HASH_KEYED = {"snapshots_frame", "snapshots_stacknode"}  # primary key given, not generated


def column_type(sql_type: str, dialect: str) -> str:
    """The column type in `dialect` ("postgresql" or "sqlite"); NOT NULL unless it says null."""
    if sql_type.startswith("stored "):  # a generated column, computed by the database
        return f"bigint GENERATED ALWAYS AS ({sql_type.removeprefix('stored ')}) STORED"
    nullable = sql_type.endswith(" null")
    base = sql_type.removesuffix(" null")
    if dialect == "sqlite":
        base = {
            "serial": "integer",
            "bigint": "bigint",
            "integer": "integer",
            "timestamptz": "datetime",
            "boolean": "bool",
            "jsonb": "text",
        }.get(base, base)
    else:
        base = {"serial": "bigint generated by default as identity"}.get(base, base)
    return base if nullable else f"{base} NOT NULL"


def create_table_sql(dialect: str) -> list[str]:
    statements = []
    for table, columns in TABLES.items():
        parts = []
        for name, sql_type in columns:
            definition = f'"{name}" {column_type(sql_type, dialect)}'
            if name == "id":
                definition += (
                    " PRIMARY KEY AUTOINCREMENT"
                    if dialect == "sqlite" and table not in HASH_KEYED
                    else " PRIMARY KEY"
                )
            parts.append(definition)
        statements.append(f'CREATE TABLE IF NOT EXISTS "{table}" ({", ".join(parts)})')
    for name, table, columns, unique in INDEXES:
        cols = ", ".join(f'"{c}"' for c in columns)
        kind = "UNIQUE INDEX" if unique else "INDEX"
        statements.append(f'CREATE {kind} IF NOT EXISTS "{name}" ON "{table}" ({cols})')
    if dialect == "postgresql":  # Django adds a LIKE index to an indexed varchar on PostgreSQL
        statements.append(
            'CREATE INDEX IF NOT EXISTS "ref_snapshot_session_like" ON "snapshots_snapshot" '
            '("session_id" varchar_pattern_ops)'
        )
    return statements


# ---------------------------------------------------------------------------------------------
# Read and parse


@dataclass
class Timer:
    phases: dict[str, float] = field(default_factory=dict)
    _last: float = field(default_factory=time.perf_counter)
    started: float = field(default_factory=time.perf_counter)

    def lap(self, phase: str) -> None:
        now = time.perf_counter()
        self.phases[phase] = self.phases.get(phase, 0.0) + now - self._last
        self._last = now

    @property
    def total(self) -> float:
        return time.perf_counter() - self.started


def read_and_parse(path: Path, timer: Timer) -> dict[str, Any]:
    data = path.read_bytes()
    timer.lap("read")
    raw = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    del data
    doc = orjson.loads(raw)
    del raw
    timer.lap("parse")
    return doc


# ---------------------------------------------------------------------------------------------
# Turning the document into rows


def hash64(*parts: object) -> int:
    """The same stable signed 64-bit id memdash gives frames and stack nodes."""
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return struct.unpack("<q", digest)[0]


def address_value(value: Any) -> int | None:
    if value is None or type(value) is int:
        return value
    return int(value, 16)


@dataclass
class Prepared:
    # (id, app_id, symbol, image, offset, address, file, line, is_system, inlined)
    frames: list[tuple]
    frame_system: list[bool]
    nodes: list[tuple]  # (id, app_id, parent_id, frame_id, depth)
    node_ids: list[int]
    frame_ids: list[int]
    parents: list[int | None]
    node_frames: list[int]


def prepare_frames_and_nodes(doc: dict[str, Any], app_id: int) -> Prepared:
    images = [
        (image["name"], address_value(image.get("load_address")), bool(image.get("system")))
        for image in doc.get("images") or []
    ]
    frames: list[tuple] = []
    frame_ids: list[int] = []
    frame_system: list[bool] = []
    for frame in doc.get("frames") or []:
        if type(frame) is str:
            symbol, image, offset, address, file, line, system = (
                frame,
                "",
                None,
                None,
                "",
                None,
                False,
            )
        else:
            symbol = frame.get("symbol") or ""
            file = frame.get("file") or ""
            line = frame.get("line")
            address = address_value(frame.get("address"))
            image, offset, system = "", None, False
            if frame.get("image") is not None:
                image, load, system = images[frame["image"]]
                if address is not None and load is not None:
                    offset, address = address - load, None
        if symbol:  # a named frame is its function's frame (memdash's FRAME_IDENTITY 1)
            offset = address = None
            fid = hash64("f", app_id, symbol, image, None, None, "", None)
        else:
            fid = hash64("f", app_id, symbol, image, offset, address, file, line)
        frame_ids.append(fid)
        frame_system.append(system)
        frames.append((fid, app_id, symbol, image, offset, address, file, line, system, False))
    node_ids: list[int] = []
    depths: list[int] = []
    parents: list[int | None] = []
    node_frames: list[int] = []
    nodes: list[tuple] = []
    for parent, frame in doc.get("stacks") or []:
        parent_hash = node_ids[parent] if parent is not None else 0
        nid = hash64("n", app_id, parent_hash, frame_ids[frame])
        depth = depths[parent] + 1 if parent is not None else 0
        nodes.append(
            (nid, app_id, node_ids[parent] if parent is not None else None, frame_ids[frame], depth)
        )
        node_ids.append(nid)
        depths.append(depth)
        parents.append(parent)
        node_frames.append(frame)
    return Prepared(frames, frame_system, nodes, node_ids, frame_ids, parents, node_frames)


def row_tuples(doc: dict[str, Any]) -> Iterator[tuple]:
    """(category, stack, thread, generation, p, pb, t, tb) per allocation row."""
    for row in doc["allocations"]:
        yield (
            row["category"],
            row.get("stack"),
            row.get("thread"),
            row.get("generation"),
            row.get("persistent", 0),
            row.get("persistent_bytes", 0),
            row.get("transient", 0),
            row.get("transient_bytes", 0),
        )


def category_kind(name: str) -> str:
    return "vm" if name.startswith("VM: ") else "heap"


def table_summary(per_category: dict[str, list[int]]) -> dict:
    """Per lifespan and kind, [categories, p, pb, t, tb] of the categories left under it."""
    kept = {"all": (1, 1, 1, 1), "persistent": (1, 1, 0, 0), "transient": (0, 0, 1, 1)}
    out = {lifespan: {"heap": [0] * 5, "vm": [0] * 5} for lifespan in kept}
    for name, counts in per_category.items():
        for lifespan, mask in kept.items():
            values = [c * m for c, m in zip(counts, mask, strict=True)]
            if any(values):
                acc = out[lifespan][category_kind(name)]
                acc[0] += 1
                for k in range(4):
                    acc[k + 1] += values[k]
    return out


@dataclass
class Aggregates:
    per_category: dict[str, list[int]]
    per_generation: dict[tuple[int | None, str], list[int]]
    heaviest: dict[str, tuple[int, int]]  # category -> (bytes, stack)
    node_self: dict[int, list[int]]  # node index -> [p, pb, t, tb]
    totals: list[int]


def aggregate(doc: dict[str, Any]) -> Aggregates:
    """One pass over the rows: generation x category totals (the category totals and the
    snapshot's follow from them), per-node totals and bytes per (category, stack)."""
    per_generation: dict[tuple[int | None, str], list[int]] = {}
    by_stack: dict[tuple[str, int], int] = {}
    node_self: dict[int, list[int]] = {}
    gen_get, stack_get, node_get = per_generation.get, by_stack.get, node_self.get
    for row in doc["allocations"]:
        get = row.get
        cat = row["category"]
        stack = get("stack")
        p = get("persistent", 0)
        pb = get("persistent_bytes", 0)
        t = get("transient", 0)
        tb = get("transient_bytes", 0)
        key = (get("generation"), cat)
        acc = gen_get(key)
        if acc is None:
            per_generation[key] = [p, pb, t, tb]
        else:
            acc[0] += p
            acc[1] += pb
            acc[2] += t
            acc[3] += tb
        if stack is not None:
            key2 = (cat, stack)
            by_stack[key2] = stack_get(key2, 0) + pb + tb
            acc = node_get(stack)
            if acc is None:
                node_self[stack] = [p, pb, t, tb]
            else:
                acc[0] += p
                acc[1] += pb
                acc[2] += t
                acc[3] += tb
    per_category: dict[str, list[int]] = {}
    totals = [0, 0, 0, 0]
    for (_, cat), counts in per_generation.items():
        acc = per_category.setdefault(cat, [0, 0, 0, 0])
        for k in range(4):
            acc[k] += counts[k]
            totals[k] += counts[k]
    heaviest: dict[str, tuple[int, int]] = {}
    for (cat, stack), size in by_stack.items():
        best = heaviest.get(cat)
        if best is None or size > best[0]:
            heaviest[cat] = (size, stack)
    return Aggregates(per_category, per_generation, heaviest, node_self, totals)


def responsible_callers(prep: Prepared, agg: Aggregates) -> dict[str, str]:
    """Per category, the label of the first app frame up its heaviest stack (symbol, else
    `image + 0xoffset`), as memdash stores it for the statistics table."""
    result: dict[str, str] = {}
    for cat, (_, stack) in agg.heaviest.items():
        node: int | None = stack
        found = ""
        while node is not None:
            frame = prep.node_frames[node]
            if not prep.frame_system[frame]:
                found = frame_label(*prep.frames[frame][2:6])
                break
            node = prep.parents[node]
        result[cat] = found
    return result


def frame_label(symbol: str, image: str, offset: int | None, address: int | None) -> str:
    if symbol:
        return symbol
    if image and offset is not None:
        return f"{image} + 0x{offset:x}"
    if image and address is not None:
        return f"{image} + 0x{address:x}"
    return f"0x{address:x}" if address is not None else "<unknown>"


def call_tree_rows(snapshot_id: int, prep: Prepared, agg: Aggregates) -> Iterator[tuple]:
    """Inclusive totals per node (children come after parents, so one reverse pass)."""
    inclusive: dict[int, list[int]] = {n: list(c) for n, c in agg.node_self.items()}
    parents = prep.parents
    for node in range(len(parents) - 1, -1, -1):
        counts = inclusive.get(node)
        parent = parents[node]
        if counts is None or parent is None:
            continue
        up = inclusive.get(parent)
        if up is None:
            inclusive[parent] = list(counts)
        else:
            up[0] += counts[0]
            up[1] += counts[1]
            up[2] += counts[2]
            up[3] += counts[3]
    zero = (0, 0, 0, 0)
    node_ids, frame_ids, node_frames = prep.node_ids, prep.frame_ids, prep.node_frames
    for node, (p, pb, t, tb) in inclusive.items():
        own = agg.node_self.get(node, zero)
        parent = parents[node]
        yield (
            snapshot_id,
            node_ids[node],
            node_ids[parent] if parent is not None else None,
            frame_ids[node_frames[node]],
            p,
            pb,
            t,
            tb,
            own[0],
            own[1],
            own[2],
            own[3],
        )


def allocation_rows(
    snapshot_id: int, doc: dict[str, Any], prep: Prepared, category_ids: dict[str, int]
) -> Iterator[tuple]:
    node_ids = prep.node_ids
    for cat, stack, thread, gen, p, pb, t, tb in row_tuples(doc):
        yield (
            snapshot_id,
            category_ids[cat],
            node_ids[stack] if stack is not None else None,
            thread,
            gen,
            p,
            pb,
            t,
            tb,
        )


ROW_COLUMNS = (
    "snapshot_id",
    "category_id",
    "stack_id",
    "thread",
    "generation",
    *COUNTERS,
)
CALLTREE_COLUMNS = (
    "snapshot_id",
    "node_id",
    "parent_id",
    "frame_id",
    *COUNTERS,
    *(f"self_{c}" for c in COUNTERS),
)
FRAME_COLUMNS = (
    "id",
    "app_id",
    "symbol",
    "image",
    "offset",
    "address",
    "file",
    "line",
    "is_system",
    "inlined",
)
NODE_COLUMNS = ("id", "app_id", "parent_id", "frame_id", "depth")


def generation_growth(doc: dict[str, Any], agg: Aggregates) -> list[tuple]:
    """(index, name, at_ms, growth_bytes, persistent) per generation mark."""
    growth: dict[int, list[int]] = {}
    for (gen, _), counts in agg.per_generation.items():
        if gen is not None:
            acc = growth.setdefault(gen, [0, 0])
            acc[0] += counts[1]
            acc[1] += counts[0]
    marks = []
    for i, mark in enumerate(doc.get("generations") or []):
        bytes_, count = growth.get(i, [0, 0])
        marks.append(
            (i, mark.get("name") or f"Generation {i + 1}", round(mark["at_ms"]), bytes_, count)
        )
    return marks


# ---------------------------------------------------------------------------------------------
# Reporting


def peak_rss_bytes() -> int:
    """The process's peak resident set size (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def report(result: dict[str, Any]) -> None:
    """One JSON line on stdout: what the bench harness reads."""
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
