"""Demo MetricKit diagnostics: what the iOS builds' devices sent as `MXDiagnosticPayload`s, one
payload per build, with several diagnostics each (8.0.4 crashes in its image cache and hangs
reloading messages more than the others). Hand-written for the demo: the call stacks are the
demo's Chat code paths (the offsets its debug files name, demo_symbols.py), per thread, the frame
each thread was in first and its callers below, as MetricKit writes them."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from memdash.ingest.demo.matrix import DEVICE, UUIDS, upload

if TYPE_CHECKING:
    from memdash.core.demo import DemoContext

Place = tuple[str, int]  # (image key, offset)

NAMES = {
    "app": "Chat", "malloc": "libsystem_malloc.dylib", "cf": "CoreFoundation",
    "uikit": "UIKitCore", "imageio": "ImageIO", "dyld": "dyld",
}  # fmt: skip
MAIN_THREAD = [("cf", 0x2F1D0), ("uikit", 0x4B2E10), ("uikit", 0x4B1C74), ("app", 0x1C4F8),
               ("dyld", 0x1A9B4)]  # fmt: skip
CHAT_VIEW = ("app", 0x2A1F30)
DECODE = [("malloc", 0x1B2F0), ("imageio", 0x2E4A0), ("app", 0x5A33E0), ("app", 0x5A31C8),
          CHAT_VIEW]  # fmt: skip
RELOAD = [("app", 0x3B6D24), CHAT_VIEW]
SYNC = [("malloc", 0x1B2F0), ("app", 0x12F40), ("app", 0x44A0C8)]
# per build version: (kind, places innermost first, metadata) of each diagnostic
CRASH = {"exceptionType": 1, "exceptionCode": 0, "signal": 11,
         "terminationReason": "Namespace SIGNAL, Code 0xb",
         "virtualMemoryRegionInfo": "0 is not in any region."}  # fmt: skip
STORY: dict[str, list[tuple[str, list[Place], dict[str, Any]]]] = {
    "8.0.3": [
        ("crashDiagnostics", SYNC, CRASH), ("hangDiagnostics", RELOAD, {"hangDuration": "2 sec"}),
    ],
    "8.0.4": [
        ("crashDiagnostics", DECODE, CRASH), ("crashDiagnostics", DECODE, {**CRASH, "signal": 6,
         "terminationReason": "Namespace SIGNAL, Code 0x6"}),
        ("crashDiagnostics", SYNC, CRASH),
        ("hangDiagnostics", RELOAD, {"hangDuration": "4 sec"}),
        ("hangDiagnostics", RELOAD, {"hangDuration": "7 sec"}),
        ("diskWriteExceptionDiagnostics", DECODE, {"writesCaused": "1,073.74 MB"}),
    ],
    "8.0.5": [("hangDiagnostics", RELOAD, {"hangDuration": "1 sec"})],
}  # fmt: skip


def call_stack_tree(places: list[Place]) -> dict[str, Any]:
    """One attributed thread: the innermost frame at the root, each caller a sub-frame."""
    frame: dict[str, Any] | None = None
    for key, offset in reversed([*places, *MAIN_THREAD]):
        frame = {
            "binaryUUID": UUIDS[key], "offsetIntoBinaryTextSegment": offset, "sampleCount": 1,
            "binaryName": NAMES[key], **({"subFrames": [frame]} if frame else {}),
        }  # fmt: skip
    return {
        "callStackPerThread": True,
        "callStacks": [{"threadAttributed": True, "callStackRootFrames": [frame]}],
    }


def load_diagnostics(ctx: DemoContext) -> None:
    for build in ctx.builds:
        story = STORY.get(build.version)
        if not story:
            continue
        at = ctx.build_date(build) + timedelta(days=3, hours=9)
        payload: dict[str, Any] = {
            "timeStampBegin": f"{at:%Y-%m-%d %H:%M:%S} +0000",
            "timeStampEnd": f"{at + timedelta(hours=1):%Y-%m-%d %H:%M:%S} +0000",
        }
        for kind, places, facts in story:
            payload.setdefault(kind, []).append({
                "version": "1.0.0",
                "callStackTree": call_stack_tree(places),
                "diagnosticMetaData": {
                    "appVersion": build.version, "appBuildVersion": build.number,
                    "osVersion": f"iPhone OS {DEVICE[2]}", "deviceType": DEVICE[1],
                    "platformArchitecture": "arm64e", "bundleIdentifier": ctx.app.bundle_id,
                    **facts,
                },
            })  # fmt: skip
        upload(ctx, payload, f"metrickit-diagnostics-{build.version}.json",
               {"device_id": DEVICE[0]})  # fmt: skip
