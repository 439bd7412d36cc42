"""Android's ApplicationExitInfo records as memdash reads them (a list of their getters' values,
or memdash's wrapper `memdash.exitinfo` v1), declared once: typed structs (msgspec) from which
`docs/schemas/exitinfo-v1.schema.json` is generated (`scripts/schemas.py`; a test keeps the
committed file current), and whose names and limits the server's reader
(`memdash.ingest.writes.parsers.exitinfo`) takes.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from memdash.core.logic.contract import BigCount, schema_document
from memdash.core.logic.numbers import MAX_INT32, MAX_INT64
from memdash.foom.logic.exits import ANDROID_REASONS

FORMAT, VERSION = "memdash.exitinfo", 1
# Milliseconds since 1970 before Android existed: a timestamp in seconds, most likely.
EARLIEST_MS = 1_199_145_600_000  # 2008-01-01
MAX_PROCESS_NAME = 255
MAX_DESCRIPTION = 10_000


def _any_case(text: str) -> str:
    """A regular expression of `text` in any case (JSON Schema has no flag for it)."""
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in text)


REASON_NAME = (
    rf"^\s*({_any_case('reason_')})?"
    + "("
    + "|".join(_any_case(ANDROID_REASONS[code]) for code in sorted(ANDROID_REASONS))
    + r")\s*$"
)
OptionalKiB = Annotated[BigCount | None, Meta(description="KiB")]


class App(msgspec.Struct, kw_only=True):
    id: Annotated[str, Meta(min_length=1)]
    platform: Literal["android", "other"] | UnsetType = UNSET


class Build(msgspec.Struct, kw_only=True):
    version: Annotated[str, Meta(max_length=64)] | UnsetType = UNSET
    number: Annotated[str, Meta(max_length=64)] | UnsetType = UNSET
    commit: Annotated[str, Meta(max_length=64)] | UnsetType = UNSET


class Device(msgspec.Struct, kw_only=True):
    id: Annotated[str, Meta(max_length=255)] | UnsetType = UNSET
    model: Annotated[str, Meta(max_length=128)] | UnsetType = UNSET
    os: Annotated[str, Meta(max_length=128)] | UnsetType = UNSET


class Exit(msgspec.Struct, kw_only=True, rename="camel"):
    reason: (
        Annotated[
            int,
            Meta(
                ge=min(ANDROID_REASONS), le=max(ANDROID_REASONS),
                description="ApplicationExitInfo.REASON_* (3 = REASON_LOW_MEMORY, "
                "13 = REASON_OTHER)",
            ),
        ]
        | Annotated[
            str,
            Meta(
                pattern=REASON_NAME,
                description="the constant's name, with or without REASON_, in any case",
            ),
        ]
    )  # fmt: skip
    importance: Annotated[
        int,
        Meta(
            ge=0, le=MAX_INT32,
            description="100 (IMPORTANCE_FOREGROUND) or below: the process was in the foreground",
        ),
    ]  # fmt: skip
    pid: Annotated[int, Meta(ge=1, le=MAX_INT32)]
    timestamp: Annotated[
        int,
        Meta(ge=EARLIEST_MS, le=MAX_INT64, description="milliseconds since 1970 (getTimestamp())"),
    ]
    process_name: Annotated[str, Meta(pattern=r"\S", max_length=MAX_PROCESS_NAME)]
    description: (
        Annotated[
            Annotated[str, Meta(max_length=MAX_DESCRIPTION)] | None,
            Meta(
                description="REASON_OTHER with a description starting MemoryLimiter: is a "
                "memory kill"
            ),
        ]
        | UnsetType
    ) = UNSET
    pss: OptionalKiB | UnsetType = UNSET
    rss: OptionalKiB | UnsetType = UNSET
    status: Annotated[int, Meta(ge=-MAX_INT32, le=MAX_INT32)] | None | UnsetType = UNSET
    process_state_summary: Annotated[
        Any,
        Meta(
            description="a string of 1 to 200 characters is the id of the run "
            "(setProcessStateSummary); anything else is listed as unread"
        ),
    ] = UNSET
    defining_uid: int | UnsetType = UNSET
    package_uid: int | UnsetType = UNSET
    real_uid: int | UnsetType = UNSET


class Wrapper(msgspec.Struct, kw_only=True):
    format: Literal["memdash.exitinfo"]
    version: Literal[1]
    app: App
    build: (
        Annotated[
            Build,
            Meta(
                description="the build of the exits whose runs are not found (a matched exit is "
                "its run's)"
            ),
        ]
        | UnsetType
    ) = UNSET
    device: Device | UnsetType = UNSET
    exits: list[Exit]


def json_schema() -> dict[str, Any]:
    """docs/schemas/exitinfo-v1.schema.json."""
    return schema_document(
        Wrapper | Annotated[list[Exit], Meta(min_length=1)],
        format=FORMAT, version=VERSION,
        title="Android ApplicationExitInfo records, as a list of their fields or in memdash's "
        "wrapper",
        description="What ActivityManager.getHistoricalProcessExitReasons answers, one object "
        "per ApplicationExitInfo with its getters' values, or memdash's wrapper "
        "memdash.exitinfo. Unknown keys are listed with the upload. Checked by the server "
        "beyond this schema: the list runs in one time order (newest first, as the platform "
        "answers, or oldest first); no exit (pid and timestamp) twice; processName is the "
        "ingest key's app's package, or package:process (403 otherwise); the key's app is an "
        "Android one; the upload names a build (build_version, or the wrapper's build).",
    )  # fmt: skip
