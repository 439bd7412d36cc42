"""Demo leaks: QA runs each build's AddressSanitizer variant of the app on two devices, and each
run's LeakSanitizer report, printed when the app exits, is uploaded as it was printed.

- A small leak in the message store is in every build (left open, assigned).
- A JSON parser leak appears in the first build, is marked fixed in the second, and comes back
  in the leaking build: memdash reopens its group as a regression.
- In the leaking build the image cache stops releasing its entries: a new group, direct leaks
  of cache entries and the bitmaps they hold, gone again in the fixed build.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from memdash.core.demo import DemoContext
from memdash.core.models import Build
from memdash.leaks.logic.parsers import sanitizer
from memdash.leaks.models import LeakGroup
from memdash.leaks.reads import current_groups
from memdash.leaks.writes.reports import store_leak_log
from memdash.triage.models import Status

RUNTIME = "/usr/lib/llvm-17/lib/clang/17/lib/linux/libclang_rt.asan-x86_64.so"


@dataclass(frozen=True)
class DemoLeak:
    kind: str  # "Direct" or "Indirect"
    size: int
    count: int
    allocator: str
    frames: tuple[tuple[str, str], ...]  # (function, file:line), innermost first


STORE_LEAK = DemoLeak(
    "Direct",
    64,
    1,
    "malloc",
    (
        ("sqlite3MemMalloc", "/src/third_party/sqlite/sqlite3.c:25873:7"),
        ("sqlite3Malloc", "/src/third_party/sqlite/sqlite3.c:29512:7"),
        ("ChatStore::Open(std::string const&)", "/src/core/store/chat_store.cc:88:3"),
        ("ChatSession::Start(Account const&)", "/src/core/session/chat_session.cc:52:10"),
    ),
)
JSON_LEAK = DemoLeak(
    "Direct",
    48,
    3,
    "operator new(unsigned long)",
    (
        ("json::Parser::ParseString()", "/src/core/json/parser.cc:212:18"),
        ("json::Parser::ParseValue()", "/src/core/json/parser.cc:140:14"),
        ("MessageDecoder::Decode(std::string_view)", "/src/core/messages/decoder.cc:57:9"),
    ),
)
CACHE_ENTRY_LEAK = DemoLeak(
    "Direct",
    96,
    24,
    "operator new(unsigned long)",
    (
        ("ChatImageCache::Insert(ImageKey const&, Bitmap*)", "/src/core/images/cache.cc:131:22"),
        ("ChatImageLoader::OnDecoded(ImageKey const&, Bitmap*)", "/src/core/images/loader.cc:77:5"),
        ("ImageDecodeQueue::RunNext()", "/src/core/images/decode_queue.cc:48:7"),
    ),
)
CACHE_BITMAP_LEAK = DemoLeak(
    "Indirect",
    262144,
    24,
    "malloc",
    (
        ("Bitmap::Allocate(int, int)", "/src/core/images/bitmap.cc:30:17"),
        ("ImageDecoder::Decode(Bytes const&)", "/src/core/images/decoder.cc:112:10"),
        ("ChatImageLoader::OnDecoded(ImageKey const&, Bitmap*)", "/src/core/images/loader.cc:74:3"),
    ),
)


def leaks_in(build_index: int, leaking: bool) -> list[DemoLeak]:
    leaks = [STORE_LEAK]
    if build_index == 0 or leaking:
        leaks.append(JSON_LEAK)
    if leaking:
        leaks += [CACHE_ENTRY_LEAK, CACHE_BITMAP_LEAK]
    return leaks


def lsan_log(pid: int, leaks: list[DemoLeak], ctx: DemoContext) -> bytes:
    """The end of an ASan build's console log: its LeakSanitizer report, printed the way the
    sanitizer prints it when the app exits."""
    lines = [
        f"Chat[{pid}]: ChatSession: signed out, closing the store",
        "",
        "=================================================================",
        f"=={pid}==ERROR: LeakSanitizer: detected memory leaks",
        "",
    ]
    for leak in sorted(leaks, key=lambda leak: leak.kind):  # direct leaks first, as LSan does
        lines.append(
            f"{leak.kind} leak of {leak.size * leak.count} byte(s) in {leak.count} object(s) "
            "allocated from:"
        )
        base = 0x7F0000000000 + ctx.rng.randrange(0x10000000) * 0x1000
        lines.append(f"    #0 0x{base + 0x4C2B3D:x} in {leak.allocator} ({RUNTIME}+0xe2b3d)")
        for number, (function, source) in enumerate(leak.frames, start=1):
            lines.append(f"    #{number} 0x{base + 0x1000 * number:x} in {function} {source}")
        lines.append("")
    total = sum(leak.size * leak.count for leak in leaks)
    count = sum(leak.count for leak in leaks)
    lines.append(f"SUMMARY: AddressSanitizer: {total} byte(s) leaked in {count} allocation(s).")
    return "\n".join(lines).encode()


def store_build(ctx: DemoContext, build: Build, index: int) -> None:
    leaking = build.pk == ctx.leaking_build.pk
    for run, device in enumerate(ctx.devices[:2]):
        raw = lsan_log(4100 + 10 * index + run, leaks_in(index, leaking), ctx)
        meta = ctx.meta_for(build, device)
        at = meta.received_at + timedelta(hours=1 + run)
        store_leak_log(
            ctx.app,
            build,
            device,
            sanitizer.parse(raw),
            captured_at=at,
            received_at=at,
            source_format="sanitizer.leaks",
        )


def group_of(ctx: DemoContext, leak: DemoLeak) -> LeakGroup:
    return current_groups(ctx.app).get(title=leak.frames[0][0])


def load(ctx: DemoContext) -> None:
    for index, build in enumerate(ctx.builds):
        store_build(ctx, build, index)
        if index == 0:
            # Triage after the first build: the store leak is known and assigned, the JSON
            # parser leak is fixed in the next build.
            store_group = group_of(ctx, STORE_LEAK)
            store_group.change_triage(ctx.user, status=Status.OPEN, assignee=ctx.user)
            group_of(ctx, JSON_LEAK).change_triage(
                ctx.user,
                status=Status.FIXED,
                fixed_in_build=ctx.builds[1],
                notes="Parser::ParseString leaked the buffer on an early return; fixed in 8.0.2.",
            )
