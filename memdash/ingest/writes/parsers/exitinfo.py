"""Android ApplicationExitInfo: what `ActivityManager.getHistoricalProcessExitReasons` answers,
as a JSON array of each record's fields (`reason`, `importance`, `pid`, `timestamp`,
`processName`, `description`, `pss`, `rss`, `status`, `processStateSummary`, …), or inside
memdash's wrapper `memdash.exitinfo`.

The records name no app version: the build is the wrapper's or the upload's (`build_version`,
`build_number`), and a record whose run is found (by the run id the app wrote into
`processStateSummary`, or by pid and time) belongs to that run's build. Everything is checked
before anything is stored; `memdash.foom.writes.exits` stores and matches.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.urls import reverse

from memdash.core.logic.errors import InvalidUpload, WrongApp
from memdash.core.writes.uploads import FormatHandler, Progress, StoreResult, UploadMeta
from memdash.foom.logic.exitinfo_contract import (
    EARLIEST_MS,
    FORMAT,
    MAX_DESCRIPTION,
    MAX_PROCESS_NAME,
)
from memdash.foom.logic.exits import ANDROID_REASONS, ProcessExitReport, android_reason_name
from memdash.foom.writes.exits import store_process_exits
from memdash.ingest.logic.monitor_common import require_int, type_name
from memdash.ingest.writes.parsers.os_reports import (
    Unread,
    UploadSide,
    bounded,
    fill_from_meta,
    read_wrapper,
)

RAW_FORMAT = "android.exitinfo"
MAX_INT32 = 2**31 - 1
MAX_SESSION_ID = 200
# ApplicationExitInfo's getters, as JSON keys: read, or known and left alone.
READ_KEYS = frozenset(
    {"reason", "importance", "pid", "timestamp", "processName", "description", "pss", "rss",
     "status", "processStateSummary"}
)  # fmt: skip
OTHER_KEYS = frozenset({"definingUid", "packageUid", "realUid", "traceInputStream"})


@dataclass
class ExitInfoUpload:
    exits: list[ProcessExitReport]
    side: UploadSide
    unread: Unread


def _reason(value: Any, path: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        if value in ANDROID_REASONS:
            return ANDROID_REASONS[value]
        raise InvalidUpload(f"{value} is no ApplicationExitInfo.REASON_* value (0 to 16)", path)
    if isinstance(value, str) and (name := android_reason_name(value)) is not None:
        return name
    shown = repr(value[:40]) if isinstance(value, str) else type_name(value)
    raise InvalidUpload(
        f"must be an ApplicationExitInfo reason (3, or REASON_LOW_MEMORY), got {shown}", path
    )


def _optional_kb(record: dict[str, Any], key: str, path: str) -> int | None:
    value = record.get(key)
    return None if value is None else require_int(value, f"{path}.{key}")


def _timestamp(value: Any, path: str) -> datetime:
    ms = require_int(value, path)
    if ms < EARLIEST_MS:
        raise InvalidUpload(
            f"{ms} is before 2008: ApplicationExitInfo.getTimestamp() is in milliseconds", path
        )
    try:
        return datetime.fromtimestamp(ms / 1000, UTC)
    except (OverflowError, ValueError, OSError):
        raise InvalidUpload(f"{ms} names no time that exists", path) from None


def check_process(name: str, path: str, meta: UploadMeta) -> None:
    """The app's own process: the package name, or `package:name` for another of its
    processes."""
    bundle = meta.app.bundle_id
    if name != bundle and not name.startswith(f"{bundle}:"):
        raise WrongApp(f"this key belongs to {bundle}, the exit is {name[:100]!r}'s", path)


def parse_exit(value: Any, path: str, meta: UploadMeta, unread: Unread) -> ProcessExitReport:
    if not isinstance(value, dict):
        raise InvalidUpload(f"must be an object, got {type_name(value)}", path)
    record: dict[str, Any] = value
    for key in record:
        if key not in READ_KEYS and key not in OTHER_KEYS:
            unread.add(f"{path}.{key}")
    reason = _reason(record.get("reason"), f"{path}.reason")
    importance = require_int(record.get("importance"), f"{path}.importance")
    if importance > MAX_INT32:
        raise InvalidUpload(f"must be at most {MAX_INT32}, got {importance}", f"{path}.importance")
    pid = require_int(record.get("pid"), f"{path}.pid", minimum=1)
    if pid > MAX_INT32:
        raise InvalidUpload(f"must be at most {MAX_INT32}, got {pid}", f"{path}.pid")
    process = record.get("processName")
    if not isinstance(process, str) or not process.strip():
        raise InvalidUpload(
            f"must be the process name, got {type_name(process)}", f"{path}.processName"
        )
    process = bounded(process, f"{path}.processName", MAX_PROCESS_NAME)
    check_process(process, f"{path}.processName", meta)
    description = record.get("description")
    if description is not None and not isinstance(description, str):
        raise InvalidUpload(
            f"must be a string or null, got {type_name(description)}", f"{path}.description"
        )
    status = record.get("status")
    if status is not None:
        status = require_int(status, f"{path}.status", minimum=-MAX_INT32)
        if status > MAX_INT32:
            raise InvalidUpload(f"must be at most {MAX_INT32}, got {status}", f"{path}.status")
    summary = record.get("processStateSummary")
    session_id = ""
    if isinstance(summary, str) and 0 < len(summary.strip()) <= MAX_SESSION_ID:
        session_id = bounded(summary.strip(), f"{path}.processStateSummary", MAX_SESSION_ID)
    elif summary is not None:
        unread.add(f"{path}.processStateSummary")  # bytes memdash cannot read as a run id
    return ProcessExitReport(
        path=path,
        pid=pid,
        process_name=process,
        reason=reason,
        description=bounded(description or "", f"{path}.description", MAX_DESCRIPTION),
        importance=importance,
        timestamp=_timestamp(record.get("timestamp"), f"{path}.timestamp"),
        pss_kb=_optional_kb(record, "pss", path),
        rss_kb=_optional_kb(record, "rss", path),
        status=status,
        session_id=session_id,
    )


def check_order(exits: list[ProcessExitReport], field: str = ".timestamp") -> None:
    """One direction throughout: newest first as the platform answers, or oldest first; a list
    that changes direction was put together wrong (dates out of order). No exit twice."""
    direction = 0
    seen: dict[tuple[int, datetime], str] = {}
    for previous, current in zip(exits, exits[1:], strict=False):
        step = (current.timestamp > previous.timestamp) - (current.timestamp < previous.timestamp)
        if step and direction and step != direction:
            order = "newest first" if direction < 0 else "oldest first"
            raise InvalidUpload(
                f"is out of order: the list runs {order}, this exit breaks it (dates out of order)",
                f"{current.path}{field}",
            )
        direction = direction or step
    for report in exits:
        key = (report.pid, report.timestamp)
        if key in seen:
            raise InvalidUpload(
                f"the same exit (pid and timestamp) as {seen[key]}; send each exit once",
                report.path,
            )
        seen[key] = report.path


def parse_exitinfo(doc: Any, meta: UploadMeta) -> ExitInfoUpload:
    """The whole upload, checked; nothing is stored."""
    if meta.app.platform not in ("android", "other"):
        raise WrongApp(
            f"ApplicationExitInfo comes from Android; this key's app is {meta.app.platform}"
        )
    unread = Unread()
    if isinstance(doc, dict):
        items, side = read_wrapper(doc, FORMAT, "exits", meta, unread)
        prefix = "exits"
    elif isinstance(doc, list):
        items, side, prefix = doc, fill_from_meta(UploadSide(), meta), ""
    else:
        raise InvalidUpload(f"must be a list of exits, got {type_name(doc)}")
    if not side.build_version:
        raise InvalidUpload(
            "ApplicationExitInfo names no app version: send build_version with the upload "
            "(or the wrapper's build)",
            "build_version",
        )
    exits = [parse_exit(item, f"{prefix}[{i}]", meta, unread) for i, item in enumerate(items)]
    check_order(exits)
    return ExitInfoUpload(exits, side, unread)


def detect_raw(raw: bytes, doc: Any) -> bool:
    first = doc[0] if isinstance(doc, list) and doc else None
    return (
        isinstance(first, dict) and "reason" in first and ("pid" in first or "importance" in first)
    )


def detect_wrapper(raw: bytes, doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("format") == FORMAT


def process(raw: bytes, doc: Any, meta: UploadMeta, progress: Progress) -> StoreResult:
    """Check every exit first (nothing is written before), then store and match to runs."""
    progress("parse", 0.1)
    parsed = parse_exitinfo(doc, meta)
    progress("store", 0.5)
    side = parsed.side
    counts = store_process_exits(
        meta.app,
        parsed.exits,
        build_version=side.build_version,
        build_number=side.build_number,
        build_commit=side.build_commit,
        device_key=side.device_id,
        device_model=side.device_model,
        device_os=side.device_os,
        upload_id=meta.upload_id,
        received_at=meta.received_at,
    )
    return StoreResult(
        kind="exitinfo",
        url=reverse("foom:os_exits", args=[meta.app.pk]),
        counts=counts,
        unread=parsed.unread.listed(),
    )


WRAPPER_HANDLER = FormatHandler(
    name=FORMAT,
    description="memdash's wrapper around Android ApplicationExitInfo records",
    detect=detect_wrapper,
    process=process,
)
RAW_HANDLER = FormatHandler(
    name=RAW_FORMAT,
    description="Android ApplicationExitInfo records as a JSON array of their fields",
    detect=detect_raw,
    process=process,
)
HANDLERS = [WRAPPER_HANDLER, RAW_HANDLER]
