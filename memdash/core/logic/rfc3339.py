"""RFC 3339 timestamps, as every upload format names them (pure: no Django).

`datetime.fromisoformat` reads ISO 8601, which is both wider (week dates, basic format, no
seconds) and narrower (no lowercase `z`, no leap second) than RFC 3339 §5.6; a device's clock
string must be read the same way whichever format carries it.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from memdash.core.logic.errors import InvalidUpload

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))",
    re.ASCII,
)


def parse_rfc3339(text: str) -> datetime:
    """The instant `text` names, with its own offset. Raises ValueError saying why not.

    A leap second (`:60`) is read as the last microsecond of its minute, as Python's datetime
    has no 61st second; an instant outside years 1–9999 once taken to UTC is refused, since it
    can be neither stored nor compared."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise ValueError(
            "is not an RFC 3339 timestamp (YYYY-MM-DDThh:mm:ss[.frac] and Z or ±hh:mm)"
        )
    year, month, day, hour, minute, second = (int(match[i]) for i in range(1, 7))
    if match[8]:
        offset = timedelta(0)
    else:
        if int(match[10]) > 23 or int(match[11]) > 59:
            raise ValueError("has an offset out of range")
        offset = timedelta(hours=int(match[10]), minutes=int(match[11]))
        if match[9] == "-":
            offset = -offset
    leap = second == 60
    micro = int((match[7] or ".0")[1:7].ljust(6, "0"))
    try:
        parsed = datetime(
            year, month, day, hour, minute, 59 if leap else second,
            999_999 if leap else micro, tzinfo=timezone(offset),
        )  # fmt: skip
        parsed.astimezone(UTC)
    except (ValueError, OverflowError):
        raise ValueError("names no date and time that exists (years 1 to 9999)") from None
    return parsed


def timestamp_field(value: Any, path: str) -> datetime:
    """An upload's timestamp field at JSON path `path`, or InvalidUpload saying what is wrong."""
    if not isinstance(value, str):
        raise InvalidUpload("must be an RFC 3339 timestamp string, e.g. 2026-11-20T10:12:03Z", path)
    try:
        return parse_rfc3339(value)
    except ValueError as exc:
        raise InvalidUpload(f"{value[:40]!r} {exc}", path) from None
