"""MetricKit's diagnostics (`MXDiagnosticPayload.jsonRepresentation()`), one by one, with their
call-stack trees (plain data, no Django).

A payload holds lists of diagnostics by kind (`crashDiagnostics`, `hangDiagnostics`,
`cpuExceptionDiagnostics`, `diskWriteExceptionDiagnostics`, `appLaunchDiagnostics`); each has its
`diagnosticMetaData` (the app's version and build, the device, and what happened: the exception
type, code and signal of a crash, a hang's duration, the writes that tripped the disk limit) and
its `callStackTree` (`MXCallStackTree.JSONRepresentation()`): per thread (`callStackPerThread`)
or per sample, `callStackRootFrames` whose `subFrames` nest, each frame a `binaryUUID`, an
`offsetIntoBinaryTextSegment`, a `sampleCount` and, when the device knew them, `binaryName` and
`address`. In a tree per thread (crashes, hangs) a root frame is where the thread was and its
sub-frames are its callers, down to `start` (a real crash's tree,
tests/data/metrickit/sentry-cocoa/tree-real.json: the crashing function, then the app's frames
that called it, UIKit's, … dyld's `start`); a tree of samples from several threads (CPU and disk
write exceptions) is rooted where the threads began, each frame's sub-frames what it called, its
`sampleCount` split among them. Either way it is kept and shown as sent: root first, sub-frames
below.

`read_call_stack_tree` checks a tree and keeps it as plain lists: a frame is
`[uuid, offset, samples, binary name, [sub-frames…]]`, the shape stored and named by the app's
debug files (memdash.foom.reads.diagnostics).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from memdash.core.logic.errors import InvalidUpload

KINDS = {
    "crashDiagnostics": "crash",
    "hangDiagnostics": "hang",
    "cpuExceptionDiagnostics": "cpu_exception",
    "diskWriteExceptionDiagnostics": "disk_write",
    "appLaunchDiagnostics": "launch",
}
KIND_LABELS = {
    "crash": "Crash",
    "hang": "Hang",
    "cpu_exception": "CPU exception",
    "disk_write": "Disk writes",
    "launch": "Launch",
}
MAX_FRAMES = 20_000  # per diagnostic: a tree larger than any device writes is refused
MAX_DEPTH = 1_000
MAX_OFFSET = 2**63 - 1
MAX_TEXT = 500
# What a diagnostic says happened, by kind: the metadata keys shown as its summary.
SUMMARY_KEYS = (
    "terminationReason", "exceptionType", "exceptionCode", "signal", "hangDuration",
    "writesCaused", "launchDuration", "totalCPUTime", "totalSampledTime",
    "virtualMemoryRegionInfo",
)  # fmt: skip
META_FIELDS = (
    "appVersion", "appBuildVersion", "deviceType", "osVersion", "platformArchitecture",
    "bundleIdentifier",
)  # fmt: skip

Frame = list[Any]  # [binary uuid, offset, samples, binary name, sub-frames]


@dataclass
class CallStack:
    attributed: bool  # the thread the diagnostic is about (`threadAttributed`)
    frames: list[Frame]  # its root frames


@dataclass
class Diagnostic:
    """One diagnostic of a payload, checked."""

    path: str
    kind: str
    app_version: str
    build_number: str
    device_type: str
    os_version: str
    architecture: str
    summary: dict[str, str | int | float]
    per_thread: bool
    stacks: list[CallStack] = field(default_factory=list)
    digest: str = ""
    bundle: str = ""  # the app it names (`bundleIdentifier`), checked by the door
    begins_at: datetime | None = None  # the payload's window (set by the door)
    ends_at: datetime | None = None


def _type(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, int | float) else "null"
    )


def _whole(value: Any, path: str, limit: int = MAX_OFFSET) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
        raise InvalidUpload(f"must be a whole number from 0 to {limit}, got {value!r:.40}", path)
    return value


def _text(value: Any, path: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidUpload(f"must be a string, got {_type(value)}", path)
    if "\x00" in value:  # PostgreSQL text cannot hold it
        raise InvalidUpload("must not contain NUL characters", path)
    return value.strip()[:MAX_TEXT]


def _frame(value: Any, path: str, budget: list[int]) -> Frame:
    if not isinstance(value, dict):
        raise InvalidUpload(f"must be a frame object, got {_type(value)}", path)
    budget[0] -= 1
    if budget[0] < 0:
        raise InvalidUpload(f"a call-stack tree of more than {MAX_FRAMES} frames", path)
    uuid = _text(value.get("binaryUUID"), f"{path}.binaryUUID")
    offset = _whole(value.get("offsetIntoBinaryTextSegment"), f"{path}.offsetIntoBinaryTextSegment")
    samples = _whole(value.get("sampleCount", 1), f"{path}.sampleCount", 2**31 - 1)
    name = _text(value.get("binaryName"), f"{path}.binaryName")
    return [uuid, offset, samples, name, []]


def read_call_stack_tree(value: Any, path: str) -> tuple[bool, list[CallStack]]:
    """(`callStackPerThread`, the call stacks) of an `MXCallStackTree` JSON, checked without
    recursion (a device's tree may be deep)."""
    if not isinstance(value, dict):
        raise InvalidUpload(f"must be a call-stack tree object, got {_type(value)}", path)
    per_thread = value.get("callStackPerThread", True)
    if not isinstance(per_thread, bool):
        raise InvalidUpload(
            f"must be true or false, got {_type(per_thread)}", f"{path}.callStackPerThread"
        )
    stacks_value = value.get("callStacks", [])
    if not isinstance(stacks_value, list):
        raise InvalidUpload(f"must be a list, got {_type(stacks_value)}", f"{path}.callStacks")
    budget = [MAX_FRAMES]
    stacks = []
    for s, stack in enumerate(stacks_value):
        at = f"{path}.callStacks[{s}]"
        if not isinstance(stack, dict):
            raise InvalidUpload(f"must be an object, got {_type(stack)}", at)
        attributed = stack.get("threadAttributed", False)
        if not isinstance(attributed, bool):
            raise InvalidUpload(
                f"must be true or false, got {_type(attributed)}", f"{at}.threadAttributed"
            )
        roots = stack.get("callStackRootFrames", [])
        if not isinstance(roots, list):
            raise InvalidUpload(f"must be a list, got {_type(roots)}", f"{at}.callStackRootFrames")
        frames: list[Frame] = []
        pending = [
            (raw, f"{at}.callStackRootFrames[{i}]", frames, 0) for i, raw in enumerate(roots)
        ]
        while pending:
            raw, frame_path, into, depth = pending.pop()
            if depth > MAX_DEPTH:
                raise InvalidUpload(f"a call stack deeper than {MAX_DEPTH} frames", frame_path)
            frame = _frame(raw, frame_path, budget)
            into.append(frame)
            callers = raw.get("subFrames", [])
            if not isinstance(callers, list):
                raise InvalidUpload(
                    f"must be a list, got {_type(callers)}", f"{frame_path}.subFrames"
                )
            pending.extend(
                (sub, f"{frame_path}.subFrames[{i}]", frame[4], depth + 1)
                for i, sub in reversed(list(enumerate(callers)))
            )
        _in_order(frames)
        stacks.append(CallStack(attributed, frames))
    return per_thread, stacks


def _in_order(frames: list[Frame]) -> None:
    """The stack pops frames last first: put every level back in the payload's order."""
    levels = [frames]
    while levels:
        level = levels.pop()
        level.reverse()
        levels.extend(frame[4] for frame in level)


def read_diagnostic(value: Any, path: str, kind: str) -> Diagnostic:
    """One diagnostic of a payload's list of `kind`, checked (its app is checked by the door)."""
    if not isinstance(value, dict):
        raise InvalidUpload(f"must be an object, got {_type(value)}", path)
    info = value.get("diagnosticMetaData") or {}
    meta_path = f"{path}.diagnosticMetaData"
    if not isinstance(info, dict):
        raise InvalidUpload(f"must be an object, got {_type(info)}", meta_path)
    meta = {key: _text(info.get(key), f"{meta_path}.{key}") for key in META_FIELDS}
    summary: dict[str, str | int | float] = {}
    for key in SUMMARY_KEYS:
        found = info.get(key, value.get(key))
        if isinstance(found, bool) or found is None:
            continue
        if isinstance(found, str):
            summary[key] = _text(found, f"{meta_path}.{key}")
        elif isinstance(found, int | float):
            summary[key] = found
        else:
            raise InvalidUpload(
                f"must be a string or a number, got {_type(found)}", f"{meta_path}.{key}"
            )
    tree = value.get("callStackTree")
    per_thread, stacks = (
        (True, []) if tree is None else read_call_stack_tree(tree, f"{path}.callStackTree")
    )
    digest = hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return Diagnostic(
        path=path, kind=kind, app_version=meta["appVersion"], build_number=meta["appBuildVersion"],
        device_type=meta["deviceType"], os_version=meta["osVersion"],
        architecture=meta["platformArchitecture"], summary=summary, per_thread=per_thread,
        stacks=stacks, digest=digest, bundle=meta["bundleIdentifier"],
    )  # fmt: skip


def read_diagnostics(payload: dict[str, Any], path: str) -> list[Diagnostic]:
    """Every diagnostic of a payload, one by one, in the order of its lists."""
    found: list[Diagnostic] = []
    for key, kind in KINDS.items():
        items = payload.get(key)
        if items is None:
            continue
        at = f"{path}.{key}" if path else key
        if not isinstance(items, list):
            raise InvalidUpload(f"must be a list, got {_type(items)}", at)
        found.extend(read_diagnostic(item, f"{at}[{i}]", kind) for i, item in enumerate(items))
    return found


def summary_line(kind: str, summary: dict[str, Any]) -> str:
    """What happened, in a few words: a crash's termination reason (or its exception and
    signal), a hang's duration, the writes or CPU time that tripped a limit, a launch's time."""
    parts = []
    if summary.get("terminationReason"):
        parts.append(str(summary["terminationReason"]))
    elif kind == "crash":
        exception, signal = summary.get("exceptionType"), summary.get("signal")
        if exception is not None:
            parts.append(f"exception type {exception}, code {summary.get('exceptionCode', '?')}")
        if signal is not None:
            parts.append(f"signal {signal}")
    for key, label in (("hangDuration", "hang"), ("writesCaused", "writes"),
                       ("totalCPUTime", "CPU time"), ("launchDuration", "launch")):  # fmt: skip
        if summary.get(key) is not None:
            parts.append(f"{label} {summary[key]}")
    return "; ".join(parts)


def frame_count(frames: list[Frame]) -> int:
    count, pending = 0, list(frames)
    while pending:
        frame = pending.pop()
        count += 1
        pending.extend(frame[4])
    return count


def binaries(stacks: list[list[Frame]]) -> set[str]:
    """The binary UUIDs the frames are in (what to look debug files up by)."""
    found: set[str] = set()
    pending = [frame for frames in stacks for frame in frames]
    while pending:
        frame = pending.pop()
        if frame[0]:
            found.add(frame[0])
        pending.extend(frame[4])
    return found
