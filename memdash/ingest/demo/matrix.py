"""Demo uploads: a Matrix (WeChat) memory-stat report for a FOOM of the leaking build.

The app's monitor uploads, through the same ingest service as every door, first the run that
ended in the FOOM and the next launch (a `memdash.sessions` document, so the run is classified
`foom`), then the Matrix report written at that next launch. The report carries the run's id in
its head (custom key `session`), so the FOOM page links the run to what filled its memory:
`ChatImageCache`, which never evicts in 8.0.4.

The device is one of its own (D-9001), so the FOOM demo's runs never become its successors.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import orjson

from memdash.core.writes.uploads import no_progress
from memdash.ingest.models import Upload
from memdash.ingest.writes import uploads as services

if TYPE_CHECKING:
    from memdash.core.demo import DemoContext

Frame = tuple[str, int]  # (image, offset)

DEVICE = ("D-9001", "iPhone12,1", "16.7.2")
FOOM_SESSION = "9b2f6d3e-4c1a-4e7b-8d5f-2a6c9e1b7f40"
NEXT_SESSION = "1d7e4a2c-8f3b-4b6e-9c0a-5e2f7b3d8a61"
APP_UUID = "6A1F0C2D-1B2C-4D5E-8F90-A1B2C3D4E5F6"  # the Chat binary of the snapshot demo
UUIDS = {
    "malloc": "0A3C7B52-1E4D-3B6A-8F29-5C1D7E9A4B60",  # libsystem_malloc.dylib
    "objc": "9F2E4D18-6C3B-3A57-B1E0-7D4C2A8F5E93",  # libobjc.A.dylib
    "cf": "4B8E1A6C-2D9F-3E05-A7C3-1F6B8D2E4A57",  # CoreFoundation
    "uikit": "C3D5E7F9-1A2B-3C4D-8E6F-0A1B2C3D4E5F",  # UIKitCore
    "imageio": "7E1D3C5B-9A8F-3624-B0C1-D2E3F4A5B6C7",  # ImageIO
    "quartz": "2F4A6C8E-0B1D-3E5F-9A7C-8B6D4F2E0A13",  # QuartzCore
    "dyld": "8C0E2A4F-6B1D-3F3E-A5C7-9D1B3F5A7C9E",  # dyld (start)
    "app": APP_UUID,
}
# Frames innermost first, as Matrix writes them: (image, offset). The paths are the snapshot
# demo's (demo_symbols.py has the names), so once symbolicated they are one tree: an object's
# stack goes through Matrix's alloc hook (`event_logging_alloc` in the app, then the runtime's
# `_objc_rootAllocWithZone`), which memdash drops (allocations.logic.recording).
RUN_LOOP = [
    ("cf", 0x2F1D0),  # CFRunLoopRunSpecific
    ("uikit", 0x4B2E10),  # -[UIApplication _run]
    ("uikit", 0x4B1C74),  # UIApplicationMain
    ("app", 0x1C4F8),  # main
    ("dyld", 0x1A9B4),  # start
]
CHAT_VIEW = [("app", 0x2A1F30)]  # -[ChatViewController viewDidLoad]
CHAT_LIST = [("app", 0x3B7C10)]  # -[ChatListViewController viewDidLoad]
OBJC_ALLOC = [("malloc", 0x1B2F0), ("objc", 0x7E14), ("app", 0x9D2A40)]  # Matrix's alloc hook
STORE_IMAGE = ("app", 0x5A31C8)  # -[ChatImageCache storeImage:forKey:]
DECODE_IMAGE = ("app", 0x5A33E0)  # -[ChatImageCache decodeImageData:]
IMAGE_SOURCE = [("imageio", 0x2E4A0), DECODE_IMAGE, STORE_IMAGE, *CHAT_VIEW]
DECODE = [("malloc", 0x1B2F0), *IMAGE_SOURCE]
RELOAD = [("app", 0x3B6D24), *CHAT_VIEW]  # -[ChatDataSource reloadMessages]
MESSAGE_CELL = [("app", 0x71C2A8), *CHAT_VIEW]  # -[MessageCell initWithStyle:reuseIdentifier:]
# -[ChatSyncService handlePush:] → -[ChatSyncService decodePayload:] (it inlines a helper)
SYNC = [("app", 0x12F40), ("app", 0x44A0C8)]


def stack(frames: Sequence[Frame], size: int, count: int, caller: Frame) -> dict[str, Any]:
    frames = [*frames, *RUN_LOOP]
    return {
        "caller": f"{UUIDS[caller[0]]}@{caller[1]}",
        "size": size,
        "count": count,
        "frames": [{"uuid": UUIDS[image], "offset": offset} for image, offset in frames],
    }


def item(
    name: str, count: int, size_each: int, *stacks: tuple[Sequence[Frame], int, Frame]
) -> dict[str, Any]:
    """A category: `stacks` are (frames, count, caller); what they leave is reported unstacked."""
    return {
        "tag": "iOS_MemStat",
        "info": "",
        "scene": "ChatViewController",
        "name": name,
        "size": count * size_each,
        "count": count,
        "stacks": [stack(f, n * size_each, n, caller) for f, n, caller in stacks],
    }


def matrix_report(launch_ms: int, report_ms: int) -> dict[str, Any]:
    """What Matrix writes at the next launch: the allocations alive when the FOOM run died."""
    items = [
        # 4800 decoded images of 256 KiB that the cache never evicts (1.17 GiB)
        item("ChatImageCache", 4800, 256 * 1024, (DECODE, 4752, DECODE_IMAGE)),
        item(
            "VM: CoreAnimation",
            40,
            2 * 1024 * 1024,
            ([("quartz", 0x9A1C4), *CHAT_LIST], 40, CHAT_LIST[0]),
        ),
        item("VM: ImageIO", 12, 4 * 1024 * 1024, (IMAGE_SOURCE, 12, DECODE_IMAGE)),
        item("Malloc 1.00 KiB", 2100, 1024, ([("malloc", 0x1B2F0), *SYNC], 2100, SYNC[0])),
        item(
            "Malloc 48 Bytes",
            24000,
            48,
            ([("malloc", 0x1B2F0), *MESSAGE_CELL], 18000, MESSAGE_CELL[0]),
        ),
        item("NSString", 15600, 64, ([*OBJC_ALLOC, *RELOAD], 12000, RELOAD[0])),
        item("ChatMessage", 7200, 112, ([*OBJC_ALLOC, *RELOAD], 6000, RELOAD[0])),
        item("MessageCell", 360, 768, ([*OBJC_ALLOC, *MESSAGE_CELL], 360, MESSAGE_CELL[0])),
        item("NSMutableArray", 2700, 48),
    ]
    for entry in items:
        if not entry["stacks"]:
            del entry["stacks"]
    items.sort(key=lambda entry: -entry["size"])
    return {
        "head": {
            "protocol_ver": 1,
            "phone": DEVICE[1],
            "os_ver": DEVICE[2],
            "launch_time": launch_ms,
            "report_time": report_ms,
            "app_uuid": APP_UUID,
            "session": FOOM_SESSION,
        },
        "items": items,
    }


def sessions_document(
    ctx: DemoContext, started: datetime, died: datetime, relaunched: datetime
) -> dict[str, Any]:
    build = ctx.leaking_build
    common = {
        "device": {"id": DEVICE[0], "model": DEVICE[1]},
        "build": {"version": build.version, "number": build.number, "commit": build.commit},
        "os": DEVICE[2],
        "boot_time": (started - timedelta(days=2)).isoformat(),
    }
    foom_run = {
        **common,
        "id": FOOM_SESSION,
        "started_at": started.isoformat(),
        "last_seen_at": died.isoformat(),
        "end": {
            "state": "foreground",
            "active_for_ms": int((died - started).total_seconds() * 1000),
            "memory_warnings": 4,
            "footprint_bytes": 1_990 * 2**20,
            "peak_footprint_bytes": 2_000 * 2**20,
        },
    }
    next_run = {**common, "id": NEXT_SESSION, "started_at": relaunched.isoformat()}
    return {
        "format": "memdash.sessions",
        "version": 1,
        "app": {"id": ctx.app.bundle_id, "platform": ctx.app.platform},
        "sessions": [foom_run, next_run],
    }


def upload(ctx: DemoContext, doc: dict[str, Any], filename: str, fields: dict[str, str]) -> Upload:
    """Through the ingest service, as the upload command does, and processed right here."""
    processed, _created = services.receive_upload(
        ctx.app,
        [orjson.dumps(doc)],
        fields=fields,
        user=ctx.user,
        source=Upload.COMMAND,
        filename=filename,
        progress=no_progress,  # processed right here, whatever the task backend
    )
    if processed.status != Upload.DONE:
        raise RuntimeError(
            f"demo upload {filename} was not stored: {processed.error_path}: {processed.error}"
        )
    return processed


def load(ctx: DemoContext) -> None:
    build = ctx.leaking_build
    started = ctx.build_date(build) + timedelta(days=2, hours=14, minutes=5)
    died = started + timedelta(minutes=17, seconds=41)
    relaunched = died + timedelta(minutes=2, seconds=12)
    upload(ctx, sessions_document(ctx, started, died, relaunched), "sessions.json", {})
    report = matrix_report(
        launch_ms=int(started.timestamp() * 1000), report_ms=int(relaunched.timestamp() * 1000)
    )
    upload(
        ctx,
        report,
        "matrix-foom-report.json",
        {"build_version": build.version, "build_number": build.number, "device_id": DEVICE[0]},
    )
