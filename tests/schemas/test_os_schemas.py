"""docs/schemas/{metrickit,exitinfo}-v1.schema.json agree with the server's parsers: each good
document passes both the schema and the parser; each bad one fails both. No database: the
parsers store nothing."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest

from memdash.core.logic.errors import InvalidUpload
from memdash.core.writes.uploads import UploadMeta
from memdash.ingest.writes.parsers.exitinfo import parse_exitinfo
from memdash.ingest.writes.parsers.metrickit import parse_metrickit

ROOT = Path(__file__).parents[2]
SCHEMAS = {
    name: json.loads((ROOT / "docs/schemas" / f"{name}-v1.schema.json").read_text())
    for name in ("metrickit", "exitinfo")
}
PAYLOAD = json.loads((ROOT / "tests/data/metrickit/metric_payload.json").read_text())
PAYLOAD_ZH = json.loads((ROOT / "tests/data/metrickit/metric_payload_zh.json").read_text())
DIAGNOSTIC = json.loads((ROOT / "tests/data/metrickit/diagnostic_payload.json").read_text())
EXITS = json.loads((ROOT / "tests/data/exitinfo/exits.json").read_text())


def meta(platform: str) -> UploadMeta:
    app: Any = SimpleNamespace(bundle_id="com.example.chat", platform=platform)
    return UploadMeta(app=app, received_at=datetime.now(UTC), build_version="8.0.4")


SERVER = {
    "metrickit": lambda doc: parse_metrickit(doc, meta("ios")),
    "exitinfo": lambda doc: parse_exitinfo(doc, meta("android")),
}


def both_accept(kind: str, doc: Any) -> None:
    jsonschema.validate(doc, SCHEMAS[kind])
    SERVER[kind](doc)


def both_refuse(kind: str, doc: Any) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SCHEMAS[kind])
    with pytest.raises(InvalidUpload):
        SERVER[kind](doc)


def with_change(doc: Any, change) -> Any:
    doc = copy.deepcopy(doc)
    change(doc)
    return doc


def metrickit_wrapper(*payloads: dict) -> dict:
    return {
        "format": "memdash.metrickit", "version": 1,
        "app": {"id": "com.example.chat", "platform": "ios"},
        "device": {"id": "D-1", "model": "iPhone14,5"}, "payloads": list(payloads),
    }  # fmt: skip


@pytest.mark.parametrize(
    "doc",
    [
        PAYLOAD,
        [PAYLOAD, PAYLOAD_ZH],
        [PAYLOAD, DIAGNOSTIC],
        DIAGNOSTIC,
        metrickit_wrapper(PAYLOAD, PAYLOAD_ZH),
        with_change(PAYLOAD, lambda d: d.update(timeStampBegin="2026-10-22 23:00:00")),
        with_change(PAYLOAD, lambda d: d.update(timeStampBegin="2026-10-22T23:00:00Z")),
        with_change(PAYLOAD, lambda d: d["memoryMetrics"].update(averageSuspendedMemory="42 MB")),
    ],
    ids=[
        "payload",
        "list",
        "with a diagnostic",
        "diagnostic",
        "wrapper",
        "no offset",
        "rfc3339",
        "suspended as a string",
    ],  # fmt: skip
)
def test_good_metrickit_passes_both(doc):
    both_accept("metrickit", doc)


@pytest.mark.parametrize(
    "doc",
    [
        with_change(
            PAYLOAD,
            lambda d: d["applicationExitMetrics"]["foregroundExitData"].update(
                cumulativeNormalAppExitCount=-1
            ),
        ),
        with_change(
            PAYLOAD,
            lambda d: d["applicationExitMetrics"]["foregroundExitData"].update(
                cumulativeNormalAppExitCount="5"
            ),
        ),
        with_change(PAYLOAD, lambda d: d.pop("timeStampBegin")),
        with_change(PAYLOAD, lambda d: d.update(timeStampEnd="tomorrow")),
        with_change(PAYLOAD, lambda d: d["memoryMetrics"].update(peakMemoryUsage=123)),
        with_change(PAYLOAD, lambda d: d["memoryMetrics"].update(peakMemoryUsage="-5 kB")),
        with_change(PAYLOAD, lambda d: d["metaData"].update(deviceType=7)),
        with_change(metrickit_wrapper(PAYLOAD), lambda d: d.update(version=2)),
        with_change(metrickit_wrapper(PAYLOAD), lambda d: d.update(payloads={})),
        with_change(DIAGNOSTIC, lambda d: d.update(timeStampEnd="tomorrow")),
        [PAYLOAD, with_change(DIAGNOSTIC, lambda d: d.pop("timeStampBegin"))],
        with_change(DIAGNOSTIC, lambda d: d.update(crashDiagnostics={"x": 1})),
        with_change(
            DIAGNOSTIC,
            lambda d: d["crashDiagnostics"][0]["diagnosticMetaData"].update(bundleIdentifier=7),
        ),
    ],
    ids=[
        "negative",
        "count as text",
        "no begin",
        "bad end",
        "peak as a number",
        "negative peak",
        "device type",
        "version",
        "payloads not a list",
        "diagnostic's bad end",
        "diagnostic without begin",
        "diagnostics not a list",
        "diagnostic's bundle id a number",
    ],  # fmt: skip
)
def test_bad_metrickit_fails_both(doc):
    both_refuse("metrickit", doc)


def exitinfo_wrapper(exits: list) -> dict:
    return {
        "format": "memdash.exitinfo", "version": 1,
        "app": {"id": "com.example.chat", "platform": "android"},
        "build": {"version": "8.0.4", "number": "104"}, "device": {"id": "P1"}, "exits": exits,
    }  # fmt: skip


def exit_changed(index: int, **values: Any) -> list:
    exits = copy.deepcopy(EXITS)
    exits[index].update(values)
    return exits


@pytest.mark.parametrize(
    "doc",
    [
        EXITS,
        exitinfo_wrapper(EXITS),
        exit_changed(0, reason="reason_other"),
        exit_changed(0, reason="OTHER"),
        exit_changed(1, description=None, pss=None, status=-9),
    ],
    ids=["list", "wrapper", "lower case", "no prefix", "nulls"],
)
def test_good_exitinfo_passes_both(doc):
    both_accept("exitinfo", doc)


@pytest.mark.parametrize(
    "doc",
    [
        exit_changed(0, reason=17),
        exit_changed(0, reason="REASON_BORED"),
        exit_changed(1, pid=0),
        exit_changed(1, importance=-1),
        exit_changed(2, timestamp=1792746000),
        exit_changed(2, pss=-1),
        exit_changed(3, processName=" "),
        exit_changed(4, description=12),
        with_change(exitinfo_wrapper(EXITS), lambda d: d.update(exits=None)),
    ],
    ids=[
        "reason 17",
        "unknown reason",
        "pid 0",
        "negative importance",
        "seconds",
        "negative pss",
        "blank process",
        "description",
        "exits",
    ],  # fmt: skip
)
def test_bad_exitinfo_fails_both(doc):
    both_refuse("exitinfo", doc)
