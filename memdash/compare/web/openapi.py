"""The compare API's parameters and answers, as JSON Schema for its OpenAPI document
(`core.web.schema`)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter

from memdash.compare.web.params import MAX_SEARCH
from memdash.core.logic.numbers import MAX_INT32, MAX_INT64, PERCENT_PATTERN
from memdash.core.web.schema import (
    BOOL,
    INT,
    NUMBER,
    OBJECT,
    PAGE_FIELDS,
    STR,
    Schema,
    array,
    int_parameter,
    nullable,
    number_pattern,
    obj,
)

# refs.resolve_ref: snapshot:<id>, generation:<id>[:<index>|:baseline], build:<version>[:<number>]
_ID = number_pattern(MAX_INT64)
_INDEX = f"(?:baseline|null|{number_pattern(MAX_INT32)})?"
REF: Schema = {
    "type": "string",
    "pattern": rf"^(?:snapshot:{_ID}:?|generation:{_ID}(?::{_INDEX})?|build:[^:\x00][^\x00]*)$",
}
SEARCH: Schema = {"type": "string", "maxLength": MAX_SEARCH}
REF_HELP = (
    "snapshot:<id>, generation:<snapshot id>:<index> (index `baseline` or empty: before the "
    "first mark) or build:<version>:<number> (of `app`)"
)
# refs.parse_build_spec: <version>:<number>, or <version> when the version has one build
BUILD_SPEC: Schema = {"type": "string", "pattern": r"^[^:\x00][^\x00]*$"}
# params.parse_min_delta: bytes, with a unit (blank: none)
MIN_DELTA: Schema = {
    "type": "string",
    "pattern": r"^\s*(?:\d+(?:\.\d+)?\s*(?:[Bb]|[KkMmGg][Ii]?[Bb])?)?\s*$",
}
# foom's parse_os_rate_limit: `band` or a percentage from 0% to 100% (blank: not asked)
OS_RATE_LIMIT: Schema = {"type": "string", "pattern": rf"^\s*(?:band|{PERCENT_PATTERN})?\s*$"}


def side_parameters(description: str = REF_HELP, schema: Schema = REF) -> list[OpenApiParameter]:
    return [
        OpenApiParameter(name, schema, required=True, description=description)
        for name in ("base", "target")
    ]


APP_PARAMETER = int_parameter(
    "app", 1, MAX_INT64, "the app of build refs (else the other side's, or yours that has it)"
)

SIDE = obj(
    {"ref": STR, "kind": {"type": "string", "enum": ["snapshot", "generation", "build"]}},
    optional={"label": STR, "url": STR, "snapshots": INT, "filters": OBJECT},
)
DIFF = obj(
    {
        "rows": array(
            obj(
                {
                    "category": STR,
                    "base_bytes": INT,
                    "target_bytes": INT,
                    "delta_bytes": INT,
                    "base_count": INT,
                    "target_count": INT,
                    "delta_count": INT,
                    "status": STR,
                }
            )
        ),
        "summary": obj({"base": SIDE, "target": SIDE, "lifespan": STR}),
    }
)
DIFF_TREE = obj(
    {
        "node": nullable(STR),
        "base": SIDE,
        "target": SIDE,
        "lifespan": STR,
        "category": STR,
        "inverted": BOOL,
        "hide_system": BOOL,
        "flatten": BOOL,
        "search": STR,
        "alpha": NUMBER,
        "statistic": STR,
        "total": INT,
        "offset": INT,
        "nodes": array(
            obj(
                {
                    "id": STR,
                    "symbol": STR,
                    "status": STR,
                    # the rank test on the node's bytes per snapshot; only significant changes
                    # are grown or shrunk where the sides have several snapshots
                    "p_value": nullable(NUMBER),
                    "significant": BOOL,
                    "has_children": BOOL,
                }
            )
        ),
    }
)
DIFF_FLAME = obj(
    {
        "ids": array(STR),
        "labels": array(STR),
        "parents": array(STR),
        "values": array(INT),
        "base": array(INT),
        "target": array(INT),
        "delta": array(INT),
        "significant": array(BOOL),
        "unit": STR,
        "nodes": INT,
    }
)
_BUILD = obj({"id": INT, "build": STR, "snapshots": INT})
_ROW = obj({"category": STR, "status": STR})
_FAILURE = obj({"category": STR, "delta_bytes": NUMBER, "allowed_bytes": NUMBER})
COMPARISON = obj(
    {
        "base": _BUILD,
        "target": _BUILD,
        "filters": obj({"trigger": STR, "model": STR, "os": STR}),
        "alpha": NUMBER,
        "total": _ROW,
        **PAGE_FIELDS,
        "rows": array(_ROW),
    },
    optional={
        # with a growth limit (max_growth, `5%` unless given) the gate's verdict
        "max_growth": STR,
        "min_delta": INT,
        "failures": array(_FAILURE),
        "not_significant": array(_FAILURE),
        "pass": BOOL,
        # the gate's checks of other lenses (core.gates), each with its parameter
        "max_os_foom_rate": STR,
        "os_foom_rate": OBJECT,
    },
)
