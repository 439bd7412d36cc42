"""Pieces of memdash's own upload formats' contracts (the typed structs their JSON Schemas are
generated from, `scripts/schemas.py`): the values several formats share, said once."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from memdash.core.logic.numbers import MAX_INT64

Platform = Literal["ios", "android", "macos", "linux", "other"]
RFC3339 = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
    r"(Z|[+-][0-9]{2}:[0-9]{2})$"
)
_NUL = "\\u0000"  # the regular expression of a NUL character, as JSON Schema writes it
_NO_NUL = {"not": {"pattern": _NUL}}


def non_empty(max_length: int, description: str = "not blank, no NUL character") -> Any:
    """A string that is not blank and holds no NUL character, of at most `max_length`."""
    return Annotated[
        str,
        Meta(
            max_length=max_length, pattern=r"\S", description=description, extra_json_schema=_NO_NUL
        ),
    ]


def optional_text(max_length: int, description: str = 'absent or null reads as ""') -> Any:
    """A string without NUL characters, of at most `max_length`, or null (read as "")."""
    return Annotated[
        Annotated[str, Meta(max_length=max_length, extra_json_schema=_NO_NUL)] | None,
        Meta(description=description),
    ]


Timestamp = Annotated[
    str,
    Meta(
        pattern=RFC3339,
        description="RFC 3339 with a UTC offset",
        extra_json_schema={"format": "date-time"},
    ),
]
OptionalBool = Annotated[bool | None, Meta(description="absent or null reads as false")]
BigCount = Annotated[int, Meta(ge=0, le=MAX_INT64)]


class App(msgspec.Struct, kw_only=True):
    """The app the document is about: the ingest key's app."""

    id: Annotated[str, Meta(min_length=1, description="bundle id or package name")]
    platform: Platform | UnsetType = UNSET
    name: str | UnsetType = UNSET


def schema_document(
    struct: Any, *, format: str, version: int, title: str, description: str
) -> dict[str, Any]:
    """The JSON Schema of a document made of `struct`, with its identity."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{format}/{version}",
        "title": title,
        "description": description,
        **msgspec.json.schema(struct),
    }
