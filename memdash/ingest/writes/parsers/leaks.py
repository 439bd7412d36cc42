"""Leak reports as the tools print them: libmemunreachable (`dumpsys meminfo --unreachable`),
LeakSanitizer/AddressSanitizer logs, valgrind memcheck's text log and XML. They name no app or
build: the app is the key's, the build and device come with the upload (`build_version`,
`device_id` …).

Each is parsed and checked whole (memdash.leaks.logic.parsers) before
memdash.leaks.writes.reports stores it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.urls import reverse

from memdash.core.logic.errors import InvalidUpload
from memdash.core.models import Build, Device
from memdash.core.writes.apps import get_or_create_build, get_or_create_device
from memdash.core.writes.uploads import NOT_JSON, FormatHandler, Progress, StoreResult, UploadMeta
from memdash.leaks.logic.parsers import libmemunreachable, sanitizer, valgrind, valgrind_log
from memdash.leaks.logic.reports import LeakLog, number_past_64_bits
from memdash.leaks.writes.reports import store_leak_log

MAX_BUILD_FIELD = 64
MAX_DEVICE_FIELD = 255


def bounded(value: str, field: str, max_length: int) -> str:
    if len(value) > max_length:
        raise InvalidUpload(f"must be at most {max_length} characters", field)
    return value


def build_and_device(
    meta: UploadMeta, version: str = "", number: str = "", what: str = "leak reports"
) -> tuple[Build, Device | None]:
    """The upload's build (its `build_version`, else `version` as the report names it) and
    device, checked before anything is stored."""
    if not meta.build_version and not version:
        raise InvalidUpload(
            f"{what} name no build: give build_version (and build_number) with the upload",
            "build_version",
        )
    version, number = (
        (meta.build_version, meta.build_number) if meta.build_version else (version, number)
    )
    bounded(version, "build_version", MAX_BUILD_FIELD)
    bounded(number, "build_number", MAX_BUILD_FIELD)
    bounded(meta.build_commit, "build_commit", MAX_BUILD_FIELD)
    bounded(meta.device_id, "device_id", MAX_DEVICE_FIELD)
    app = meta.app
    build = get_or_create_build(app, version, number, meta.build_commit)
    device = (
        get_or_create_device(app, meta.device_id, meta.device_model[:128], meta.os[:128])
        if meta.device_id
        else None
    )
    return build, device


def check_text(raw: bytes) -> None:
    """No tool prints a NUL byte, and the database cannot store one."""
    if (nul := raw.find(b"\x00")) >= 0:
        raise InvalidUpload("contains a NUL byte", f"line {raw.count(b'\n', 0, nul) + 1}")


def check_numbers(log: LeakLog) -> None:
    if (past := number_past_64_bits(log)) is not None:
        line, what = past
        raise InvalidUpload(f"{what} is past 2^63 - 1", f"line {line}")


def store(log: LeakLog, meta: UploadMeta, source_format: str, progress: Progress) -> StoreResult:
    build, device = build_and_device(meta)
    progress("store", 0.5)
    app = meta.app
    stored = store_leak_log(
        app,
        build,
        device,
        log,
        captured_at=meta.received_at,
        received_at=meta.received_at,
        upload_id=meta.upload_id,
        source_format=source_format,
    )
    progress("done", 1.0)
    first = stored.reports[0]
    return StoreResult(
        kind="leaks",
        url=first.get_absolute_url()
        if len(stored.reports) == 1
        else reverse("leaks:group_list", args=[app.pk]),
        object_id=first.pk,
        counts=stored.counts(),
    )


def handler(name: str, description: str, module: Any) -> FormatHandler:
    def detect(raw: bytes, doc: Any) -> bool:
        return doc is NOT_JSON and module.looks_like(raw)

    def process(raw: bytes, doc: Any, meta: UploadMeta, progress: Progress) -> StoreResult:
        progress("parse", 0.0)
        check_text(raw)
        parse: Callable[[bytes], LeakLog] = module.parse
        log = parse(raw)
        check_numbers(log)
        return store(log, meta, name, progress)

    return FormatHandler(name=name, description=description, detect=detect, process=process)


HANDLERS = [
    handler(
        "valgrind.memcheck-xml",
        "valgrind memcheck --xml=yes output (protocol 4 to 6), with build_version",
        valgrind,
    ),
    handler(
        "valgrind.memcheck-log",
        "valgrind memcheck's text log (`==PID==` lines, -v or not), with build_version",
        valgrind_log,
    ),
    handler(
        "sanitizer.leaks",
        "LeakSanitizer/AddressSanitizer leak reports (a test log), with build_version",
        sanitizer,
    ),
    handler(
        "libmemunreachable",
        "dumpsys meminfo --unreachable output (libmemunreachable), with build_version",
        libmemunreachable,
    ),
]
