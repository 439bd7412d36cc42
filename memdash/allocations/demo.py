"""Demo snapshots: every build from every device, with generations and call stacks.

`ChatImageCache` is bounded in every build but 8.0.4, where it grows in every generation.
`snapshot_document` is public so other domains' demos (FOOM) can make snapshots for a session.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from memdash.allocations.logic.demo_events import recorded_events
from memdash.allocations.models import Snapshot
from memdash.allocations.writes.snapshots import store_snapshot_document
from memdash.core.models import Build, Device

if TYPE_CHECKING:
    from memdash.core.demo import DemoContext

IMAGES = [
    {"name": "Chat", "uuid": "6A1F0C2D-1B2C-4D5E-8F90-A1B2C3D4E5F6", "load_address": "0x100000000"},
    {"name": "UIKitCore", "system": True, "load_address": "0x180000000"},
    {"name": "CoreFoundation", "system": True, "load_address": "0x181000000"},
    {"name": "libsystem_malloc.dylib", "system": True, "load_address": "0x182000000"},
    {"name": "ImageIO", "system": True, "load_address": "0x183000000"},
    {"name": "QuartzCore", "system": True, "load_address": "0x184000000"},
    {"name": "dyld", "system": True, "load_address": "0x185000000"},
]
FRAMES = [
    {"symbol": "main", "image": 0},  # 0
    {"symbol": "UIApplicationMain", "image": 1},  # 1
    {"symbol": "-[UIApplication _run]", "image": 1},  # 2
    {"symbol": "CFRunLoopRunSpecific", "image": 2},  # 3
    {"symbol": "-[ChatListViewController viewDidLoad]", "image": 0},  # 4
    {"symbol": "-[ChatViewController viewDidLoad]", "image": 0},  # 5
    {"symbol": "-[MessageCell initWithStyle:reuseIdentifier:]", "image": 0},  # 6
    {"symbol": "-[ChatImageCache storeImage:forKey:]", "image": 0},  # 7
    {"symbol": "-[ChatImageCache decodeImageData:]", "image": 0},  # 8
    {"symbol": "CGImageSourceCreateImageAtIndex", "image": 4},  # 9
    {"symbol": "malloc_zone_malloc", "image": 3},  # 10
    {"symbol": "-[ChatDataSource reloadMessages]", "image": 0},  # 11
    {"symbol": "-[CALayer display]", "image": 5},  # 12
    {"image": 0, "address": "0x100012f40"},  # 13: an unsymbolicated app frame
    {"symbol": "-[ChatSyncService handlePush:]", "image": 0},  # 14
    {"symbol": "start", "image": 6},  # 15: where every thread of the app begins (dyld)
]
# Prefix tree, outermost first: start → main → UIApplicationMain → _run → CFRunLoopRunSpecific …
STACKS = [
    [None, 15], [0, 0], [1, 1], [2, 2], [3, 3],  # 0-4
    [4, 4],  # 5 chat list
    [4, 5],  # 6 chat view
    [6, 6], [7, 10],  # 7-8 cells
    [6, 7], [9, 8], [10, 9], [11, 10],  # 9-12 image cache → ImageIO → malloc
    [6, 11], [13, 10],  # 13-14 data source
    [5, 12],  # 15 CALayer display
    [4, 14], [16, 13], [17, 10],  # 16-18 sync service → unsymbolicated → malloc
]  # fmt: skip
THREADS = ["main", "com.example.chat.sync"]
GENERATIONS = [("Launch", 0), ("Open chat", 4_000), ("Scroll history", 12_000), ("Back", 20_000)]
# category, stack, thread, persistent per snapshot, bytes each, transient ratio
CATEGORIES = [
    ("MessageCell", 7, 0, 120, 768, 3.0),
    ("ChatMessage", 14, 0, 2400, 112, 1.5),
    ("NSMutableArray", 14, 0, 900, 48, 4.0),
    ("NSString", 13, 0, 5200, 64, 6.0),
    ("UIImage", 9, 0, 90, 160, 2.0),
    ("Malloc 48 Bytes", 8, 0, 8000, 48, 10.0),
    ("Malloc 1.00 KiB", 18, 1, 700, 1024, 2.0),
    ("Malloc 16.00 KiB", 18, 1, 40, 16384, 1.0),
    ("CFDictionary (mutable)", 14, 0, 300, 96, 2.0),
    ("ChatSyncOperation", 16, 1, 60, 256, 8.0),
    ("VM: CoreAnimation", 15, 0, 18, 2 * 1024 * 1024, 0.5),
    ("VM: ImageIO", 11, 0, 6, 4 * 1024 * 1024, 1.0),
    ("VM: Stack", None, None, 4, 512 * 1024, 0.0),
    ("ChatPushPayload", 17, 1, 3, 32, 0.0),
]
LEAK_STACK = 12  # ChatImageCache storeImage → decode → ImageIO → malloc
LEAK_BYTES = 256 * 1024


def snapshot_document(
    ctx: DemoContext, build: Build, device: Device, captured_at: datetime, *,
    trigger: str = "periodic", session: str = "", leaking: bool | None = None,
    scale: float = 1.0,
) -> dict[str, Any]:  # fmt: skip
    """A memdash.snapshot document for one run on `device`; `leaking` defaults to the build."""
    rng = ctx.rng
    leaking = build == ctx.leaking_build if leaking is None else leaking
    rows = []
    gens = len(GENERATIONS)
    for category, stack, thread, persistent, size, transient_ratio in CATEGORIES:
        for generation in [None, *range(gens)]:
            share = 0.4 if generation is None else 0.6 / gens
            p = max(0, round(persistent * share * scale * rng.uniform(0.98, 1.02)))
            t = round(p * transient_ratio)
            if p or t:
                rows.append(_row(category, stack, thread, generation, p, t, size))
    for generation in [None, *range(gens)]:
        # The cache keeps ~8 images; in the leaking build every generation adds more than the last.
        p = 8 if generation is None else (6 * (generation + 1) if leaking else 0)
        t = 20 if generation is not None else 0
        rows.append(_row("ChatImageCache", LEAK_STACK, 0, generation, p, t, LEAK_BYTES))
    return {
        **_header(ctx, build, device, captured_at, trigger),
        "session": session,
        "allocations": rows,
    }


def _header(
    ctx: DemoContext, build: Build, device: Device, captured_at: datetime, trigger: str
) -> dict[str, Any]:
    return {
        "format": "memdash.snapshot",
        "version": 1,
        "app": {"id": ctx.app.bundle_id, "platform": ctx.app.platform, "name": ctx.app.name},
        "build": {"version": build.version, "number": build.number, "commit": build.commit},
        "device": {"id": device.device_key, "model": device.model, "os": device.os},
        "captured_at": captured_at.isoformat(),
        "trigger": trigger,
        "images": IMAGES,
        "frames": FRAMES,
        "stacks": STACKS,
        "threads": THREADS,
        "generations": [{"name": n, "at_ms": at} for n, at in GENERATIONS],
    }


def _row(
    category: str, stack: int | None, thread: int | None, generation: int | None,
    persistent: int, transient: int, size: int,
) -> dict[str, Any]:  # fmt: skip
    return {
        "category": category, "stack": stack, "thread": thread, "generation": generation,
        "persistent": persistent, "persistent_bytes": persistent * size,
        "transient": transient, "transient_bytes": transient * size,
    }  # fmt: skip


def load(ctx: DemoContext) -> None:
    triggers = ["periodic", "manual", "memory_warning", "periodic"]
    for build in ctx.builds:
        day = ctx.build_date(build)
        for i, device in enumerate(ctx.devices):
            captured = day + timedelta(hours=2 + i, minutes=7 * i)
            doc = snapshot_document(ctx, build, device, captured, trigger=triggers[i])
            _store(ctx, doc, build, device)
    # A run recorded as allocator events (its snapshot has a timeline): 8.0.2 in the lab
    build, device = ctx.builds[1], ctx.devices[0]
    doc = _header(ctx, build, device, ctx.build_date(build) + timedelta(hours=1), "manual")
    # its own random numbers: the demo's other parts draw theirs as before it was added
    doc["events"] = recorded_events(random.Random(34), GENERATIONS, LEAK_STACK, LEAK_BYTES)
    _store(ctx, doc, build, device)


def _store(ctx: DemoContext, doc: dict[str, Any], build: Build, device: Device) -> None:
    result = store_snapshot_document(doc, ctx.meta_for(build, device))
    # A stored snapshot document always names the snapshot it made.
    ctx.snapshots.append(Snapshot.objects.get(pk=cast(int, result.object_id)))
