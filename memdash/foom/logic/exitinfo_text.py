"""Android's ApplicationExitInfo records as text (pure: no Django): what an engineer pastes from a
device, `adb shell dumpsys activity exit-info <package>`, and `ApplicationExitInfo.toString()` as
apps log it.

```
ACTIVITY MANAGER PROCESS EXIT INFO (dumpsys activity exit-info)
Last Timestamp of Persistence Into Persistent Storage: 2026-10-08 22:49:04.298
  package: com.example.chat
    Historical Process Exit for uid=10197
        ApplicationExitInfo #0:
          timestamp=2026-10-08 22:49:31.375 pid=8297 realUid=10197 packageUid=10197 …
          process=com.example.chat reason=3 (LOW MEMORY) subreason=0 (UNKNOWN) status=0
          importance=100 pss=221MB rss=304MB description=null state=empty trace=null
```

Android 11 and later print the fields three lines to a record (`ApplicationExitInfo.dump`), the
first Android 11 builds one field a line; `toString()` prints them on one line,
`ApplicationExitInfo(timestamp=… pid=… …)`, and some vendors add fields of their own (`adj=`,
`procState=`, `swapPss=` …). Each is read into the fields of the JSON form (the records'
getters): the reason by its number (`reason=3 (LOW MEMORY)`), importance, pid, process name,
status, description (`null` is none). The dump prints PSS and RSS rounded, as
`DebugUtils.sizeValueToString` does (`221MB`, `0.00`); they are read back in KiB. Timestamps are
the device's local time without an offset (the upload says the device's offset); `toString()`'s
date is in the device's locale, to the minute: its US form (`10/8/26, 10:49 PM`) and the dump's
are read, any other is refused. The state (`processStateSummary`) is printed as its length only,
so a text record finds its run by pid and time, never by run id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from memdash.core.logic.errors import InvalidUpload

_RECORD_HEAD = re.compile(r"^\s*ApplicationExitInfo #(?P<index>\d+):\s*$")
_TO_STRING = re.compile(r"ApplicationExitInfo\((?P<body>timestamp=.*?)\)\s*$")
_PACKAGE = re.compile(r"^\s*package: (?P<package>\S+)\s*$")
_PERSISTED = re.compile(r"^Last Timestamp of Persistence Into Persistent Storage: (?P<at>.+?)\s*$")
_UID = re.compile(r"^\s*Historical Process Exit for uid=\d+\s*$")
_HEADING = "ACTIVITY MANAGER PROCESS EXIT INFO"
# Every key the platform (and the vendors seen) print, in any order: they delimit each other's
# values (a description has spaces).
KEYS = (
    "timestamp", "pid", "realUid", "packageUid", "definingUid", "user", "process", "reason",
    "subreason", "status", "importance", "pss", "rss", "description", "state", "trace",
    "anrInfo", "connectionGroup", "recentTaskInfo", "adj", "procState", "swapPss",
)  # fmt: skip
_KEY = re.compile(r"(?:^|\s)(?P<key>" + "|".join(KEYS) + r")=")
_REQUIRED = ("timestamp", "pid", "process", "reason", "importance")
_NUMBERED = re.compile(r"^(?P<number>-?\d+)(?: \((?P<name>.*)\))?$")
_SIZE = re.compile(r"^(?P<number>\d+(?:[.,]\d+)?)(?P<unit>[KMGTP]B)?$")
_UNITS = {None: 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4, "PB": 1024**5}
_DUMP_TIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d(?::\d\d(?:\.\d{1,3})?)?$")
_US_TIME = re.compile(
    r"^(?P<month>\d{1,2})/(?P<day>\d{1,2})/(?P<year>\d{2}),? (?P<hour>\d{1,2}):(?P<minute>\d\d)"
    r"[\s\u202f]?(?P<half>AM|PM)$"
)
DETECT = re.compile(r"ApplicationExitInfo #\d+:|ApplicationExitInfo\(timestamp=|" + _HEADING)


@dataclass
class TextExit:
    """One record, its fields as printed and read."""

    line: int
    fields: dict[str, str]
    pid: int
    process: str
    reason: int
    importance: int
    local_time: datetime  # the device's local time, naive
    to_the_minute: bool  # toString()'s date: seconds unknown
    status: int | None = None
    description: str = ""
    pss_kb: int | None = None
    rss_kb: int | None = None


@dataclass
class ExitInfoText:
    exits: list[TextExit] = field(default_factory=list)
    packages: list[str] = field(default_factory=list)
    persisted: str = ""  # `Last Timestamp of Persistence …`, as printed
    form: str = "dumpsys"  # or "toString"


def looks_like(raw: bytes) -> bool:
    return bool(DETECT.search(raw[: 1 << 20].decode("utf-8", errors="replace")))


def parse(text: str) -> ExitInfoText:
    result = ExitInfoText()
    pending: list[tuple[int, str]] = []  # the current dump record's lines
    for number, line in enumerate(text.replace("\r\n", "\n").split("\n"), start=1):
        if _RECORD_HEAD.match(line) or _PACKAGE.match(line) or _UID.match(line):
            _close(result, pending)
            pending = [(number, "")] if _RECORD_HEAD.match(line) else []
            if match := _PACKAGE.match(line):
                result.packages.append(match["package"])
        elif match := _TO_STRING.search(line):
            _close(result, pending)
            pending = []
            result.form = "toString"
            result.exits.append(read_record(number, match["body"], to_string=True))
        elif match := _PERSISTED.match(line):
            result.persisted = match["at"]
        elif pending and line.strip():
            pending.append((number, line.strip()))
        elif pending:
            _close(result, pending)
            pending = []
    _close(result, pending)
    if not result.exits:
        raise InvalidUpload(
            "no ApplicationExitInfo record in the text: `dumpsys activity exit-info <package>` "
            "lists none while the OS keeps no exit of the package",
            "line 1",
        )
    return result


def _close(result: ExitInfoText, pending: list[tuple[int, str]]) -> None:
    if pending:
        body = " ".join(text for _n, text in pending[1:])
        result.exits.append(read_record(pending[0][0], body, to_string=False))


def split_fields(body: str) -> dict[str, str]:
    """`key=value key=value …` into its fields; a value runs to the next known key."""
    found = list(_KEY.finditer(body))
    return {
        match["key"]: body[
            match.end() : found[i + 1].start() if i + 1 < len(found) else None
        ].strip()
        for i, match in enumerate(found)
    }


def read_record(number: int, body: str, *, to_string: bool) -> TextExit:
    fields = split_fields(body)
    where = f"line {number}"
    for key in _REQUIRED:
        if not fields.get(key):
            raise InvalidUpload(f"an ApplicationExitInfo record without `{key}=`", where)
    local_time, minute = read_time(fields["timestamp"], where)
    description = fields.get("description", "")
    return TextExit(
        line=number, fields=fields, pid=read_int(fields, "pid", where),
        process=fields["process"], reason=read_int(fields, "reason", where),
        importance=read_int(fields, "importance", where), local_time=local_time,
        to_the_minute=minute,
        status=read_int(fields, "status", where) if fields.get("status") else None,
        description="" if description == "null" else description,
        pss_kb=read_size_kb(fields.get("pss"), "pss", where),
        rss_kb=read_size_kb(fields.get("rss"), "rss", where),
    )  # fmt: skip


def read_int(fields: dict[str, str], key: str, where: str) -> int:
    """`10`, or `10 (USER REQUESTED)`: the number, the name beside it only for people."""
    match = _NUMBERED.match(fields[key])
    if match is None:
        raise InvalidUpload(f"`{key}=` must be a number, got {fields[key][:40]!r}", where)
    return int(match["number"])


def read_size_kb(value: str | None, key: str, where: str) -> int | None:
    """`221MB`, `1.2GB`, `0.00` (as sizeValueToString rounds a size in bytes) → KiB."""
    if value is None:
        return None
    match = _SIZE.match(value.strip())
    if match is None:
        raise InvalidUpload(f"`{key}=` must be a size such as 221MB, got {value[:40]!r}", where)
    number = float(match["number"].replace(",", "."))
    return round(number * _UNITS[match["unit"]] / 1024)


def read_time(value: str, where: str) -> tuple[datetime, bool]:
    """(local time, to the minute only) of the dump's `2026-10-08 22:49:31.375` or toString()'s
    US `10/8/26, 10:49 PM`."""
    text = value.strip()
    if _DUMP_TIME.match(text):
        return datetime.fromisoformat(text), text.count(":") == 1
    if match := _US_TIME.match(text):
        hour = int(match["hour"]) % 12 + (12 if match["half"] == "PM" else 0)
        try:
            return datetime(
                2000 + int(match["year"]), int(match["month"]), int(match["day"]), hour,
                int(match["minute"]),
            ), True  # fmt: skip
        except ValueError:
            pass
    raise InvalidUpload(
        f"cannot read the timestamp {text[:40]!r}: memdash reads the dump's form "
        "(`2026-10-08 22:49:31.375`) and toString()'s US form (`10/8/26, 10:49 PM`); "
        "toString() writes the device's locale, so send `dumpsys activity exit-info` instead",
        where,
    )
