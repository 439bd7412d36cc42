"""Retain cycles (retain-cycles-v1): the `memdash.retain-cycles` JSON document, and
FBRetainCycleDetector's printed set of cycles (`NSLog(@"%@", cycles)`) with app and build given
beside it (the upload's fields or query parameters).

Both parse and validate everything first (memdash.cycles.logic.parse), then store through
memdash.cycles.writes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.urls import reverse

from memdash.core.logic.errors import InvalidUpload
from memdash.core.writes.apps import get_or_create_build, get_or_create_device
from memdash.core.writes.uploads import (
    NOT_JSON,
    FormatHandler,
    Progress,
    StoreResult,
    UploadMeta,
    check_app,
)
from memdash.cycles.logic.contract import FORMAT_NAME, MAX_NAME_LENGTH
from memdash.cycles.logic.parse import (
    ParsedCycles,
    looks_like_printed_cycles,
    parse_json_document,
    parse_printed_cycles,
)
from memdash.cycles.models import CycleReport
from memdash.cycles.writes import store_cycle_report

TEXT_FORMAT_NAME = "fbretaincycledetector.text"


def _check_meta_field(value: str, name: str, max_length: int) -> str:
    if len(value) > max_length:
        raise InvalidUpload(f"is longer than {max_length} characters", name)
    if "\x00" in value:  # PostgreSQL text cannot hold it
        raise InvalidUpload("must not contain NUL characters", name)
    return value


def _store(
    meta: UploadMeta,
    parsed: ParsedCycles,
    *,
    build_version: str | None,
    build_number: str | None,
    build_commit: str | None,
    device_id: str | None,
    device_model: str | None,
    device_os: str | None,
    captured_at: datetime | None,
    source_format: str,
    progress: Progress,
) -> StoreResult:
    if not build_version:
        raise InvalidUpload(
            "no build: give the build version with the upload (build_version)",
            "build.version" if source_format == FORMAT_NAME else "build_version",
        )
    _check_meta_field(build_version, "build_version", 64)
    _check_meta_field(build_number or "", "build_number", 64)
    _check_meta_field(build_commit or "", "build_commit", 64)
    _check_meta_field(device_id or "", "device_id", MAX_NAME_LENGTH)
    _check_meta_field(device_model or "", "device_model", 128)
    _check_meta_field(device_os or "", "os", 128)
    progress("storing", 0.5)
    app = meta.app
    build = get_or_create_build(app, build_version, build_number or "", build_commit or "")
    device = (
        get_or_create_device(app, device_id, device_model or "", device_os or "")
        if device_id
        else None
    )
    report = store_cycle_report(
        app,
        build,
        device,
        captured_at or meta.received_at,
        parsed,
        source_format=source_format,
        upload_id=meta.upload_id,
    )
    progress("done", 1.0)
    return _result(report)


def _result(report: CycleReport) -> StoreResult:
    clusters = (
        report.occurrences.values("canonical__cluster_id").distinct().count()
        if report.cycles
        else 0
    )
    return StoreResult(
        kind="retain-cycles",
        url=reverse("cycles:cluster_list", args=[report.app_id]),
        object_id=report.pk,
        counts={"cycles": report.cycles, "dropped": report.dropped, "clusters": clusters},
    )


def detect_json(raw: bytes, doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("format") == FORMAT_NAME


def process_json(raw: bytes, doc: Any, meta: UploadMeta, progress: Progress) -> StoreResult:
    progress("parsing", 0.0)
    document = parse_json_document(doc)
    check_app(document.app, meta)
    return _store(
        meta,
        document.parsed,
        build_version=document.build_version or meta.build_version,
        build_number=document.build_number
        if document.build_version
        else (document.build_number or meta.build_number),
        build_commit=document.build_commit or meta.build_commit,
        device_id=document.device_id or meta.device_id,
        device_model=document.device_model or meta.device_model,
        device_os=document.os or meta.os,
        captured_at=document.captured_at,
        source_format=FORMAT_NAME,
        progress=progress,
    )


def detect_text(raw: bytes, doc: Any) -> bool:
    return doc is NOT_JSON and looks_like_printed_cycles(raw)


def process_text(raw: bytes, doc: Any, meta: UploadMeta, progress: Progress) -> StoreResult:
    progress("parsing", 0.0)
    parsed = parse_printed_cycles(raw)
    return _store(
        meta,
        parsed,
        build_version=meta.build_version,
        build_number=meta.build_number,
        build_commit=meta.build_commit,
        device_id=meta.device_id,
        device_model=meta.device_model,
        device_os=meta.os,
        captured_at=None,
        source_format=TEXT_FORMAT_NAME,
        progress=progress,
    )


JSON_HANDLER = FormatHandler(
    name=FORMAT_NAME,
    description="memdash retain cycles JSON",
    detect=detect_json,
    process=process_json,
)
TEXT_HANDLER = FormatHandler(
    name=TEXT_FORMAT_NAME,
    description="FBRetainCycleDetector's printed set of cycles (NSLog), with build_version",
    detect=detect_text,
    process=process_text,
)
HANDLERS = [JSON_HANDLER, TEXT_HANDLER]
