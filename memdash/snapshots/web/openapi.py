"""What the snapshots API answers, as JSON Schema for its OpenAPI document (`core.web.schema`)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter

from memdash.core.logic.numbers import MAX_INT32
from memdash.core.web.schema import (
    BOOL,
    DATETIME,
    INT,
    NUMBER,
    OBJECT,
    PAGE_FIELDS,
    STR,
    Schema,
    array,
    nullable,
    number_pattern,
    obj,
)
from memdash.symbols.web.openapi import DEBUG_FILE, SYMBOLICATION_JOB

# allocations.analysis.generation_index
GENERATION_PARAMETER = OpenApiParameter(
    "generation",
    {"type": "string", "pattern": f"^(?:baseline|null|{number_pattern(MAX_INT32)})$"},
    description="a generation index, or `baseline` (before the first mark)",
)

RANGE_PARAMETERS = [
    OpenApiParameter(
        name,
        {"type": "string", "pattern": r"^-?[0-9]{1,18}(\.[0-9]{1,9})?$"},
        description=f"{what} of the time range (ms on the upload's clock; Instruments' inspection "
        "range): only the allocations made in it, to whole time buckets of the snapshot's "
        "timeline (404 for a snapshot without one, or a range outside its run)",
    )
    for name, what in (("from_ms", "the start (default: the run's)"), ("to_ms", "the end"))
]

BUILD = obj(
    {
        "id": INT,
        "version": STR,
        "number": STR,
        "commit": STR,
        "snapshots": INT,
        "last_upload": nullable(DATETIME),
        "median_persistent_bytes": INT,
    }
)
SNAPSHOT = obj(
    {
        "id": INT,
        "app": INT,
        "build": obj({"version": STR, "number": STR}),
        "device": obj({"id": STR, "model": STR, "os": STR}),
        "session": STR,
        "captured_at": DATETIME,
        "trigger": STR,
        "threads": array(STR),
        "persistent": INT,
        "persistent_bytes": INT,
        "transient": INT,
        "transient_bytes": INT,
        "rows": INT,
        "categories": INT,
        "events": INT,
        "unmatched_frees": INT,
        "replaced_live_blocks": INT,
        "url": STR,
    },
    optional={
        "source_format": STR,
        "tool_figures": array(obj({"label": STR, "value": NUMBER, "unit": STR})),
    },
)
STATISTICS_ROW = obj(
    {
        "category": STR,
        "kind": STR,
        "persistent": NUMBER,
        "persistent_bytes": NUMBER,
        "transient": NUMBER,
        "transient_bytes": NUMBER,
        "total": NUMBER,
        "total_bytes": NUMBER,
        "responsible_caller": STR,
    },
    optional={
        "responsible_frame": nullable(OBJECT),
        "responsible_frame_id": nullable(INT),
        "median": OBJECT,
        "mean": OBJECT,
        "snapshots": INT,
    },
)
STATISTICS_FIELDS: dict[str, Schema] = {
    "summary": array(STATISTICS_ROW),
    **PAGE_FIELDS,
    "rows": array(STATISTICS_ROW),
}
# Only a snapshot's table is read for a time range (its timeline), and says which.
STATISTICS = obj(STATISTICS_FIELDS, optional={"range": obj({"from_ms": NUMBER, "to_ms": NUMBER})})
BUILD_STATISTICS = obj(
    {
        **STATISTICS_FIELDS,
        "snapshots": INT,
        "filters": obj({"trigger": STR, "model": STR, "os": STR}),
        # when the table shown was made ahead from other snapshots (being made again); else null
        "made_at": nullable(DATETIME),
    }
)
FRAME_FIELDS: dict[str, Schema] = {
    "symbol": STR,
    "image": STR,
    "kind": STR,
    "system": BOOL,
    "symbolicated": BOOL,
    "file": STR,
    "line": nullable(INT),
    "inlined": BOOL,
}
TREE_NODE = obj(
    {
        "id": STR,
        **FRAME_FIELDS,
        "bytes": INT,
        "count": INT,
        "self_bytes": INT,
        "self_count": INT,
        "has_children": BOOL,
        "percent": NUMBER,
        "match": BOOL,
    }
)
CALLTREE_PAGE = obj(
    {
        "node": nullable(STR),
        "children": array(TREE_NODE),
        "total": INT,
        "offset": INT,
        "limit": INT,
        "more": INT,
        "total_bytes": INT,
        "total_count": INT,
    }
)
# A build's tree read from the one made ahead (`allocations.reads.calltree.made`): made from how
# many snapshots (`kept`: those whose rows it was made from), when, and whether those are the
# filter's snapshots now (false: some were stored or deleted since, and it is being made again).
MADE_AHEAD = obj({"snapshots": INT, "kept": INT, "made_at": STR, "current": BOOL})
BUILD_CALLTREE_PAGE = obj(CALLTREE_PAGE["properties"], optional={"made_ahead": MADE_AHEAD})
GENERATION = obj(
    {
        "index": nullable(INT),
        "name": STR,
        "at_ms": nullable(INT),
        "growth_bytes": INT,
        "persistent": INT,
    }
)
# calltree_flame.flame_graph: one entry per drawn node in each array, plotly's icicle data.
FLAME = obj(
    {
        "ids": array(STR),
        "labels": array(STR),
        "parents": array(STR),
        "values": array(INT),
        "kinds": array(STR),
        "images": array(STR),
        "system": array(BOOL),
        "merged": array(INT),
        "symbolicated": array(BOOL),
        "file": array(STR),
        "line": array(nullable(INT)),
        "inlined": array(BOOL),
        "match": array(BOOL),
        "unit": STR,
        "nodes": INT,
        "total_bytes": INT,
        "total_count": INT,
    },
    # each node's own figure where `values` are not (remainders; the path above a focus)
    {"sizes": array(INT), "branchvalues": STR},
)
SANDWICH_SCHEMA = obj(
    {
        "function": obj(
            {
                "symbol": STR,
                "image": STR,
                "bytes": INT,
                "count": INT,
                "self_bytes": INT,
                "self_count": INT,
            }
        ),  # fmt: skip
        "callers": FLAME,
        "callees": FLAME,
        "total_bytes": INT,
        "total_count": INT,
    }
)
FUNCTIONS = obj(
    {
        "functions": array(
            obj(
                {
                    **FRAME_FIELDS,
                    "self_bytes": INT,
                    "self_count": INT,
                    "bytes": INT,
                    "count": INT,
                }
            )
        ),
        "total": INT,
        "offset": INT,
        "limit": INT,
        "more": INT,
    }
)
SNAPSHOT_SYMBOLS = obj(
    {
        "snapshot": INT,
        "unsymbolicated_bytes": INT,
        "share": NUMBER,
        "symbolication": array(SYMBOLICATION_JOB),
        "images": array(
            obj(
                {
                    "image": STR,
                    "debug_id": STR,
                    "arch": STR,
                    "system": BOOL,
                    "frames": INT,
                    "bytes": INT,
                    "snapshots": INT,
                    "debug_file": nullable(INT),
                }
            )
        ),
    }
)
DEBUG_FILES = obj({"debug_files": array(obj({**DEBUG_FILE["properties"], "builds": array(STR)}))})

# The Allocations List (`web.allocations`) and the whole stack of a row
STACK_FRAME = obj(
    {
        "node": STR,
        "label": STR,
        "symbol": STR,
        "image": STR,
        "file": STR,
        "line": nullable(INT),
        "system": BOOL,
        "inlined": BOOL,
    }
)
ALLOCATION_ENTRY = obj(
    {
        "row": INT,
        "snapshot": INT,
        # an events run's allocation (null for a row of another upload): its address
        # (hexadecimal), when it was made and freed (null: never), in ms on the upload's clock
        "address": nullable(STR),
        "made_ms": nullable(NUMBER),
        "freed_ms": nullable(NUMBER),
        "live": BOOL,
        "category": STR,
        "kind": STR,
        "count": INT,
        "size": INT,
        "thread": nullable(STR),
        "generation": nullable(INT),
        "generation_name": STR,
        "stack": nullable(STR),
        "responsible_caller": STR,
        "responsible_library": STR,
        "responsible_frame": nullable(STACK_FRAME),
    }
)
ALLOCATION_LIST = obj(
    {
        "sort": STR,
        "dir": STR,
        "next": nullable(STR),
        "previous": nullable(STR),
        "pruned_snapshots": array(INT),
        "rows": array(ALLOCATION_ENTRY),
    }
)
STACK = obj({"stack": STR, "frames": array(STACK_FRAME)})
