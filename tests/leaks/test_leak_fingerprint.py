"""Fingerprints group the same leak however it was printed, and split different leaks."""

from pathlib import Path

from memdash.leaks.logic.fingerprint import (
    DEPTH,
    FINGERPRINT_VERSION,
    fingerprint,
    is_allocator_frame,
    stack_keys,
)
from memdash.leaks.logic.parsers import parse_leak_log
from memdash.leaks.logic.reports import DIRECT, LeakRecord, StackFrame

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "leaks"


def record(*frames: StackFrame, size: int | None = 48, allocations: int = 1) -> LeakRecord:
    total = (size or 48) * allocations
    return LeakRecord(
        kind=DIRECT, bytes=total, allocations=allocations, frames=list(frames), size=size
    )


APP_FRAMES = [
    StackFrame(symbol="ChatCache::Put(char const*)", file="cache.cc", line=41),
    StackFrame(symbol="ChatController::Load()", file="controller.cc", line=12),
]


def shifted(frames, delta):
    """The same code in another build: other addresses, offsets and line numbers."""
    return [
        StackFrame(
            symbol=f.symbol, address=0x1000 + delta, offset=delta, file=f.file, line=f.line + delta
        )
        for f in frames
    ]


def test_same_stack_from_three_tools_groups():
    lsan = record(StackFrame(symbol="__interceptor_malloc", address=0x7F00), *APP_FRAMES)
    valgrind = record(
        StackFrame(
            symbol="malloc",
            image="/usr/lib/valgrind/vgpreload_memcheck-amd64-linux.so",
            file="/build/valgrind/coregrind/m_replacemalloc/vg_replace_malloc.c",
            line=299,
        ),
        *shifted(APP_FRAMES, 7),
    )
    android = record(
        StackFrame(symbol="debug_malloc", image="/system/lib64/libc_malloc_debug.so", offset=9),
        StackFrame(symbol="operator new(unsigned long)", image="/system/lib64/libc++.so"),
        *shifted(APP_FRAMES, 30),
    )
    keys = {fingerprint(r).key for r in (lsan, valgrind, android)}
    assert len(keys) == 1
    assert fingerprint(lsan).frames == ("ChatCache::Put(char const*)", "ChatController::Load()")
    assert fingerprint(lsan).title == "ChatCache::Put(char const*)"
    assert fingerprint(lsan).version == FINGERPRINT_VERSION == "leaks-2027.02"


def test_different_allocation_site_splits():
    one = record(StackFrame(symbol="malloc"), *APP_FRAMES)
    other = record(
        StackFrame(symbol="malloc"),
        StackFrame(symbol="ChatCache::Evict()"),
        APP_FRAMES[1],
    )
    assert fingerprint(one).key != fingerprint(other).key


def test_same_site_different_caller_splits():
    one = record(APP_FRAMES[0], StackFrame(symbol="A::run()"))
    other = record(APP_FRAMES[0], StackFrame(symbol="B::run()"))
    assert fingerprint(one).key != fingerprint(other).key


def test_offsets_hashes_and_unknown_frames_are_normalised():
    one = record(
        StackFrame(symbol="render+24", image="libchat.so"),
        StackFrame(symbol="core::fmt::write::h0123456789abcdef"),
        StackFrame(address=0x7FEE08409AFA),  # (<unknown module>): JIT code, dropped
        StackFrame(image="/system/lib64/libart.so", offset=0x1234),
    )
    other = record(
        StackFrame(symbol="render+0x40", image="libchat.so"),
        StackFrame(symbol="core::fmt::write::hfedcba9876543210"),
        StackFrame(address=0x7FEE0850FBD6),
        StackFrame(address=0x7FEE0843145C),
        StackFrame(image="/apex/lib64/libart.so", offset=0x9999),
    )
    assert stack_keys(one.frames) == ("render", "core::fmt::write", "libart.so")
    assert fingerprint(one).key == fingerprint(other).key


def test_only_the_innermost_frames_count():
    base = [StackFrame(symbol=f"f{i}") for i in range(DEPTH)]
    one = record(*base, StackFrame(symbol="main"))
    other = record(*base, StackFrame(symbol="thread_start"), StackFrame(symbol="clone"))
    assert fingerprint(one).key == fingerprint(other).key


def test_without_a_stack_by_size():
    a = record(size=336)
    b = record(StackFrame(symbol="malloc"), size=336)  # only allocator frames: no stack left
    c = record(size=144)
    assert fingerprint(a).key == fingerprint(b).key
    assert fingerprint(a).key != fingerprint(c).key
    assert fingerprint(a).by_size and fingerprint(a).title == "336-byte allocations"
    # A stack beats a size: the same size with a stack is another group.
    assert fingerprint(a).key != fingerprint(record(*APP_FRAMES, size=336)).key
    uneven = LeakRecord(kind=DIRECT, bytes=100, allocations=3)
    assert fingerprint(uneven).title == "100 bytes in 3 allocations"


def test_allocator_frames():
    for symbol in [
        "malloc",
        "calloc",
        "realloc",
        "operator new(unsigned long)",
        "operator new[](unsigned long)",
        "__interceptor_malloc",
        "___interceptor_calloc",
        "__asan_memalign",
        "__lsan::Allocate(__sanitizer::StackTrace const&, unsigned long, unsigned long, bool)",
        "debug_calloc",
    ]:
        assert is_allocator_frame(StackFrame(symbol=symbol)), symbol
    assert is_allocator_frame(StackFrame(image="/system/lib/libc_malloc_debug.so"))
    assert is_allocator_frame(StackFrame(symbol="foo", file="/x/vg_replace_malloc.c"))
    for symbol in ["__GI___strdup", "xmlStrndup", "mallocate_buffer", "operator_new_helper"]:
        assert not is_allocator_frame(StackFrame(symbol=symbol)), symbol


def test_lsan_sample_groups_records_of_one_constructor():
    (report,) = parse_leak_log((SAMPLES / "lsan_multiple_leaks.txt").read_bytes()).reports
    groups: dict[str, list[LeakRecord]] = {}
    for leak in report.records:
        groups.setdefault(fingerprint(leak).key, []).append(leak)
    # 32 records. Allocated in PlatformPlayer::PlatformPlayer: 8 records (4 direct, 4 indirect,
    # one source line, different return addresses); PepperDisplayContext3D's constructor: 4;
    # SoundMix::Create, the unsymbolised libstdc++ frame, std::vector<pp::DeviceRef_Dev>::
    # operator=: 2 each. The other 32 - 8 - 4 - 2 - 2 - 2 = 14 are alone: 5 + 14 = 19 groups.
    assert len(groups) == 19
    sizes = sorted((len(v) for v in groups.values()), reverse=True)
    assert sizes[:6] == [8, 4, 2, 2, 2, 1]


def test_valgrind_sample_groups_the_same_rust_site():
    (report,) = parse_leak_log((SAMPLES / "valgrind_memcheck_protocol4.xml").read_bytes()).reports
    keys = [fingerprint(leak).key for leak in report.records]
    # Loss records 1 and 4 (15 and 185 bytes definitely lost) come from the same Vec::reserve
    # path in CString::new, a few lines apart in the caller: one group.
    assert keys[0] == keys[3]
    assert fingerprint(report.records[0]).title == "reserve_internal<u8,alloc::alloc::Global>"
    assert keys[0] != keys[1]


def test_a_stack_without_names_keeps_its_offsets():
    """A sanitizer run with `symbolize=0`: no frame names a function, so each is its module and
    offset (the leaks of one build stay apart); a stack with names keeps module names only for
    its unnamed frames (their offsets differ between builds and OS versions)."""
    runtime = StackFrame(image="/lib/x86_64-linux-gnu/libasan.so.8", offset=0xB89CF)
    libc = StackFrame(image="/lib/x86_64-linux-gnu/libc.so.6", offset=0x27249)
    lose_buffer = record(
        runtime, StackFrame(image="/src/build/gcc_asan", offset=0x11CA),
        StackFrame(image="/src/build/gcc_asan", offset=0x1361), libc,
    )  # fmt: skip
    lose_node = record(
        runtime, StackFrame(image="/src/build/gcc_asan", offset=0x1201),
        StackFrame(image="/src/build/gcc_asan", offset=0x1366), libc,
    )  # fmt: skip
    assert stack_keys(lose_buffer.frames) == (
        "gcc_asan+0x11ca",
        "gcc_asan+0x1361",
        "libc.so.6+0x27249",
    )
    assert fingerprint(lose_buffer).key != fingerprint(lose_node).key
    named = record(StackFrame(symbol="render"), StackFrame(image="/apex/libart.so", offset=0x99))
    assert stack_keys(named.frames) == ("render", "libart.so")


def test_a_module_left_in_a_stored_name_is_not_part_of_it():
    """Parsers before `leaks-2027.02` stored `in lose_buffer (prog+0x401cb0)` (a module without a
    path) as the name `lose_buffer (prog+0x401cb0)`: read as `lose_buffer`, the runtime's frame
    as the runtime's."""
    stored = record(
        StackFrame(symbol="__interceptor_malloc (prog+0x4a214e) (BuildId: a08e1e90)"),
        StackFrame(symbol="lose_buffer (prog+0x401cb0)", address=0x401CB0),
        StackFrame(symbol="main (prog+0x40134e)", address=0x40134E),
    )
    parsed = record(StackFrame(symbol="lose_buffer"), StackFrame(symbol="main"))
    assert fingerprint(stored).frames == ("lose_buffer", "main")
    assert fingerprint(stored) == fingerprint(parsed)
    assert fingerprint(stored).title == "lose_buffer"
