"""Demo of the platforms' own leak tools, sent through the upload doors as the tools print them:

- iOS: CI runs the app's UI tests under `leaks --atExit` with MallocStackLogging on the leaking
  build 8.0.4 and on 8.0.5. Its ROOT CYCLE is the ChatViewController ↔ ChatDataSource loop that
  FBRetainCycleDetector reports from the devices: it joins that cluster (one triage, reported by
  both tools), with the `__weak _delegate` loop beside it never offered as the link to weaken.
  8.0.4's report also has the image cache's entries (ROOT LEAKs), gone in 8.0.5. The frames come
  as the Chat image's offsets, which the demo's debug files name.
- Android: LeakCanary's analyses from test devices of the Android variant: ChatActivity held by
  a static listener list (8.0.3, 8.0.4; fixed in 8.0.5), the chat fragment's view kept after
  onDestroyView (from 8.0.4, open), and Android's own IRequestFinishCallback leak (a library
  leak, every build).
- An engineer pastes `dumpsys activity exit-info com.example.chat` from a test phone on 8.0.5.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from memdash.core.demo import START
from memdash.core.models import App
from memdash.core.writes import apps as core_services
from memdash.ingest.demo.matrix import APP_UUID
from memdash.ingest.models import Upload
from memdash.ingest.writes import uploads as services
from memdash.leaks.models import LeakTraceCluster
from memdash.triage.models import Status

if TYPE_CHECKING:
    from memdash.core.demo import DemoContext


def send(app: App, ctx: DemoContext, text: str, filename: str, fields: dict[str, str]) -> Upload:
    """Through the ingest service, processed right here; the demo stops if it is refused."""
    processed, _created = services.receive_upload(
        app, [text.encode()], fields=fields, user=ctx.user, source=Upload.PAGE,
        filename=filename, progress=lambda phase, fraction: None,
    )  # fmt: skip
    if processed.status != Upload.DONE:
        raise RuntimeError(f"demo upload {filename}: {processed.error_path}: {processed.error}")
    return processed


# --- iOS: Xcode's leaks -------------------------------------------------------------------------

# Chat's offsets that the demo's debug files name (demo_symbols.py).
MAIN, LIST_DID_LOAD = 0x1C4F8, 0x3B7C10
STORE_IMAGE, DECODE_IMAGE = 0x5A31C8, 0x5A33E0
LOAD = 0x100000000
CONTROLLER = "<ChatViewController 0x600002d1c000>"


def _frame(depth: int, image: str, address: int, symbol: str) -> str:
    return f"{depth:<4}{image:<38}{address:#x} {symbol}"


def _chat(depth: int, offset: int) -> str:
    return _frame(depth, "Chat", LOAD + offset, f"{LOAD:#x} + {offset}")


def _stack(*app_offsets: int) -> list[str]:
    """start → main → UIApplicationMain → the app's frames → the allocation, outermost first."""
    frames = [
        _frame(0, "dyld", 0x1808B2B4C, "start + 6000"),
        _chat(0, MAIN),
        _frame(0, "UIKitCore", 0x185A9BC74, "UIApplicationMain + 340"),
        *[_chat(0, offset) for offset in app_offsets],
        _frame(0, "libobjc.A.dylib", 0x180057E14, "_objc_rootAllocWithZone + 44"),
        _frame(0, "libsystem_malloc.dylib", 0x18029E5B8, "_malloc_zone_calloc + 88"),
    ]
    top = len(frames) - 1
    return [f"{top - i:<4}{line[4:]}" for i, line in enumerate(frames)]


def leaks_report(version: str, number: str, pid: int, at: datetime, cache_entries: int) -> str:
    """`leaks --atExit` of the UI test run, as leaks prints it with MallocStackLogging on."""
    entries = [
        f"    1 (176 bytes) ROOT LEAK: <ChatImageCacheEntry {0x600002E40000 + 0x100 * i:#x}> [176]"
        for i in range(cache_entries)
    ]
    blocks = 4 + cache_entries
    leaked = 352 + 176 * cache_entries
    lines = [
        f"Process:         Chat [{pid}]",
        "Path:            /Users/ci/Library/Developer/CoreSimulator/Devices/0C6B7E3A/data/"
        "Containers/Bundle/Application/9A8B7C6D/Chat.app/Chat",
        f"Load Address:    {LOAD:#x}",
        "Identifier:      com.example.chat",
        f"Version:         {version} ({number})",
        "Code Type:       ARM64",
        "Platform:        iOS Simulator",
        "Parent Process:  launchd_sim [701]",
        "",
        f"Date/Time:       {at:%Y-%m-%d %H:%M:%S}.204 +0000",
        "OS Version:      macOS 15.5 (24F74)",
        "Report Version:  7",
        "Analysis Tool:   /Applications/Xcode.app/Contents/Developer/usr/bin/leaks",
        "Analysis Tool Version:  Xcode 16.4 (16F6)",
        "",
        f"Physical footprint:         {'312.4M' if cache_entries else '96.1M'}",
        f"Physical footprint (peak):  {'498.0M' if cache_entries else '131.7M'}",
        "----",
        "",
        "leaks Report Version: 4.0, multi-line stacks",
        f"Process {pid}: 58213 nodes malloced for 9412 KB",
        f"Process {pid}: {blocks} leaks for {leaked} total leaked bytes.",
        "",
        "STACK OF 1 INSTANCE OF 'ROOT CYCLE: <ChatViewController>':",
        *_stack(LIST_DID_LOAD),
        "====",
        f"    4 (352 bytes) ROOT CYCLE: {CONTROLLER} [192]",
        "       2 (128 bytes) __strong _dataSource --> ROOT CYCLE: "
        "<ChatDataSource 0x600002d08a80> [64]",
        f"          __weak _delegate --> CYCLE BACK TO {CONTROLLER} [192]",
        "          1 (64 bytes) __strong _onUpdate --> ROOT CYCLE: "
        "<__NSMallocBlock__ 0x600002d48f40> [64]",
        f"             __strong self --> CYCLE BACK TO {CONTROLLER} [192]",
        "       1 (32 bytes) __strong _titleView + 16 --> <UILabel 0x600002d30e40> [32]",
    ]
    if cache_entries:
        lines += [
            "",
            f"STACK OF {cache_entries} INSTANCES OF 'ROOT LEAK: <ChatImageCacheEntry>':",
            *_stack(LIST_DID_LOAD, STORE_IMAGE, DECODE_IMAGE),
            "====",
            *entries,
        ]
    lines += [
        "",
        "Binary Images:",
        f"       {LOAD:#x} -        0x1009fffff +com.example.chat ({version} - {number}) "
        f"<{APP_UUID}> /Users/ci/Library/Developer/CoreSimulator/Devices/0C6B7E3A/Chat.app/Chat",
    ]
    return "\n".join(lines) + "\n"


def load_xcode(ctx: DemoContext) -> None:
    for build, cache_entries in ((ctx.leaking_build, 12), (ctx.fixed_build, 0)):
        at = ctx.build_date(build) + timedelta(days=1, hours=3)
        text = leaks_report(build.version, build.number, 4100 + cache_entries, at, cache_entries)
        send(
            ctx.app,
            ctx,
            text,
            f"leaks-atExit-{build.version}.txt",
            {"device_id": "ci-sim-16", "device_model": "iPhone 16 simulator", "os": "18.5"},
        )


# --- Android: LeakCanary ------------------------------------------------------------------------

RULE = "=" * 36


@dataclass(frozen=True)
class Trace:
    signature: str
    retained: int
    pattern: str  # a library leak's pattern, "" for the app's
    lines: tuple[str, ...]  # the trace as LeakCanary prints it, from ┬─── down


ACTIVITY = Trace("9b1d4c7e2f0a8d6b3c5e7f9a1b2c3d4e5f6a7b8c", 36812, "", (
    "┬───", "│ GC Root: System class", "│",
    "├─ com.example.chat.data.ChatRepository class",
    "│    Leaking: NO (a class is never leaking)",
    "│    ↓ static ChatRepository.listeners", "│                            ~~~~~~~~~",
    "├─ java.util.ArrayList instance", "│    Leaking: UNKNOWN",
    "│    Retaining 36.8 kB in 612 objects", "│    ↓ ArrayList[0]", "│               ~~~",
    "╰→ com.example.chat.ui.ChatActivity instance",
    "     Leaking: YES (ObjectWatcher was watching this because com.example.chat.ui.ChatActivity "
    "received Activity#onDestroy() callback and Activity#mDestroyed is true)",
    "     Retaining 36.8 kB in 611 objects",
    "     mApplication instance of com.example.chat.ChatApplication",
))  # fmt: skip
FRAGMENT_VIEW = Trace("5e0c9a7b3d1f2e4c6a8b0d9f7e5c3a1b2d4f6e8a", 18240, "", (
    "┬───", "│ GC Root: Input or output parameters in native code", "│",
    "├─ com.example.chat.ui.ChatActivity instance",
    "│    Leaking: NO (Activity#mDestroyed is false)",
    "│    ↓ ChatActivity.conversationFragment",
    "├─ com.example.chat.ui.ConversationFragment instance",
    "│    Leaking: NO (Fragment.mLifecycleRegistry.state is CREATED)",
    "│    ↓ ConversationFragment.messageList", "│                           ~~~~~~~~~~~",
    "╰→ androidx.recyclerview.widget.RecyclerView instance",
    "     Leaking: YES (ObjectWatcher was watching this because "
    "com.example.chat.ui.ConversationFragment received Fragment#onDestroyView() callback "
    "(references to its views should be cleared to prevent leaks))",
    "     Retaining 18.2 kB in 305 objects",
    "     View not part of a window view hierarchy",
))  # fmt: skip
LIBRARY = Trace("7573873eb76c9b7e8963efe04194842e7e15c8b9", 84365,
                "instance field android.app.Activity$1#this$0", (
    "┬───", "│ GC Root: Global variable in native code", "│",
    "├─ android.app.Activity$1 instance", "│    Leaking: UNKNOWN",
    "│    Retaining 84.9 kB in 1860 objects",
    "│    Library leak match: instance field android.app.Activity$1#this$0",
    "│    ↓ Activity$1.this$0", "│                 ~~~~~~",
    "╰→ com.example.chat.ui.SettingsActivity instance",
    "     Leaking: YES (ObjectWatcher was watching this because "
    "com.example.chat.ui.SettingsActivity received Activity#onDestroy() callback and "
    "Activity#mDestroyed is true)",
    "     Retaining 84.4 kB in 1859 objects",
))  # fmt: skip
LEAKS_OF_BUILD = {
    "8.0.3": (ACTIVITY,),
    "8.0.4": (ACTIVITY, FRAGMENT_VIEW),
    "8.0.5": (FRAGMENT_VIEW,),
}


DESCRIPTION = (
    "Description: Android Q added a new IRequestFinishCallback$Stub class; another process keeps "
    "it alive after Activity.onDestroy()."
)


def _leak(trace: Trace) -> list[str]:
    head = [f"Leak pattern: {trace.pattern}", DESCRIPTION] if trace.pattern else []
    return [*head, f"{trace.retained} bytes retained by leaking objects",
            f"Signature: {trace.signature}", *trace.lines, ""]  # fmt: skip


def analysis(app_leaks: tuple[Trace, ...], at: datetime, sdk: int) -> str:
    """`HeapAnalysisSuccess.toString()`, as LeakCanary 2.14 prints it."""
    lines = [RULE, "HEAP ANALYSIS RESULT", RULE, f"{len(app_leaks)} APPLICATION LEAKS", "",
             'References underlined with "~~~" are likely causes.',
             "Learn more at https://squ.re/leaks.", ""]  # fmt: skip
    for trace in app_leaks:
        lines += _leak(trace)
    lines += [RULE, "1 LIBRARY LEAKS", "", *_leak(LIBRARY), RULE, "0 UNREACHABLE OBJECTS", "",
              RULE, "METADATA", "", f"Build.VERSION.SDK_INT: {sdk}", "Build.MANUFACTURER: Google",
              "LeakCanary version: 2.14", "App process name: com.example.chat",
              f"Heap dump timestamp: {int(at.timestamp() * 1000)}", RULE]  # fmt: skip
    return "\n".join(lines) + "\n"


def load_leakcanary(ctx: DemoContext) -> App:
    android = core_services.get_or_create_app("com.example.chat", "android", "Chat for Android")
    if not android.membership_set.filter(user=ctx.user).exists():
        core_services.add_member(android, ctx.user)  # the assignee must be a member
    start = START + timedelta(days=14)  # the Android builds follow the iOS 8.0.3
    for index, version in enumerate(LEAKS_OF_BUILD):
        build = core_services.get_or_create_build(android, version, f"10{3 + index}")
        if version == "8.0.5":  # QA verified the listener fix: 8.0.5 no longer leaks the activity
            activity = LeakTraceCluster.objects.get(app=android, signature=ACTIVITY.signature)
            note = "ChatRepository.listeners held activities: now a WeakHashMap."
            activity.change_triage(ctx.user, status=Status.FIXED, fixed_in_build=build, notes=note)
        for device, sdk in (("A-5001", 35), ("A-5002", 34)):
            at = start + timedelta(days=7 * index, hours=5 + sdk - 34)
            text = analysis(LEAKS_OF_BUILD[version], at, sdk)
            fields = {"build_version": version, "build_number": build.number, "device_id": device}
            send(android, ctx, text, f"leakcanary-{version}-{device}.txt", fields)
    fragment = LeakTraceCluster.objects.get(app=android, signature=FRAGMENT_VIEW.signature)
    fragment.change_triage(ctx.user, status=Status.OPEN, assignee=ctx.user)
    return android


# --- Android: a pasted exit-info ----------------------------------------------------------------

# (local time on the phone, pid, reason, its name, pss, rss, description): newest first.
EXITS = [
    ("2026-10-30 18:01:57.118", 31877, 3, "LOW MEMORY", "1.1GB", "1.4GB", "null"),
    ("2026-10-30 14:20:09.552", 30412, 13, "OTHER KILLS BY SYSTEM", "812MB", "990MB",
     "MemoryLimiter:AnonSwap"),
    ("2026-10-30 09:41:30.004", 29006, 10, "USER REQUESTED", "0.00", "0.00",
     "stop com.example.chat due to from pid 29117"),
]  # fmt: skip


def exit_info_dump() -> str:
    """`adb shell dumpsys activity exit-info com.example.chat`, as Android 14 prints it."""
    lines = [
        "ACTIVITY MANAGER PROCESS EXIT INFO (dumpsys activity exit-info)",
        "Last Timestamp of Persistence Into Persistent Storage: 2026-10-30 18:02:11.431",
        "  package: com.example.chat",
        "    Historical Process Exit for uid=10245",
    ]
    for index, (at, pid, reason, name, pss, rss, description) in enumerate(EXITS):
        lines += [
            f"        ApplicationExitInfo #{index}:",
            f"          timestamp={at} pid={pid} realUid=10245 packageUid=10245 "
            "definingUid=10245 user=0",
            f"          process=com.example.chat reason={reason} ({name}) subreason=0 (UNKNOWN) "
            "status=0",
            f"          importance=100 pss={pss} rss={rss} description={description} "
            "state=empty trace=null",
        ]
    return "\n".join(lines) + "\n"


def load_exit_info(ctx: DemoContext, android: App) -> None:
    fields = {
        "build_version": "8.0.5", "build_number": "105", "device_id": "QA-Pixel-9",
        "device_model": "Pixel 9", "os": "17", "utc_offset": "+01:00",
    }  # fmt: skip
    send(android, ctx, exit_info_dump(), "pasted.txt", fields)


def load(ctx: DemoContext) -> None:
    load_xcode(ctx)
    android = load_leakcanary(ctx)
    load_exit_info(ctx, android)
