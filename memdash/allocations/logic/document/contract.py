"""The memdash.snapshot v1 document, declared once: typed structs (msgspec) from which
`docs/schemas/snapshot-v1.schema.json` is generated (`scripts/schemas.py`; a test keeps the
committed file current), and whose names and values the server's reading takes from here
(`parse.py` checks a document against them with the JSON path of the first offending value;
`raw.py` decodes the same fields straight from the bytes).

What a JSON Schema cannot say (indexes within their arrays, the parent-before-child rule of
stacks, sums that fit 64 bits, the size and gzip limits) is checked by the server beyond it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

import msgspec
from msgspec import UNSET, Meta, UnsetType

from memdash.allocations.logic.analysis import CREATE_FUNCTIONS, EVENT_FUNCTIONS

FORMAT = "memdash.snapshot"
Version = Literal[1]
Platform = Literal["ios", "android", "macos", "linux", "other"]
Trigger = Literal["manual", "periodic", "memory_warning", "foom", "test", "other"]
VERSIONS = set(get_args(Version))
PLATFORMS = set(get_args(Platform))
TRIGGERS = set(get_args(Trigger))
SESSION_ID_LENGTH = 200  # as the sessions format allows, so that any run can be named
ARCH_LENGTH = 32
MAX_UINT64 = 2**64 - 1
MAX_VM_TAG = 255

Index = Annotated[int, Meta(ge=0)]
Count = Annotated[int, Meta(ge=0)]
# msgspec's own bounds stop at 64-bit signed integers: the schema's maximum is said outright.
Address = (
    Annotated[int, Meta(ge=0, extra_json_schema={"maximum": MAX_UINT64})]
    | Annotated[str, Meta(pattern="^0[xX][0-9a-fA-F]+$")]
)
Category = Annotated[str, Meta(min_length=1)]


class App(msgspec.Struct, kw_only=True):
    id: Annotated[str, Meta(min_length=1, description="bundle id or package name")]
    platform: Platform
    name: str | UnsetType = UNSET


class Build(msgspec.Struct, kw_only=True):
    version: str
    number: str | UnsetType = UNSET
    commit: str | UnsetType = UNSET


class Device(msgspec.Struct, kw_only=True):
    id: str | UnsetType = UNSET
    model: str | UnsetType = UNSET
    os: str | UnsetType = UNSET


class Image(msgspec.Struct, kw_only=True):
    name: str
    uuid: (
        Annotated[
            str,
            Meta(
                description="Mach-O UUID, ELF build id or Breakpad id: finds the image's debug file"
            ),
        ]
        | UnsetType
    ) = UNSET
    load_address: Address | UnsetType = UNSET
    system: bool = False
    arch: (
        Annotated[
            str,
            Meta(
                max_length=ARCH_LENGTH,
                description="arm64, x86_64, …: shown with images whose debug file is missing",
            ),
        ]
        | UnsetType
    ) = UNSET


class Frame(msgspec.Struct, kw_only=True):
    symbol: str | UnsetType = UNSET
    image: Index | UnsetType = UNSET
    address: Address | UnsetType = UNSET
    file: str | UnsetType = UNSET
    line: int | UnsetType = UNSET


class Generation(msgspec.Struct, kw_only=True):
    name: str | UnsetType = UNSET
    at_ms: Annotated[float, Meta(ge=0)]


class Allocation(msgspec.Struct, kw_only=True):
    category: Category
    stack: Index | None | UnsetType = UNSET
    thread: Index | None | UnsetType = UNSET
    generation: Index | None | UnsetType = UNSET
    persistent: Count | UnsetType = UNSET
    persistent_bytes: Count | UnsetType = UNSET
    transient: Count | UnsetType = UNSET
    transient_bytes: Count | UnsetType = UNSET


class Event(msgspec.Struct, kw_only=True):
    t_ms: float
    fn: Annotated[str, Meta(extra_json_schema={"enum": sorted(EVENT_FUNCTIONS)})]
    address: Address
    size: Count | UnsetType = UNSET
    old_address: Address | UnsetType = UNSET
    category: Category | UnsetType = UNSET
    stack: Index | None | UnsetType = UNSET
    thread: Index | None | UnsetType = UNSET
    vm_tag: Annotated[int, Meta(ge=0, le=MAX_VM_TAG)] | UnsetType = UNSET


# An allocating call says how much it allocated.
_SIZED = {
    "allOf": [
        {
            "if": {"properties": {"fn": {"enum": sorted(CREATE_FUNCTIONS)}}},
            "then": {"required": ["size"]},
        }
    ]
}

SymbolicatedFrame = Annotated[str, Meta(description="an already symbolicated frame")]
StackNode = tuple[Index | None, Index]


class Snapshot(msgspec.Struct, kw_only=True):
    format: Literal["memdash.snapshot"]
    version: Version
    app: App
    build: Build
    device: Device | UnsetType = UNSET
    session: Annotated[str, Meta(max_length=SESSION_ID_LENGTH)] | UnsetType = UNSET
    captured_at: Annotated[str, Meta(extra_json_schema={"format": "date-time"})]
    trigger: Trigger = "manual"
    images: list[Image] | UnsetType = UNSET
    frames: list[SymbolicatedFrame | Frame] | UnsetType = UNSET
    stacks: (
        Annotated[
            list[StackNode],
            Meta(
                description="prefix tree, outermost frame first: node i is "
                "[parent < i or null, frame index]"
            ),
        ]
        | UnsetType
    ) = UNSET
    threads: list[str] | UnsetType = UNSET
    generations: list[Generation] | UnsetType = UNSET
    allocations: list[Allocation] | UnsetType = UNSET
    events: list[Annotated[Event, Meta(extra_json_schema=_SIZED)]] | UnsetType = UNSET


def json_schema() -> dict[str, Any]:
    """docs/schemas/snapshot-v1.schema.json."""
    document = Annotated[
        Snapshot,
        Meta(
            extra_json_schema={
                # Rows as they are, or events to replay into rows: one of the two.
                "oneOf": [
                    {"required": ["allocations"], "not": {"required": ["events"]}},
                    {"required": ["events"], "not": {"required": ["allocations"]}},
                ]
            }
        ),
    ]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{FORMAT}/1",
        "title": "memdash snapshot, version 1",
        "description": "One run's allocations at one moment, their call stacks and generation "
        "marks. Index ranges, the parent-before-child rule and the gzip/size limits are checked "
        "by the server beyond this schema.",
        **msgspec.json.schema(document),
    }
