"""Demo debug files: Breakpad .sym files for the images of the demo's Matrix report, uploaded
through the same door as any debug file once the report is stored.

The report arrives as image UUIDs and offsets only (as Matrix writes it), so its FOOM snapshot
first reads `8C0E2A4F-… + 0x1a9b4`; these .sym files name every offset it uses, with the names
the snapshot demo's own frames carry, so after the symbolication job the report and the
snapshots are one tree (start → main → UIApplicationMain → …). A stand-in for the dSYM of Chat
and the device's system symbols (what Xcode keeps in iOS DeviceSupport), written here because the
demo has no real binaries. The Chat frame the snapshot demo sends unnamed (0x12f40) gets its name
too: `-[ChatSyncService decodePayload:]`, which inlines a helper, to show an inlined frame.
Matrix's alloc hook is named as Matrix's own source has it (`nsobject_hook.mm`), so the
recording rule (allocations.logic.recording) drops it from the report's stacks.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from memdash.ingest.demo.matrix import UUIDS
from memdash.symbols.writes import store_debug_files

if TYPE_CHECKING:
    from memdash.core.demo import DemoContext

# image key: (image name, {offset: (function, source file, line, inlined (function, line))})
Symbol = tuple[str, str, int, tuple[str, int] | None]
SYMBOLS: dict[str, tuple[str, dict[int, Symbol]]] = {
    "app": ("Chat", {
        0x12F40: ("-[ChatSyncService decodePayload:]", "Chat/Sync/ChatSyncService.m", 211,
                  ("ChatInflatePayload", 187)),
        0x1C4F8: ("main", "Chat/main.m", 14, None),
        0x2A1F30: ("-[ChatViewController viewDidLoad]", "Chat/Chat/ChatViewController.m", 88,
                   None),
        0x3B6D24: ("-[ChatDataSource reloadMessages]", "Chat/Chat/ChatDataSource.m", 142, None),
        0x3B7C10: ("-[ChatListViewController viewDidLoad]", "Chat/List/ChatListViewController.m",
                   61, None),
        0x44A0C8: ("-[ChatSyncService handlePush:]", "Chat/Sync/ChatSyncService.m", 96, None),
        0x5A31C8: ("-[ChatImageCache storeImage:forKey:]", "Chat/Images/ChatImageCache.m", 53,
                   None),
        0x5A33E0: ("-[ChatImageCache decodeImageData:]", "Chat/Images/ChatImageCache.m", 97,
                   None),
        0x71C2A8: ("-[MessageCell initWithStyle:reuseIdentifier:]", "Chat/Chat/MessageCell.m", 33,
                   None),
        0x9D2A40: ("+[NSObject(ObjectEventLogging) event_logging_alloc]",
                   "Pods/Matrix/WCMemoryStat/MemoryLogger/ObjectEvent/nsobject_hook.mm", 45, None),
    }),
    "malloc": ("libsystem_malloc.dylib", {0x1B2F0: ("malloc_zone_malloc", "", 0, None)}),
    "objc": ("libobjc.A.dylib", {0x7E14: ("_objc_rootAllocWithZone", "", 0, None)}),
    "cf": ("CoreFoundation", {0x2F1D0: ("CFRunLoopRunSpecific", "", 0, None)}),
    "uikit": ("UIKitCore", {
        0x4B1C74: ("UIApplicationMain", "", 0, None),
        0x4B2E10: ("-[UIApplication _run]", "", 0, None),
    }),
    "imageio": ("ImageIO", {0x2E4A0: ("CGImageSourceCreateImageAtIndex", "", 0, None)}),
    "quartz": ("QuartzCore", {0x9A1C4: ("-[CALayer display]", "", 0, None)}),
    "dyld": ("dyld", {0x1A9B4: ("start", "", 0, None)}),
}  # fmt: skip
SPAN = 0x20  # each function starts this far before its offset and is twice as long


def breakpad_sym(key: str, uuid: str) -> str:
    """The .sym of one image: a FUNC around each offset (with a line record when the source is
    known, and an INLINE record for an inlined helper)."""
    name, functions = SYMBOLS[key]
    files = sorted({source for _, source, _, _ in functions.values() if source})
    inlined = sorted({i[0] for *_, i in functions.values() if i})
    lines = [f"MODULE mac arm64 {uuid.replace('-', '').upper()}0 {name}"]
    lines += [f"FILE {n} {path}" for n, path in enumerate(files)]
    lines += [f"INLINE_ORIGIN {n} {function}" for n, function in enumerate(inlined)]
    for offset, (function, source, line, inline) in sorted(functions.items()):
        start = offset - SPAN
        lines.append(f"FUNC {start:x} {2 * SPAN:x} 0 {function}")
        if source:
            if inline:
                origin = inlined.index(inline[0])
                lines.append(
                    f"INLINE 0 {line} {files.index(source)} {origin} {start:x} {2 * SPAN:x}"
                )
                line = inline[1]  # the line records of an inlined range are the helper's
            lines.append(f"{start:x} {2 * SPAN:x} {line} {files.index(source)}")
    return "\n".join(lines) + "\n"


def load(ctx: DemoContext) -> None:
    """Upload one .sym per image of the Matrix report, as `upload_debug_files` would."""
    with tempfile.TemporaryDirectory() as folder:
        for key, uuid in UUIDS.items():
            path = Path(folder) / f"{SYMBOLS[key][0]}.sym"
            path.write_text(breakpad_sym(key, uuid))
            store_debug_files(ctx.app, path, image_name=path.name, file_name=path.name)
