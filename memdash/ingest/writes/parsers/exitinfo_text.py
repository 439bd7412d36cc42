"""Android's exit records as text (format `android.exitinfo.text`): `dumpsys activity exit-info
<package>` and `ApplicationExitInfo.toString()`, read into the same records as the JSON form
(`memdash.ingest.writes.parsers.exitinfo`) and stored and matched to their runs the same way.

The text prints the device's local time without its offset: the upload's `utc_offset` (`+02:00`,
`-0700`, `Z`; none is UTC) says it. Like the JSON form, the records name no app version: the
upload's `build_version` is required, and each record's process must be the key's app's.
"""

from __future__ import annotations

import re
from datetime import UTC, timedelta, timezone
from typing import Any

from django.urls import reverse

from memdash.core.logic.errors import InvalidUpload, WrongApp
from memdash.core.writes.uploads import NOT_JSON, FormatHandler, Progress, StoreResult, UploadMeta
from memdash.foom.logic import exitinfo_text
from memdash.foom.logic.exitinfo_contract import EARLIEST_MS
from memdash.foom.logic.exits import ANDROID_REASONS, ProcessExitReport
from memdash.foom.writes.exits import store_process_exits
from memdash.ingest.writes.parsers.exitinfo import (
    MAX_INT32,
    check_order,
    check_process,
)
from memdash.ingest.writes.parsers.os_reports import bounded

FORMAT = "android.exitinfo.text"
_OFFSET = re.compile(r"^(?P<sign>[+-])(?P<hours>\d{1,2}):?(?P<minutes>\d{2})?$")


def utc_offset(text: str) -> timezone:
    """`+02:00`, `-0700`, `+5`, `Z`/`UTC`/"" (UTC) as a time zone; anything else is refused."""
    text = text.strip()
    if text in ("", "Z", "UTC", "GMT"):
        return UTC
    match = _OFFSET.match(text)
    if match is None or int(match["hours"]) > 14 or int(match["minutes"] or 0) > 59:
        raise InvalidUpload(
            f"must be the device's offset from UTC such as +02:00 or -0700, got {text[:20]!r}",
            "utc_offset",
        )
    minutes = int(match["hours"]) * 60 + int(match["minutes"] or 0)
    return timezone(timedelta(minutes=minutes if match["sign"] == "+" else -minutes))


def exit_report(
    record: exitinfo_text.TextExit, zone: timezone, meta: UploadMeta
) -> ProcessExitReport:
    where = f"line {record.line}"
    if record.reason not in ANDROID_REASONS:
        raise InvalidUpload(
            f"reason={record.reason} is no ApplicationExitInfo.REASON_* value (0 to 16)", where
        )
    for name, value in (("pid", record.pid), ("importance", record.importance)):
        if not 0 <= value <= MAX_INT32 or (name == "pid" and value == 0):
            raise InvalidUpload(f"`{name}={value}` is out of range", where)
    process = bounded(record.process, where, 255)
    check_process(process, where, meta)
    timestamp = record.local_time.replace(tzinfo=zone).astimezone(UTC)
    if timestamp.timestamp() * 1000 < EARLIEST_MS:
        raise InvalidUpload(f"the exit's timestamp {record.local_time} is before 2008", where)
    return ProcessExitReport(
        path=where, pid=record.pid, process_name=process, reason=ANDROID_REASONS[record.reason],
        description=bounded(record.description, where, 10_000), importance=record.importance,
        timestamp=timestamp, pss_kb=record.pss_kb, rss_kb=record.rss_kb, status=record.status,
    )  # fmt: skip


def detect(raw: bytes, doc: Any) -> bool:
    return doc is NOT_JSON and exitinfo_text.looks_like(raw)


def process(raw: bytes, doc: Any, meta: UploadMeta, progress: Progress) -> StoreResult:
    """Check every record first (nothing is written before), then store and match to runs."""
    if meta.app.platform not in ("android", "other"):
        raise WrongApp(
            f"ApplicationExitInfo comes from Android; this key's app is {meta.app.platform}"
        )
    progress("parse", 0.1)
    zone = utc_offset(meta.utc_offset)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidUpload(f"not UTF-8 text (byte {exc.start})", f"byte {exc.start}") from None
    parsed = exitinfo_text.parse(text)
    if not meta.build_version:
        raise InvalidUpload(
            "ApplicationExitInfo names no app version: send build_version with the upload",
            "build_version",
        )
    exits = [exit_report(record, zone, meta) for record in parsed.exits]
    check_order(exits, field="")
    progress("store", 0.5)
    counts = store_process_exits(
        meta.app, exits, build_version=meta.build_version, build_number=meta.build_number,
        build_commit=meta.build_commit, device_key=meta.device_id,
        device_model=meta.device_model, device_os=meta.os, upload_id=meta.upload_id,
        received_at=meta.received_at,
    )  # fmt: skip
    offset = zone.utcoffset(None)
    minutes = int(offset.total_seconds() // 60) if offset is not None else 0
    return StoreResult(
        kind="exitinfo",
        url=reverse("foom:os_exits", args=[meta.app.pk]),
        counts={**counts, "utc_offset_minutes": minutes},
    )


HANDLER = FormatHandler(
    name=FORMAT,
    description="dumpsys activity exit-info or ApplicationExitInfo.toString() text, with "
    "build_version (and utc_offset)",
    detect=detect,
    process=process,
)
