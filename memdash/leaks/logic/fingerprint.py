"""Which leaks are the same leak: a fingerprint of the allocation stack (pure, no Django).

Algorithm `leaks-2027.02`:

1. Drop the frames of the allocator and the leak checker itself, by what they are: malloc and
   its family, operator new/delete, sanitizer interceptors and runtimes by name (`__interceptor_*`,
   `__asan_*`, `__lsan_*`, `__sanitizer_*`, `__hwasan_*`), by module (`libasan.so.8`,
   `liblsan.so.0`, `libhwasan.so`, `libclang_rt.*`, old ASan's `_asan_rtl_`) and by source
   (`compiler-rt/lib/asan/…`, GCC's `libsanitizer/…`), Android's malloc_debug/malloc_hooks
   libraries, valgrind's replacement allocator (`vg_replace_malloc.c`, `vgpreload_*`), Rust's
   global-allocator shims; and the C runtime's frames that start a process or thread
   (`__libc_start_main`, `__libc_start_call_main`, `_start`, `start_thread`, `clone`, valgrind's
   `(below main)`), which differ between libc versions and between tools (valgrind stops at
   `main`). Their presence depends on the tool, not on the leak, so the same leak found by
   LeakSanitizer (of any version) and valgrind in CI and by libmemunreachable on a phone keeps the
   same fingerprint.
2. Drop frames that name nothing (`<unknown module>`, a bare address): JIT code, whose number and
   addresses change from run to run.
3. Reduce each remaining frame to its function name, with what changes between builds removed:
   offsets (`+0x1a`, `+24`), addresses, Rust's `::h<hash>` suffix, `(discriminator N)`, and a
   `(module+0xoff)` an older parser left in the name (`lose_buffer (prog+0x401cb0)`, a module
   printed without a path); file and line are left out because a line moves when anything above
   it in the file changes. A frame with no symbol keeps its module's file name (the offset inside
   it changes with every build), except in a stack that names no function at all (a sanitizer
   run with `symbolize=0`): there every frame is its module and offset (`prog+0x11ca`), the only
   thing that tells one leak of a build from another; debug files naming the stack later regroup
   it by name (memdash.leaks.writes.names).
4. Keep the innermost `DEPTH` frames: tools cut stacks at different depths (valgrind 12 by
   default, sanitizers 30), and the allocation site is what identifies a leak.
5. Hash the version and the frame keys. Without any frame left, a leak is fingerprinted by the
   shape its tool printed where it printed one (Xcode's `leaks` without MallocStackLogging: the
   root's kind and class, the references and classes right under it, the classes of its loops;
   `memdash.leaks.logic.parsers.xcode_tree.shape_of`), else by its size: the size of one
   allocation where known, else total bytes and allocation count.

Changing any of this changes FINGERPRINT_VERSION, so groups made by different rules are never
mixed: groups of an older version are listed as they are until they are regrouped under today's
rules (memdash.leaks.writes.regroup: `manage.py regroup_leaks`, queued after `migrate` by a
migration that marks them, as leaks 0004 does for `leaks-2026.11`, leaks 0006 for
`leaks-2026.12`, whose rules named no Apple allocator frame, and leaks 0008 for `leaks-2027.01`,
whose rules merged the leaks of a stack without names and kept a module's text in a name).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memdash.leaks.logic.reports import LeakRecord, StackFrame

FINGERPRINT_VERSION = "leaks-2027.02"
DEPTH = 8

_ALLOCATOR_FUNCTIONS = frozenset(
    {
        "malloc", "calloc", "realloc", "reallocf", "reallocarray", "free", "cfree",
        "memalign", "posix_memalign", "aligned_alloc", "valloc", "pvalloc", "malloc_usable_size",
        "je_malloc", "je_calloc", "je_realloc", "je_memalign", "je_posix_memalign",
        "scudo_malloc", "scudo_calloc", "scudo_realloc", "scudo_memalign",
        "malloc_zone_malloc", "_malloc_zone_malloc", "malloc_zone_calloc", "_malloc_zone_calloc",
        "malloc_zone_realloc", "_malloc_zone_realloc", "malloc_zone_memalign",
        "swift_slowAlloc", "swift_allocObject",
        "__rust_alloc", "__rust_alloc_zeroed", "__rust_realloc",
        "__rdl_alloc", "__rdl_alloc_zeroed", "__rdl_realloc",
        "__rg_alloc", "__rg_alloc_zeroed", "__rg_realloc",
        "__libc_malloc", "__libc_calloc", "__libc_realloc", "__libc_memalign",
        "_malloc", "_calloc", "_realloc", "_free",
        "_objc_rootAlloc", "_objc_rootAllocWithZone", "objc_alloc", "objc_alloc_init",
        "objc_allocWithZone", "class_createInstance", "_class_createInstance",
        "_class_createInstanceFromZone", "+[NSObject alloc]", "+[NSObject allocWithZone:]",
    }
)  # fmt: skip
_ALLOCATOR_PATTERNS = re.compile(
    r"^(?:"
    r"operator (?:new|delete)(?:\[\])?(?:\(.*\))?"  # operator new(unsigned long), new[] …
    r"|_Zn[wa][jm].*|_Zd[la]Pv.*"  # the same, mangled
    r"|_{2,3}interceptor_\w+|__asan_\w+|__lsan_\w+|__sanitizer_\w+|__msan_\w+|__hwasan_\w+"
    r"|(?:__asan|__lsan|__sanitizer|__hwasan|scudo)::.*"
    r"|debug_(?:malloc|calloc|realloc|memalign|posix_memalign|aligned_alloc|valloc|pvalloc)"
    r"|hooks_(?:malloc|calloc|realloc|memalign|posix_memalign|aligned_alloc|valloc|pvalloc)"
    r"|alloc::alloc::\w+(?:::.*)?"
    r"|_?malloc_zone_\w+"  # Apple's zone allocator and its instrumented variants
    r")$"
)
_ALLOCATOR_IMAGES = re.compile(
    r"(?:^|[/\\])(?:libc_malloc_debug\.so|libc_malloc_hooks\.so|vgpreload_[\w-]+\.so"
    r"|lib(?:a|l|hwa|m|t|ub)san\.so(?:\.\d+)*|libclang_rt\.[\w.-]+|_asan_rtl_"
    r"|libsystem_malloc\.dylib)$"
)
# Apple's loader: every frame of it starts the process (`start`).
_STARTUP_IMAGES = re.compile(r"(?:^|/)(?:dyld|libdyld\.dylib)$")
_ALLOCATOR_FILES = re.compile(
    r"(?:^|/)(?:vg_replace_malloc\.c|asan_malloc_\w+\.c(?:pp|c)?)$"
    r"|(?:^|/)(?:compiler-rt/lib|libsanitizer)/(?:asan|lsan|hwasan|msan|tsan|ubsan"
    r"|sanitizer_common|interception)/"
)
# The C runtime's frames around `main` and a thread's start routine.
_STARTUP_FUNCTIONS = frozenset(
    {
        "_start", "__libc_start_main", "__libc_start_call_main", "__libc_start_main_impl",
        "start_thread", "clone", "clone3", "__clone", "__clone3", "thread_start",
        "_pthread_start", "__pthread_start", "(below main)",
    }
)  # fmt: skip

# The form of FINGERPRINT_VERSION: its date orders the rules.
_VERSION = re.compile(r"^leaks-(\d{4})\.(\d{2})$")
_OFFSET = re.compile(r"\+(?:0x[0-9a-fA-F]+|\d+)$")
_RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")
_DISCRIMINATOR = re.compile(r"\s*\(discriminator \d+\)$")
# `(module+0xoff)` and `(BuildId: …)` after a name, as parsers before `leaks-2027.02` stored them.
_MODULE_TAIL = re.compile(r"\s+\([^()]*\+0x[0-9a-fA-F]+\)(?:\s+\(BuildId: [0-9a-fA-F]*\))?$")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


@dataclass(frozen=True)
class Fingerprint:
    key: str  # hex digest, stable across reports, devices, builds and tools
    version: str
    frames: tuple[str, ...]  # the frame keys that were hashed; empty when fingerprinted by size
    by_size: bool
    title: str  # what a page calls the group: top frame, or the size
    by_shape: bool = False  # `frames` are the shape its tool printed, not stack frames


def is_allocator_frame(frame: StackFrame) -> bool:
    """A frame of the allocator or the leak checker's runtime, or one that starts a process or
    thread: not part of what leaked."""
    symbol = _OFFSET.sub("", _MODULE_TAIL.sub("", frame.symbol.strip()))
    if symbol in _STARTUP_FUNCTIONS:
        return True
    if frame.image and _STARTUP_IMAGES.search(frame.image):
        return True
    if symbol in _ALLOCATOR_FUNCTIONS or _ALLOCATOR_PATTERNS.match(symbol):
        return True
    if frame.image and _ALLOCATOR_IMAGES.search(frame.image):
        return True
    return bool(frame.file and _ALLOCATOR_FILES.search(frame.file))


def function_name(frame: StackFrame) -> str:
    """The frame's function without what changes between builds; empty when it names none."""
    symbol = _DISCRIMINATOR.sub("", _MODULE_TAIL.sub("", frame.symbol.strip()))
    symbol = _RUST_HASH.sub("", _OFFSET.sub("", symbol))
    return "" if symbol in {"??", "<unknown>"} else symbol


def frame_key(frame: StackFrame, by_offset: bool = False) -> str | None:
    """What identifies a frame across builds, or None for a frame that names nothing.
    `by_offset`: a frame without a name is its module and offset (a stack without names)."""
    if symbol := function_name(frame):
        return _ADDRESS.sub("0x…", symbol)
    image = frame.image.strip()
    if image and not image.startswith("<"):
        name = image.replace("\\", "/").rsplit("/", 1)[-1]
        return f"{name}+0x{frame.offset:x}" if by_offset and frame.offset is not None else name
    return None


def stack_keys(frames: Iterable[StackFrame], depth: int = DEPTH) -> tuple[str, ...]:
    kept = [frame for frame in frames if not is_allocator_frame(frame)]
    by_offset = not any(function_name(frame) for frame in kept)
    keys = []
    for frame in kept:
        key = frame_key(frame, by_offset)
        if key is not None:
            keys.append(key)
        if len(keys) == depth:
            break
    return tuple(keys)


def size_key(record: LeakRecord) -> str:
    """What a leak without a stack is known by: one allocation's size where the tool gives it
    (libmemunreachable does; sanitizer records of equal-sized objects imply it), else the
    record's total bytes and count."""
    if record.size is not None:
        return f"{record.size}-byte allocations"
    return f"{record.bytes} bytes in {record.allocations} allocations"


def _digest(*parts: str) -> str:
    return hashlib.sha256("\n".join([FINGERPRINT_VERSION, *parts]).encode()).hexdigest()[:40]


def fingerprint_frames(
    frames: Sequence[StackFrame], size_text: str, label: str = ""
) -> Fingerprint:
    """By the stack, else by `size_text`. `label` names what leaked where the tool says it
    (`ROOT LEAK: ChatMessage`): the title then reads `ROOT LEAK: ChatMessage in <top frame>`;
    it is not part of the key."""
    keys = stack_keys(frames)
    if keys:
        title = f"{label} in {keys[0]}" if label else keys[0]
        key = _digest("stack", *keys)
    else:
        title, key = size_text, _digest("size", size_text)
    return Fingerprint(
        key=key, version=FINGERPRINT_VERSION, frames=keys, by_size=not keys, title=title
    )


def fingerprint_shape(shape: Sequence[str], title: str) -> Fingerprint:
    """By the shape a tool printed for a leak without a stack (Xcode's `leaks`: `xcode_tree`)."""
    keys = tuple(shape)
    return Fingerprint(
        key=_digest("shape", *keys), version=FINGERPRINT_VERSION, frames=keys, by_size=False,
        title=title, by_shape=True,
    )  # fmt: skip


def fingerprint(record: LeakRecord) -> Fingerprint:
    label = str(record.detail.get("title") or "")
    shape = record.detail.get("shape")
    if shape and not stack_keys(record.frames):
        return fingerprint_shape([str(part) for part in shape], label or size_key(record))
    return fingerprint_frames(record.frames, size_key(record), label)


def is_older_version(version: str) -> bool:
    """Whether groups made by the rules `version` predate today's (versions are `leaks-YYYY.MM`,
    in date order; one that is no such date counts as older)."""
    found, today = _VERSION.match(version), _VERSION.match(FINGERPRINT_VERSION)
    if found is None or today is None:
        return version != FINGERPRINT_VERSION
    return found.groups() < today.groups()
