"""Duplicate keys in JSON documents, refused with their path.

RFC 8259 leaves a document whose object names a key twice to each parser; orjson and msgspec
keep the last value, so a second `allocations` list would silently replace the first. memdash
refuses such a document instead, naming where: `allocations[3].persistent`.

The check is jiter's (pydantic's JSON parser, in Rust: `catch_duplicate_keys`), about as fast as
the parse itself. Only when it finds a duplicate is the document read again by the standard
library's decoder (`_duplicate_path`), whose object hook carries the path of the first duplicate
up to the top: slower, but only for a document that is refused anyway, and holding no values
(every object that is not on the path is one shared marker).
"""

from __future__ import annotations

import json
from typing import Any

import jiter

from memdash.core.logic.errors import InvalidUpload

_DUPLICATE = "Detected duplicate key"


class _Found:
    """The path (keys and indexes, outermost last while it climbs) of the first duplicate."""

    def __init__(self, key: str) -> None:
        self.parts: list[str | int] = [key]


_PLAIN = object()  # what every object without a duplicate inside becomes in `_duplicate_path`


def _found_in(value: Any) -> _Found | None:
    """The duplicate inside a value as decoded (an object's marker, or a list of them)."""
    if isinstance(value, _Found):
        return value
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _found_in(item)
            if found is not None:
                found.parts.append(index)
                return found
    return None


def _hook(pairs: list[tuple[str, Any]]) -> object:
    seen: set[str] = set()
    for key, value in pairs:
        found = _found_in(value)
        if found is not None:
            found.parts.append(key)
            return found
        if key in seen:
            return _Found(key)
        seen.add(key)
    return _PLAIN


def format_path(parts: list[str | int]) -> str:
    """`a.b[3].c` from the parts, outermost first."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _duplicate_parts(raw: bytes | str) -> list[str | int] | None:
    decoded = json.JSONDecoder(object_pairs_hook=_hook).decode(
        raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    )
    found = _found_in(decoded)
    return None if found is None else found.parts[::-1]


def has_duplicate_key(raw: bytes | str) -> bool:
    """Whether some object of the JSON document `raw` names a key twice (False for what is no
    JSON). jiter builds the document's values to tell: a large document is checked a part at
    a time by a reader that splits it (`allocations.logic.document.raw`), not whole."""
    try:
        jiter.from_json(
            raw.encode() if isinstance(raw, str) else raw,
            catch_duplicate_keys=True,
            allow_inf_nan=True,
            cache_mode="keys",
        )
    except ValueError as exc:
        return str(exc).startswith(_DUPLICATE)
    return False


def duplicate_key(raw: bytes | str) -> list[str | int] | None:
    """The path (outermost first) of the first key named twice in one object of the JSON
    document `raw`; None when there is none, or when `raw` is no JSON (its parse says why
    elsewhere); [] when jiter found one that the standard library does not place."""
    if not has_duplicate_key(raw):
        return None
    try:
        return _duplicate_parts(raw) or []
    except (ValueError, RecursionError):
        return []


def refuse_duplicate_keys(raw: bytes | str, prefix: str = "") -> None:
    """InvalidUpload naming the first key named twice in one object, if any."""
    parts = duplicate_key(raw)
    if parts is None:
        return
    named = f"the key {parts[-1]!r} is" if parts else "a key is"
    raise InvalidUpload(
        f"{named} named twice in one object: JSON that names a key twice is refused (which "
        "value was meant is not known)",
        format_path([prefix, *parts] if prefix else parts) or "line 1",
    )
