"""iOS MetricKit: `MXMetricPayload.jsonRepresentation()` as the app receives it (one payload, or
the list `didReceive(_:)` hands over), or inside memdash's wrapper `memdash.metrickit`.

Read: the window (`timeStampBegin`, `timeStampEnd`), `appVersion` and `metaData` (build number,
device type, OS, architecture, bundle id), the exit counts per reason
(`applicationExitMetrics.foregroundExitData` / `backgroundExitData`) and `memoryMetrics`
(`peakMemoryUsage`, `averageSuspendedMemory`). Apple's other sections (CPU, GPU, launch times, …)
are known and left alone; keys memdash does not know are listed with the upload. Diagnostic
payloads (`MXDiagnosticPayload`) are read diagnostic by diagnostic (`foom.logic.diagnostics`):
each is counted and stored with its kind, its build (`diagnosticMetaData.appVersion` and
`appBuildVersion`), what happened and its call-stack tree (`memdash.foom.writes.diagnostics`).

Everything is checked before anything is stored; the counts are stored by
`memdash.foom.writes.exits`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import orjson
from django.urls import reverse

from memdash.core.logic.errors import InvalidUpload, WrongApp
from memdash.core.logic.numbers import MAX_INT64
from memdash.core.logic.rfc3339 import parse_rfc3339
from memdash.core.writes.uploads import FormatHandler, Progress, StoreResult, UploadMeta
from memdash.foom.logic.diagnostics import Diagnostic, read_diagnostics
from memdash.foom.logic.exits import MetricKitReport
from memdash.foom.writes.diagnostics import store_diagnostics
from memdash.foom.writes.exits import store_metrickit
from memdash.ingest.logic.monitor_common import type_name
from memdash.ingest.writes.parsers.os_reports import (
    MAX_BUILD_FIELD,
    MAX_MODEL,
    Unread,
    UploadSide,
    bounded,
    fill_from_meta,
    join,
    read_wrapper,
)

FORMAT = "memdash.metrickit"
RAW_FORMAT = "metrickit"
MAX_COUNT = 2**31 - 1
APPLE_PLATFORMS = ("ios", "macos", "other")

# The sections of MXMetricPayload's JSON: read, or known and left alone.
READ_SECTIONS = frozenset(
    {"timeStampBegin", "timeStampEnd", "appVersion", "metaData", "applicationExitMetrics",
     "memoryMetrics"}
)  # fmt: skip
OTHER_SECTIONS = frozenset(
    {"cpuMetrics", "gpuMetrics", "cellularConditionMetrics", "applicationTimeMetrics",
     "locationActivityMetrics", "networkTransferMetrics", "applicationLaunchMetrics",
     "applicationResponsivenessMetrics", "diskIOMetrics", "displayMetrics", "animationMetrics",
     "signpostMetrics", "diskSpaceUsageMetrics", "includesMultipleApplicationVersions",
     "latestApplicationVersion"}
)  # fmt: skip
META_KEYS = frozenset(
    {"appBuildVersion", "osVersion", "deviceType", "platformArchitecture", "regionFormat",
     "bundleIdentifier", "lowPowerModeEnabled", "isTestFlightApp", "pid"}
)  # fmt: skip
EXIT_KEYS = frozenset({"foregroundExitData", "backgroundExitData"})
MEMORY_KEYS = frozenset({"peakMemoryUsage", "averageSuspendedMemory"})
AVERAGE_KEYS = frozenset({"averageValue", "standardDeviation", "sampleCount"})
DIAGNOSTIC_SECTIONS = (
    "crashDiagnostics", "hangDiagnostics", "cpuExceptionDiagnostics",
    "diskWriteExceptionDiagnostics", "appLaunchDiagnostics",
)  # fmt: skip
_EXIT_COUNT_KEY = re.compile(r"cumulative\w+Count")

# Units of information as Foundation formats them (kB = 1000 bytes, as UnitInformationStorage
# says), in English and as a device set to Chinese writes them.
UNITS: dict[str, int] = {
    "b": 1, "byte": 1, "bytes": 1, "字节": 1,
    "kb": 1000, "千字节": 1000, "kib": 1024,
    "mb": 1000**2, "兆字节": 1000**2, "mib": 1024**2,
    "gb": 1000**3, "吉字节": 1000**3, "gib": 1024**3,
}  # fmt: skip
_MEASUREMENT = re.compile(r"\s*(-?\d[\d.,'\s\u00a0\u202f]*?)\s*([^\d\s.,'][^\d]*?)\s*")
_STAMP = re.compile(
    r"(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?: ?(Z|[+-]\d{2}:?\d{2}))?",
    re.ASCII,
)


@dataclass
class MetricKitUpload:
    reports: list[MetricKitReport]
    side: UploadSide
    unread: Unread
    diagnostics: list[Diagnostic] = field(default_factory=list)


# --- values ---------------------------------------------------------------------------------------


def parse_number(text: str) -> float:
    """A number as a device's locale writes it: `1,106,818`, `1.106.818`, `184.2`, `1 106 818`.
    A lone separator followed by exactly three digits groups thousands (MetricKit writes
    memory as whole kilobytes); otherwise it is the decimal point."""
    digits = re.sub(r"[\s\u00a0\u202f']", "", text)
    commas, dots = digits.count(","), digits.count(".")
    if commas and dots:
        decimal = "," if digits.rfind(",") > digits.rfind(".") else "."
        grouping = "." if decimal == "," else ","
        digits = digits.replace(grouping, "").replace(decimal, ".")
    elif commas + dots:
        sep = "," if commas else "."
        whole, _, tail = digits.rpartition(sep)
        if commas + dots > 1 or len(tail) == 3:
            digits = digits.replace(sep, "")
        else:
            digits = f"{whole}.{tail}"
    return float(digits)


def parse_bytes(value: Any, path: str) -> int | None:
    """`"123456 kB"` -> 123456000 bytes; None when the unit is one memdash does not know (the
    value is listed as unread). Not a string, no number, or negative: refused."""
    if not isinstance(value, str):
        raise InvalidUpload(f"must be a measurement like '123456 kB', got {type_name(value)}", path)
    match = _MEASUREMENT.fullmatch(value)
    if match is None:
        raise InvalidUpload(f"{value[:40]!r} is not a number with a unit, like '123456 kB'", path)
    try:
        number = parse_number(match[1])
    except ValueError:
        raise InvalidUpload(f"{value[:40]!r} is not a number with a unit", path) from None
    if number < 0:
        raise InvalidUpload(f"must not be negative, got {value[:40]!r}", path)
    factor = UNITS.get(match[2].strip().lower())
    if factor is None:
        return None
    return round(number * factor)


def parse_stamp(value: Any, path: str) -> datetime:
    """`2026-10-01 00:00:00 +0000` (MetricKit), the same without offset (UTC, as Xcode's
    simulated payloads write it), or RFC 3339."""
    if not isinstance(value, str):
        raise InvalidUpload(f"must be a timestamp string, got {type_name(value)}", path)
    match = _STAMP.fullmatch(value.strip())
    if match is None:
        try:
            return parse_rfc3339(value.strip())
        except ValueError:
            raise InvalidUpload(
                f"{value[:40]!r} is not a timestamp like '2026-10-01 00:00:00 +0000'", path
            ) from None
    offset = timedelta(0)
    if match[7] and match[7] != "Z":
        sign, hours, minutes = match[7][0], int(match[7][1:3]), int(match[7][-2:])
        offset = timedelta(hours=hours, minutes=minutes) * (-1 if sign == "-" else 1)
    year, month, day, hour, minute, second = (int(match[i]) for i in range(1, 7))
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=timezone(offset))
        return moment.astimezone(UTC)
    except (ValueError, OverflowError):
        raise InvalidUpload(f"{value[:40]!r} names no date and time that exists", path) from None


def _count(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidUpload(f"must be a whole number of exits, got {type_name(value)}", path)
    if value < 0:
        raise InvalidUpload(f"must not be negative, got {value}", path)
    if value > MAX_COUNT:
        raise InvalidUpload(f"must be at most {MAX_COUNT}, got {value}", path)
    return value


def _object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidUpload(f"must be an object, got {type_name(value)}", path)
    return value


def _string(obj: dict[str, Any], key: str, path: str, max_length: int = MAX_MODEL) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidUpload(f"must be a string, got {type_name(value)}", join(path, key))
    return bounded(value.strip(), join(path, key), max_length)


# --- a payload ------------------------------------------------------------------------------------


def _exit_counts(value: Any, path: str, unread: Unread) -> dict[str, int]:
    if value is None:
        return {}
    data = _object(value, path)
    counts: dict[str, int] = {}
    for key, n in data.items():
        if _EXIT_COUNT_KEY.fullmatch(key):  # a reason memdash may not know yet still counts
            counts[key] = _count(n, join(path, key))
        else:
            unread.add(join(path, key))
    if sum(counts.values()) > MAX_INT64:  # the exits of the window are stored as one number
        raise InvalidUpload(f"the counts add up to more than {MAX_INT64}", path)
    return counts


def _bundle(info: dict[str, Any], path: str, meta: UploadMeta) -> None:
    """`bundleIdentifier` of a payload's `metaData` (or a diagnostic's `diagnosticMetaData`),
    when present, must be the key's app: 403 at its path otherwise."""
    bundle = _string(info, "bundleIdentifier", path, 255)
    if bundle and bundle != meta.app.bundle_id:
        raise WrongApp(
            f"this key belongs to {meta.app.bundle_id}, the payload is {bundle}'s",
            join(path, "bundleIdentifier"),
        )


def _window(payload: dict[str, Any], path: str) -> tuple[datetime, datetime]:
    """`timeStampBegin` and `timeStampEnd`, the end not before the begin."""
    begins_at = parse_stamp(payload.get("timeStampBegin"), join(path, "timeStampBegin"))
    ends_at = parse_stamp(payload.get("timeStampEnd"), join(path, "timeStampEnd"))
    if ends_at < begins_at:
        raise InvalidUpload(
            f"{ends_at:%Y-%m-%d %H:%M:%S} is before timeStampBegin "
            f"{begins_at:%Y-%m-%d %H:%M:%S} (dates out of order)",
            join(path, "timeStampEnd"),
        )
    return begins_at, ends_at


def _memory(value: Any, path: str, unread: Unread) -> tuple[int | None, int | None, int | None]:
    """(peak bytes, average suspended bytes, its sample count)."""
    if value is None:
        return None, None, None
    data = _object(value, path)
    unread.unknown_keys(data, MEMORY_KEYS, path)
    peak = None
    if data.get("peakMemoryUsage") is not None:
        peak = parse_bytes(data["peakMemoryUsage"], join(path, "peakMemoryUsage"))
        if peak is None:
            unread.add(join(path, "peakMemoryUsage"))
    suspended = samples = None
    average = data.get("averageSuspendedMemory")
    at = join(path, "averageSuspendedMemory")
    if isinstance(average, dict):
        unread.unknown_keys(average, AVERAGE_KEYS, at)
        if average.get("sampleCount") is not None:
            samples = _count(average["sampleCount"], f"{at}.sampleCount")
        deviation = average.get("standardDeviation")
        if deviation is not None and (
            isinstance(deviation, bool) or not isinstance(deviation, int | float)
        ):
            raise InvalidUpload(
                f"must be a number, got {type_name(deviation)}", f"{at}.standardDeviation"
            )
        if average.get("averageValue") is not None:
            suspended = parse_bytes(average["averageValue"], f"{at}.averageValue")
            if suspended is None:
                unread.add(f"{at}.averageValue")
    elif average is not None:
        suspended = parse_bytes(average, at)
        if suspended is None:
            unread.add(at)
    if samples == 0:
        suspended = None  # an average of no samples (MetricKit writes 0 then)
    return peak, suspended, samples


def parse_payload(
    value: Any, path: str, side: UploadSide, meta: UploadMeta, unread: Unread
) -> MetricKitReport:
    payload = _object(value, path or "(document)")
    for key in payload:
        if key not in READ_SECTIONS and key not in OTHER_SECTIONS:
            unread.add(join(path, key))
    meta_path = join(path, "metaData")
    info = _object(payload.get("metaData") or {}, meta_path)
    unread.unknown_keys(info, META_KEYS, meta_path)
    _bundle(info, meta_path, meta)
    begins_at, ends_at = _window(payload, path)
    version = _string(payload, "appVersion", path, MAX_BUILD_FIELD) or side.build_version
    if not version:
        raise InvalidUpload(
            "names no app version: send the upload with build_version (or a wrapper's build)",
            join(path, "appVersion"),
        )
    number = _string(info, "appBuildVersion", meta_path, MAX_BUILD_FIELD) or side.build_number
    exits_path = join(path, "applicationExitMetrics")
    exits = _object(payload.get("applicationExitMetrics") or {}, exits_path)
    unread.unknown_keys(exits, EXIT_KEYS, exits_path)
    foreground = _exit_counts(
        exits.get("foregroundExitData"), join(exits_path, "foregroundExitData"), unread
    )
    background = _exit_counts(
        exits.get("backgroundExitData"), join(exits_path, "backgroundExitData"), unread
    )
    peak, suspended, samples = _memory(
        payload.get("memoryMetrics"), join(path, "memoryMetrics"), unread
    )
    return MetricKitReport(
        path=path,
        digest=hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest(),
        build_version=version,
        build_number=number,
        device_type=_string(info, "deviceType", meta_path) or side.device_model,
        os_version=_string(info, "osVersion", meta_path) or side.device_os,
        architecture=_string(info, "platformArchitecture", meta_path, 32),
        begins_at=begins_at,
        ends_at=ends_at,
        foreground=foreground,
        background=background,
        peak_memory_bytes=peak,
        suspended_memory_bytes=suspended,
        suspended_samples=samples,
    )


def is_diagnostic(value: Any) -> bool:
    return isinstance(value, dict) and any(k in value for k in DIAGNOSTIC_SECTIONS)


def read_diagnostic_payload(
    item: dict[str, Any], path: str, side: UploadSide, meta: UploadMeta
) -> list[Diagnostic]:
    """An MXDiagnosticPayload's diagnostics, one by one: its window in order, each diagnostic's
    `diagnosticMetaData.bundleIdentifier` the key's app (403 at its path otherwise), its build
    named (else the upload's)."""
    if item.get("timeStampEnd") is None:  # a window of one moment may leave its end out
        begins_at = ends_at = parse_stamp(item.get("timeStampBegin"), join(path, "timeStampBegin"))
    else:
        begins_at, ends_at = _window(item, path)
    diagnostics = read_diagnostics(item, path)
    for diagnostic in diagnostics:
        at = f"{diagnostic.path}.diagnosticMetaData"
        _bundle({"bundleIdentifier": diagnostic.bundle}, at, meta)
        diagnostic.app_version = diagnostic.app_version or side.build_version
        diagnostic.build_number = diagnostic.build_number or side.build_number
        if not diagnostic.app_version:
            raise InvalidUpload(
                "names no app version: send the upload with build_version (or a wrapper's build)",
                f"{at}.appVersion",
            )
        bounded(diagnostic.app_version, f"{at}.appVersion", MAX_BUILD_FIELD)
        bounded(diagnostic.build_number, f"{at}.appBuildVersion", MAX_BUILD_FIELD)
        diagnostic.device_type = (diagnostic.device_type or side.device_model)[:MAX_MODEL]
        diagnostic.os_version = (diagnostic.os_version or side.device_os)[:MAX_MODEL]
        diagnostic.architecture = diagnostic.architecture[:32]
        diagnostic.begins_at, diagnostic.ends_at = begins_at, ends_at
    return diagnostics


def is_metric_payload(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and "timeStampBegin" in value
        and ("metaData" in value or "applicationExitMetrics" in value)
    )


def parse_metrickit(doc: Any, meta: UploadMeta) -> MetricKitUpload:
    """The whole upload, checked; nothing is stored."""
    if meta.app.platform not in APPLE_PLATFORMS:
        raise WrongApp(
            f"MetricKit payloads come from Apple's platforms; this key's app is {meta.app.platform}"
        )
    unread = Unread()
    prefix: str | None  # None: a lone payload, whose paths start at its keys
    if isinstance(doc, dict) and "format" in doc:
        items, side = read_wrapper(doc, FORMAT, "payloads", meta, unread)
        prefix, one_device = "payloads", bool(side.device_id)
    else:
        side = fill_from_meta(UploadSide(), meta)
        items, one_device = (doc if isinstance(doc, list) else [doc]), True
        prefix = None if isinstance(doc, dict) else ""
    upload = MetricKitUpload([], side, unread)
    for i, item in enumerate(items):
        path = "" if prefix is None else f"{prefix}[{i}]"
        if is_diagnostic(item):
            upload.diagnostics.extend(read_diagnostic_payload(item, path, side, meta))
            continue
        report = parse_payload(item, path, side, meta, unread)
        previous = upload.reports[-1] if upload.reports else None
        if one_device and previous is not None and report.begins_at < previous.ends_at:
            raise InvalidUpload(
                f"begins before the previous payload ends ({previous.ends_at:%Y-%m-%d %H:%M} "
                "UTC): one device's payloads come in time order (dates out of order)",
                join(path, "timeStampBegin"),
            )
        upload.reports.append(report)
    return upload


# --- the handlers ---------------------------------------------------------------------------------


def detect_raw(raw: bytes, doc: Any) -> bool:
    first = doc[0] if isinstance(doc, list) and doc else doc
    return is_metric_payload(first) or (is_diagnostic(first) and "timeStampBegin" in first)


def detect_wrapper(raw: bytes, doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("format") == FORMAT


def process(raw: bytes, doc: Any, meta: UploadMeta, progress: Progress) -> StoreResult:
    """Check every payload first (nothing is written before), then store."""
    progress("parse", 0.1)
    parsed = parse_metrickit(doc, meta)
    progress("store", 0.5)
    counts = store_metrickit(
        meta.app,
        parsed.reports,
        device_key=parsed.side.device_id,
        build_commit=parsed.side.build_commit,
        upload_id=meta.upload_id,
        received_at=meta.received_at,
    )
    counts.update(
        store_diagnostics(
            meta.app,
            parsed.diagnostics,
            device_key=parsed.side.device_id,
            build_commit=parsed.side.build_commit,
            upload_id=meta.upload_id,
            received_at=meta.received_at,
        )
    )
    return StoreResult(
        kind="metrickit",
        url=reverse("foom:os_exits", args=[meta.app.pk]),
        counts=counts,
        unread=parsed.unread.listed(),
    )


WRAPPER_HANDLER = FormatHandler(
    name=FORMAT,
    description="memdash's wrapper around iOS MetricKit payloads",
    detect=detect_wrapper,
    process=process,
)
RAW_HANDLER = FormatHandler(
    name=RAW_FORMAT,
    description="iOS MetricKit MXMetricPayload JSON (jsonRepresentation), one or a list",
    detect=detect_raw,
    process=process,
)
HANDLERS = [WRAPPER_HANDLER, RAW_HANDLER]
