"""The memdash.churn v1 document, declared once: typed structs (msgspec) from which
`docs/schemas/churn-v1.schema.json` is generated (`scripts/schemas.py`; a test keeps the
committed file current), and whose names and limits `document.py` takes when it reads a document
with the JSON path of the first offending value.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from memdash.core.logic.contract import (
    RFC3339,
    App,
    BigCount,
    non_empty,
    optional_text,
    schema_document,
)

FORMAT, VERSION = "memdash.churn", 1
MAX_NAME = 200
MAX_FUNCTION_NAME = 100
MAX_BUILD_FIELD = 64  # as builds store them

NonEmpty = non_empty(MAX_NAME)
OptionalText = optional_text(MAX_NAME)
Function = non_empty(MAX_FUNCTION_NAME)


class Build(msgspec.Struct, kw_only=True):
    version: non_empty(MAX_BUILD_FIELD)  # type: ignore[valid-type]
    number: optional_text(MAX_BUILD_FIELD) | UnsetType = UNSET  # type: ignore[valid-type]
    commit: optional_text(MAX_BUILD_FIELD) | UnsetType = UNSET  # type: ignore[valid-type]


class Device(msgspec.Struct, kw_only=True):
    id: OptionalText | UnsetType = UNSET  # type: ignore[valid-type]
    model: OptionalText | UnsetType = UNSET  # type: ignore[valid-type]
    os: OptionalText | UnsetType = UNSET  # type: ignore[valid-type]


class FunctionSums(msgspec.Struct, kw_only=True):
    count: BigCount
    bytes: BigCount
    log2_bytes: Annotated[
        float, Meta(ge=0, description="Σ log2(size) over the calls; calls of 0 or 1 byte add 0")
    ]


# No calls, nothing allocated.
_NONE_IS_NOTHING = {
    "if": {"properties": {"count": {"const": 0}}},
    "then": {"properties": {"bytes": {"const": 0}, "log2_bytes": {"const": 0}}},
}
# Every call as it was, or their sums per function: one of the two.
_CALLS_OR_FUNCTIONS = {
    "oneOf": [
        {"required": ["calls"], "not": {"required": ["functions"]}},
        {"required": ["functions"], "not": {"required": ["calls"]}},
    ]
}


class Scenario(msgspec.Struct, kw_only=True):
    name: non_empty(MAX_NAME, "compared across builds by name")  # type: ignore[valid-type]
    thread: OptionalText | UnsetType = UNSET  # type: ignore[valid-type]
    start_marker: OptionalText | UnsetType = UNSET  # type: ignore[valid-type]
    end_marker: OptionalText | UnsetType = UNSET  # type: ignore[valid-type]
    elapsed_ms: Annotated[float, Meta(ge=0, description="time between the markers")]
    calls: (
        Annotated[
            list[tuple[Function, BigCount]],  # type: ignore[valid-type]
            Meta(
                description="every allocator call between the markers: [function, bytes] (for "
                "free the size of the block freed, for realloc the new size)"
            ),
        ]
        | UnsetType
    ) = UNSET
    functions: (
        Annotated[
            dict[Function, Annotated[FunctionSums, Meta(extra_json_schema=_NONE_IS_NOTHING)]],  # type: ignore[valid-type]
            Meta(description="the same calls summed per function on the device"),
        ]
        | UnsetType
    ) = UNSET


class Run(msgspec.Struct, kw_only=True):
    id: Annotated[
        NonEmpty | int,  # type: ignore[valid-type]
        Meta(
            description="unique in the document (an integer is read as its decimal string); "
            "re-sending a run id for the same build and device replaces that run"
        ),
    ]
    scenarios: Annotated[
        list[Annotated[Scenario, Meta(extra_json_schema=_CALLS_OR_FUNCTIONS)]],
        Meta(min_length=1, description="each scenario name at most once per run"),
    ]


class Churn(msgspec.Struct, kw_only=True):
    format: Literal["memdash.churn"]
    version: Literal[1]
    app: App
    build: (
        Annotated[
            Build | None,
            Meta(
                description="without it, the upload's build_version, build_number and "
                "build_commit fields"
            ),
        ]
        | UnsetType
    ) = UNSET
    device: (
        Annotated[
            Device | None,
            Meta(description="without it, the upload's device_id, device_model and os fields"),
        ]
        | UnsetType
    ) = UNSET
    captured_at: (
        Annotated[
            Annotated[str, Meta(pattern=RFC3339, extra_json_schema={"format": "date-time"})] | None,
            Meta(description="RFC 3339 with a UTC offset; absent or null: when the upload arrived"),
        ]
        | UnsetType
    ) = UNSET
    runs: Annotated[
        list[Run],
        Meta(min_length=1, description="one run of the app each (a launch, a test iteration)"),
    ]


def json_schema() -> dict[str, Any]:
    """docs/schemas/churn-v1.schema.json."""
    return schema_document(
        Churn, format=FORMAT, version=VERSION, title="memdash allocator churn, version 1",
        description="The allocator calls of named scenarios, counted between two markers on "
        "one thread, in one or more runs of an app. Unknown keys are ignored. Checked by the "
        "server beyond this schema: run ids are unique in the document and each scenario "
        "appears at most once per run, a build version is given here or with the upload "
        "(build_version), log2_bytes is at most count × log2(bytes / count), the calls of one "
        "function add up to less than 2^63 bytes, captured_at is a real date and time, integers "
        "are sent without a fraction (1, not 1.0), and app must be the ingest key's app.",
    )  # fmt: skip
