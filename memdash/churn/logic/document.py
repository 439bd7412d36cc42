"""The `memdash.churn` upload, version 1: validation into plain data (pure, no Django).

```json
{
  "format": "memdash.churn", "version": 1,
  "app": {"id": "com.example.chat", "platform": "ios"},
  "build": {"version": "8.0.4", "number": "104", "commit": "9f1c2e7"},
  "device": {"id": "ci-iphone-12", "model": "iPhone13,2", "os": "17.4"},
  "captured_at": "2026-11-20T10:12:03+00:00",
  "runs": [
    {"id": "run-1", "scenarios": [
      {"name": "open_chat", "thread": "main",
       "start_marker": "openChat.begin", "end_marker": "openChat.end", "elapsed_ms": 412.5,
       "calls": [["malloc", 64], ["realloc", 256], ["free", 64]]},
      {"name": "send_message", "thread": "main",
       "start_marker": "send.begin", "end_marker": "send.end", "elapsed_ms": 88.0,
       "functions": {"malloc": {"count": 120, "bytes": 9600, "log2_bytes": 720.0}}}
    ]}
  ]
}
```

`validate_churn_document(doc)` returns a `ChurnDocument` or raises `InvalidUpload` with the JSON
path of the first bad value. Raw calls are reduced to per-function sums here, so both shapes are
stored alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memdash.churn.logic.contract import FORMAT, MAX_FUNCTION_NAME, MAX_NAME, VERSION
from memdash.churn.logic.cost import FunctionSums, max_log2_bytes, sums_from_calls
from memdash.core.logic.errors import InvalidUpload
from memdash.core.logic.numbers import MAX_INT64
from memdash.core.logic.rfc3339 import timestamp_field

# Σ log2 b is a float sum the device computed; allow its rounding before calling it impossible.
LOG2_TOLERANCE = 1e-6


@dataclass
class ScenarioRun:
    name: str
    thread: str
    start_marker: str
    end_marker: str
    elapsed_ms: float
    functions: dict[str, FunctionSums]
    sent_calls: bool  # True when the device sent the calls, False for per-function sums

    @property
    def calls(self) -> int:
        return sum(sums.count for sums in self.functions.values())


@dataclass
class ChurnRun:
    id: str
    scenarios: list[ScenarioRun] = field(default_factory=list)


@dataclass
class ChurnDocument:
    app: Any  # checked against the upload key's app by the handler (formats.check_app)
    build_version: str = ""
    build_number: str = ""
    build_commit: str = ""
    device_id: str = ""
    device_model: str = ""
    device_os: str = ""
    captured_at: datetime | None = None
    runs: list[ChurnRun] = field(default_factory=list)


def validate_churn_document(doc: Any) -> ChurnDocument:
    if not isinstance(doc, dict):
        raise InvalidUpload("must be a JSON object", "")
    if doc.get("format") != FORMAT:
        raise InvalidUpload(f"must be {FORMAT!r}", "format")
    if doc.get("version") != VERSION or isinstance(doc.get("version"), bool):
        raise InvalidUpload(
            f"unknown version {doc.get('version')!r}; this server reads version {VERSION}",
            "version",
        )
    if "app" not in doc:
        raise InvalidUpload("is required", "app")
    result = ChurnDocument(app=doc["app"])
    read_build(doc.get("build"), result)
    read_device(doc.get("device"), result)
    if doc.get("captured_at") is not None:
        result.captured_at = timestamp_field(doc["captured_at"], "captured_at")
    runs = doc.get("runs")
    if not isinstance(runs, list) or not runs:
        raise InvalidUpload("must be a non-empty list of runs", "runs")
    seen_ids: set[str] = set()
    for index, run in enumerate(runs):
        path = f"runs[{index}]"
        churn_run = read_run(run, path)
        if churn_run.id in seen_ids:
            raise InvalidUpload(f"run id {churn_run.id!r} appears twice", f"{path}.id")
        seen_ids.add(churn_run.id)
        result.runs.append(churn_run)
    return result


def read_build(build: Any, result: ChurnDocument) -> None:
    """`build` may be left out when the upload gives the build beside the document."""
    if build is None:
        return
    if not isinstance(build, dict):
        raise InvalidUpload("must be an object with `version`", "build")
    result.build_version = text(build.get("version"), "build.version", required=True)
    result.build_number = text(build.get("number"), "build.number")
    result.build_commit = text(build.get("commit"), "build.commit")


def read_device(device: Any, result: ChurnDocument) -> None:
    if device is None:
        return
    if not isinstance(device, dict):
        raise InvalidUpload("must be an object", "device")
    result.device_id = text(device.get("id"), "device.id")
    result.device_model = text(device.get("model"), "device.model")
    result.device_os = text(device.get("os"), "device.os")


def read_run(run: Any, path: str) -> ChurnRun:
    if not isinstance(run, dict):
        raise InvalidUpload("must be an object with `id` and `scenarios`", path)
    run_id = run.get("id")
    if isinstance(run_id, int) and not isinstance(run_id, bool):
        run_id = str(run_id)
    churn_run = ChurnRun(id=text(run_id, f"{path}.id", required=True))
    scenarios = run.get("scenarios")
    if not isinstance(scenarios, list) or not scenarios:
        raise InvalidUpload("must be a non-empty list", f"{path}.scenarios")
    names: set[str] = set()
    for index, scenario in enumerate(scenarios):
        scenario_path = f"{path}.scenarios[{index}]"
        scenario_run = read_scenario(scenario, scenario_path)
        if scenario_run.name in names:
            raise InvalidUpload(
                f"scenario {scenario_run.name!r} appears twice in this run; "
                "send each repetition as its own run",
                f"{scenario_path}.name",
            )
        names.add(scenario_run.name)
        churn_run.scenarios.append(scenario_run)
    return churn_run


def read_scenario(scenario: Any, path: str) -> ScenarioRun:
    if not isinstance(scenario, dict):
        raise InvalidUpload("must be an object", path)
    has_calls, has_functions = "calls" in scenario, "functions" in scenario
    if has_calls == has_functions:
        raise InvalidUpload("must have either `calls` or `functions` (not both)", path)
    if has_calls:
        functions = read_calls(scenario["calls"], f"{path}.calls")
    else:
        functions = read_function_sums(scenario["functions"], f"{path}.functions")
    return ScenarioRun(
        name=text(scenario.get("name"), f"{path}.name", required=True),
        thread=text(scenario.get("thread"), f"{path}.thread"),
        start_marker=text(scenario.get("start_marker"), f"{path}.start_marker"),
        end_marker=text(scenario.get("end_marker"), f"{path}.end_marker"),
        elapsed_ms=non_negative_number(scenario.get("elapsed_ms"), f"{path}.elapsed_ms"),
        functions=functions,
        sent_calls=has_calls,
    )


def read_calls(calls: Any, path: str) -> dict[str, FunctionSums]:
    if not isinstance(calls, list):
        raise InvalidUpload("must be a list of [function, bytes] pairs", path)
    pairs = []
    for index, call in enumerate(calls):
        if not isinstance(call, list) or len(call) != 2:
            raise InvalidUpload("must be a [function, bytes] pair", f"{path}[{index}]")
        function = function_name(call[0], f"{path}[{index}][0]")
        pairs.append((function, non_negative_int(call[1], f"{path}[{index}][1]")))
    sums = sums_from_calls(pairs)
    for function, function_sums in sums.items():
        if function_sums.bytes > MAX_INT64:
            raise InvalidUpload(f"the {function} calls add up to more than 2⁶³ bytes", path)
    return sums


def read_function_sums(functions: Any, path: str) -> dict[str, FunctionSums]:
    if not isinstance(functions, dict):
        raise InvalidUpload("must be an object of function -> {count, bytes, log2_bytes}", path)
    result: dict[str, FunctionSums] = {}
    for name, sums in functions.items():
        item_path = f"{path}.{name}"
        function = function_name(name, item_path)
        if not isinstance(sums, dict):
            raise InvalidUpload("must be an object with count, bytes, log2_bytes", item_path)
        count = non_negative_int(sums.get("count"), f"{item_path}.count")
        total = non_negative_int(sums.get("bytes"), f"{item_path}.bytes")
        log2_bytes = non_negative_number(sums.get("log2_bytes"), f"{item_path}.log2_bytes")
        if count == 0 and (total or log2_bytes):
            raise InvalidUpload("bytes and log2_bytes must be 0 when count is 0", item_path)
        ceiling = max_log2_bytes(count, total)
        if log2_bytes > ceiling + LOG2_TOLERANCE * max(1.0, ceiling):
            raise InvalidUpload(
                f"{log2_bytes} is more than {count} calls of {total} bytes in all can have "
                f"(at most {ceiling:.6g}: count × log2(bytes / count)); log2_bytes is the sum "
                "of log2 of each call's size",
                f"{item_path}.log2_bytes",
            )
        result[function] = FunctionSums(count, total, log2_bytes)
    return result


def function_name(value: Any, path: str) -> str:
    name = text(value, path, required=True)
    if len(name) > MAX_FUNCTION_NAME:
        raise InvalidUpload(f"longer than {MAX_FUNCTION_NAME} characters", path)
    return name


def text(value: Any, path: str, required: bool = False) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise InvalidUpload("must be a non-empty string" if required else "must be a string", path)
    if len(value) > MAX_NAME:
        raise InvalidUpload(f"longer than {MAX_NAME} characters", path)
    if "\x00" in value:  # PostgreSQL text cannot hold it
        raise InvalidUpload("must not contain NUL characters", path)
    return value


def non_negative_int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INT64:
        raise InvalidUpload("must be an integer from 0 to 2⁶³ - 1", path)
    return value


def non_negative_number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidUpload("must be a number ≥ 0", path)
    if not math.isfinite(value) or value < 0:
        raise InvalidUpload("must be a finite number ≥ 0", path)
    return float(value)
