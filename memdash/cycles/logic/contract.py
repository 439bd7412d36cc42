"""The memdash.retain-cycles v1 document (its JSON form), declared once: typed structs (msgspec)
from which `docs/schemas/retain-cycles-v1.schema.json` is generated (`scripts/schemas.py`; a test
keeps the committed file current), and whose names and limits `parse.py` takes when it checks a
document with the JSON path of the first offending value.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from memdash.core.logic.contract import (
    RFC3339,
    App,
    optional_text,
    schema_document,
)

FORMAT_NAME, FORMAT_VERSION = "memdash.retain-cycles", 1
MAX_NAME_LENGTH = 255  # class names and reference names are stored in columns of this size
MAX_CYCLE_LENGTH = 200  # the detector stops at 10 by default; far beyond that is not a cycle report
MAX_VIA_PARTS = 50
# The columns the build's and the device's strings are stored in (core.models Build, Device).
FIELD_LENGTHS = {"version": 64, "number": 64, "commit": 64, "model": 128, "os": 128}

Name = Annotated[
    str,
    Meta(
        max_length=MAX_NAME_LENGTH, pattern=r"\S", description="not blank, on one line",
        extra_json_schema={"not": {"pattern": "[\\u0000\\r\\n]"}},
    ),
]  # fmt: skip


def _text(key: str) -> Any:
    return optional_text(FIELD_LENGTHS.get(key, MAX_NAME_LENGTH))


class Build(msgspec.Struct, kw_only=True):
    version: _text("version") | UnsetType = UNSET  # type: ignore[valid-type]
    number: _text("number") | UnsetType = UNSET  # type: ignore[valid-type]
    commit: _text("commit") | UnsetType = UNSET  # type: ignore[valid-type]


class Device(msgspec.Struct, kw_only=True):
    id: _text("id") | UnsetType = UNSET  # type: ignore[valid-type]
    model: _text("model") | UnsetType = UNSET  # type: ignore[valid-type]
    os: _text("os") | UnsetType = UNSET  # type: ignore[valid-type]


class CycleObject(msgspec.Struct, kw_only=True, rename={"class_": "class"}):
    class_: Annotated[
        Name,
        Meta(
            description="`<<__NSMallocBlock__:0x1c2a3b4c>>` is read as `__NSMallocBlock__`; "
            "`(null)` (freed while the detector ran) drops the cycle"
        ),
    ]
    via: Annotated[
        list[Name],
        Meta(
            max_length=MAX_VIA_PARTS,
            description="the reference path into this object (ivar names, struct members, "
            "block captures); empty when the reference has no name",
        ),
    ] = []


class RetainCycles(msgspec.Struct, kw_only=True):
    format: Literal["memdash.retain-cycles"]
    version: Literal[1]
    app: App
    build: (
        Annotated[
            Build | None,
            Meta(
                description="without it (or without its version), the upload's build_version, "
                "build_number and build_commit fields"
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
    cycles: Annotated[
        list[
            Annotated[
                list[CycleObject],
                Meta(
                    min_length=1, max_length=MAX_CYCLE_LENGTH,
                    description="the objects of one loop in reference order: element i is "
                    "reached from element i-1, the first from the last",
                ),
            ]
        ],
        Meta(description="may be empty"),
    ]  # fmt: skip


def json_schema() -> dict[str, Any]:
    """docs/schemas/retain-cycles-v1.schema.json."""
    return schema_document(
        RetainCycles, format=FORMAT_NAME, version=FORMAT_VERSION,
        title="memdash retain cycles, version 1 (JSON form)",
        description="The retain cycles FBRetainCycleDetector found in one run, each a loop of "
        "strong references listed in reference order. Unknown keys are ignored. Checked by the "
        "server beyond this schema: a build version is given here or with the upload "
        "(build_version), the device id likewise is optional, captured_at is a real date and "
        "time, and app must be the ingest key's app. A cycle with a `(null)` class is counted "
        "as dropped, not stored.",
    )  # fmt: skip
