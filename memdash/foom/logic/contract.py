"""The memdash.sessions v1 document, declared once: typed structs (msgspec) from which
`docs/schemas/sessions-v1.schema.json` is generated (`scripts/schemas.py`; a test keeps the
committed file current), and whose names and limits the server's reader
(`memdash.ingest.writes.parsers.sessions`) takes when it checks a document with the JSON path of
the first offending value.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from memdash.core.logic.contract import (
    App,
    BigCount,
    OptionalBool,
    Timestamp,
    non_empty,
    optional_text,
    schema_document,
)

FORMAT, VERSION = "memdash.sessions", 1
# The widths of the columns these values are stored in.
MAX_SESSION_ID = 200
MAX_DEVICE_ID = 255
MAX_BUILD_FIELD = 64  # build version, number, commit
MAX_MODEL = 128  # device model, OS version
MAX_BINARY_UUID = 128
MAX_EXIT_REASON = 64
MAX_COUNT = 2**31 - 1  # memory warnings, a process id

State = Literal["foreground", "inactive", "background", "suspended"]
SmallCount = Annotated[int, Meta(ge=0, le=MAX_COUNT)]
OptionalTimestamp = Timestamp | None


class Device(msgspec.Struct, kw_only=True):
    id: non_empty(MAX_DEVICE_ID)  # type: ignore[valid-type]
    model: optional_text(MAX_MODEL) | UnsetType = UNSET  # type: ignore[valid-type]


class Build(msgspec.Struct, kw_only=True):
    version: non_empty(MAX_BUILD_FIELD)  # type: ignore[valid-type]
    number: optional_text(MAX_BUILD_FIELD) | UnsetType = UNSET  # type: ignore[valid-type]
    commit: optional_text(MAX_BUILD_FIELD) | UnsetType = UNSET  # type: ignore[valid-type]


class End(msgspec.Struct, kw_only=True):
    state: State
    active_for_ms: BigCount | None | UnsetType = UNSET
    crashed: OptionalBool | UnsetType = UNSET
    main_thread_blocked: OptionalBool | UnsetType = UNSET
    user_quit: OptionalBool | UnsetType = UNSET
    exit_called: OptionalBool | UnsetType = UNSET
    debugger: OptionalBool | UnsetType = UNSET
    simulator: OptionalBool | UnsetType = UNSET
    extension: OptionalBool | UnsetType = UNSET
    thermal_critical: OptionalBool | UnsetType = UNSET
    os_exit_reason: (
        optional_text(  # type: ignore[valid-type]
            MAX_EXIT_REASON,
            "an exit reason the OS reported (Android's ApplicationExitInfo: low_memory, crash, "
            'anr, exit_self, user_requested, ...); read in lower case, "" = null',
        )
        | UnsetType
    ) = UNSET
    memory_warnings: SmallCount | None | UnsetType = UNSET
    footprint_bytes: BigCount | None | UnsetType = UNSET
    peak_footprint_bytes: BigCount | None | UnsetType = UNSET


class Session(msgspec.Struct, kw_only=True):
    id: non_empty(MAX_SESSION_ID, "unique per app: re-sending it updates that run")  # type: ignore[valid-type]
    device: Device
    build: Build
    binary_uuid: optional_text(MAX_BINARY_UUID) | UnsetType = UNSET  # type: ignore[valid-type]
    os: optional_text(MAX_MODEL) | UnsetType = UNSET  # type: ignore[valid-type]
    boot_time: OptionalTimestamp | UnsetType = UNSET
    started_at: Timestamp
    last_seen_at: OptionalTimestamp | UnsetType = UNSET
    end: (
        Annotated[
            End | None, Meta(description="absent or null while the run has not reported its end")
        ]
        | UnsetType
    ) = UNSET
    bot: OptionalBool | UnsetType = UNSET
    pid: (
        Annotated[
            SmallCount | None,
            Meta(
                description="the process id (Android): matches the run to the OS's "
                "ApplicationExitInfo record of its exit"
            ),
        ]
        | UnsetType
    ) = UNSET


class Sessions(msgspec.Struct, kw_only=True):
    format: Literal["memdash.sessions"]
    version: Literal[1]
    app: App
    sessions: Annotated[
        list[Session], Meta(description="may be empty; each session id at most once per upload")
    ]


def json_schema() -> dict[str, Any]:
    """docs/schemas/sessions-v1.schema.json."""
    return schema_document(
        Sessions, format=FORMAT, version=VERSION, title="memdash sessions, version 1",
        description="The runs of an app (launch to end of process) with the facts each run "
        "recorded about its end, for FOOM classification. Unknown keys are ignored. Checked by "
        "the server beyond this schema: session ids are unique within one upload, last_seen_at "
        "is not before started_at, timestamps are real dates and times, integers are sent "
        "without a fraction (1, not 1.0), and app must be the ingest key's app.",
    )  # fmt: skip
