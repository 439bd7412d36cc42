"""The leak parser on every report GCC 12's and Clang 14's AddressSanitizer and LeakSanitizer
printed here (tests/data/leaks/sanitizers/, recorded by tests/corpus/record_sanitizers.sh, which
names each file's build and run in that folder's PROVENANCE.md).

memdash's figures are checked against the tool's own, read from each file by this test with
nothing of memdash: the `SUMMARY: …Sanitizer: N byte(s) leaked in M allocation(s).` line and the
`Direct/Indirect leak of N byte(s) in M object(s)` headers. Each frame form is checked on a line
quoted from a file, with the parts the tool printed (function, module, offset, file:line, build
id) copied beside it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memdash.core.logic.errors import InvalidUpload
from memdash.leaks.logic.fingerprint import fingerprint, is_allocator_frame
from memdash.leaks.logic.parsers import detect_tool, parse_leak_log
from memdash.leaks.logic.reports import DIRECT, INDIRECT, StackFrame
from memdash.leaks.models import LeakRecord, LeakReport

CORPUS = Path(__file__).resolve().parents[1] / "data" / "leaks" / "sanitizers"
BUILT_IN = "/tmp/memdash-sanitizers"  # noqa: S108 - where the script built the programs
LEAK_FILES = sorted(
    path.name for path in CORPUS.glob("*.txt") if b"detected memory leaks" in path.read_bytes()
)
# The tool's own words, read by the test itself.
SUMMARY = re.compile(rb"^SUMMARY: \w+: (\d+) byte\(s\) leaked in (\d+) allocation\(s\)\.$", re.M)
HEADER = re.compile(rb"^(Direct|Indirect) leak of (\d+) byte\(s\) in (\d+) object\(s\)", re.M)
OMITTED = re.compile(rb"^Omitting (\d+) more leak\(s\)\.$", re.M)
# What a frame prints beside its function: `(module+0xoff)`, `(BuildId: …)`, `(<unknown module>)`.
PRINTED_PARTS = re.compile(r"\+0x[0-9a-f]+\)|BuildId|<unknown module>|^\s|\s$")


def raw(name: str) -> bytes:
    return (CORPUS / name).read_bytes()


def line(name: str, number: int) -> str:
    return raw(name).decode().split("\n")[number - 1]


def test_the_corpus_holds_both_compilers_and_both_sanitizers():
    assert len(LEAK_FILES) == 26
    for prefix in ("gcc12-asan", "gcc12-lsan", "clang14-asan", "clang14-lsan"):
        assert any(name.startswith(prefix) for name in LEAK_FILES), prefix


@pytest.mark.parametrize("name", LEAK_FILES)
def test_figures_are_the_sanitizers_own(name):
    text = raw(name)
    assert detect_tool(text) == "sanitizer"
    (report,) = parse_leak_log(text).reports
    ((stated_bytes, stated_allocations),) = SUMMARY.findall(text)
    assert (report.stated_bytes, report.stated_allocations) == (
        int(stated_bytes),
        int(stated_allocations),
    )
    headers = [
        (DIRECT if kind == b"Direct" else INDIRECT, int(size), int(objects))
        for kind, size, objects in HEADER.findall(text)
    ]
    assert [(r.kind, r.bytes, r.allocations) for r in report.records] == headers
    if not OMITTED.search(text):  # every leak listed: the records add up to the SUMMARY
        assert (report.listed_bytes, report.listed_allocations) == (
            int(stated_bytes),
            int(stated_allocations),
        )


@pytest.mark.parametrize("name", LEAK_FILES)
def test_every_frame_is_taken_apart(name):
    """No frame keeps the tool's raw text as its function, and no title carries it."""
    (report,) = parse_leak_log(raw(name)).reports
    for record in report.records:
        for frame in record.frames:
            assert frame.address is not None
            assert not PRINTED_PARTS.search(frame.symbol), frame
        assert not PRINTED_PARTS.search(fingerprint(record).title)


def test_max_leaks_and_suppressions_stated_apart():
    name = "gcc12-asan_cxx_suppressions_max_leaks.txt"
    (report,) = parse_leak_log(raw(name)).reports
    # "The 2 top leak(s):", "Omitting 4 more leak(s).", "Suppressions used:" lose_copy (1, 6
    # bytes) and lose_in_thread (1, 24); "SUMMARY: AddressSanitizer: 220 byte(s) leaked in 8
    # allocation(s)." while the two listed leaks are 120 bytes in 3 and 24 in 1.
    assert (report.info["max_leaks"], report.info["omitted_leaks"]) == (2, 4)
    assert [(s.template, s.count, s.bytes) for s in report.suppressions] == [
        ("lose_copy", 1, 6),
        ("lose_in_thread", 1, 24),
    ]
    assert (report.listed_bytes, report.listed_allocations) == (144, 4)
    assert report.unlisted_bytes == 220 - 144


def frame_at(name: str, number: int) -> StackFrame:
    """The frame memdash reads from line `number` of the file."""
    (report,) = parse_leak_log(raw(name)).reports
    for record in report.records:
        first = record.line + 1
        if first <= number < first + len(record.frames):
            return record.frames[number - first]
    raise AssertionError(f"no frame on line {number} of {name}")


# (file, line number, the parts of the frame as the line prints them)
FRAMES = [
    # "#1 0x4011b7 in lose_buffer (gcc_asan_nopie+0x4011b7)": non-PIE (the offset is the
    # address), strip_path_prefix (no path in the module), no -g (no file).
    ("gcc12-asan_nopie_strip_prefix.txt", 7,
     {"symbol": "lose_buffer", "image": "gcc_asan_nopie", "offset": 0x4011B7,
      "address": 0x4011B7}),
    # "#1 0x4011b7  (gcc_asan_nopie+0x4011b7)": the same with symbolize=0.
    ("gcc12-asan_nopie_strip_prefix_symbolize0.txt", 7,
     {"symbol": "", "image": "gcc_asan_nopie", "offset": 0x4011B7, "address": 0x4011B7}),
    # "#0 … (/lib/x86_64-linux-gnu/libasan.so.8+0xb89cf)"
    ("gcc12-asan_symbolize0.txt", 6,
     {"symbol": "", "image": "/lib/x86_64-linux-gnu/libasan.so.8", "offset": 0xB89CF}),
    # "#3 … (/lib/x86_64-linux-gnu/libc.so.6+0x27249)"
    ("gcc12-asan_symbolize0.txt", 9,
     {"symbol": "", "image": "/lib/x86_64-linux-gnu/libc.so.6", "offset": 0x27249}),
    # "#1 … in lose_buffer /tmp/memdash-sanitizers/four_kinds.c:23"
    ("gcc12-asan.txt", 7,
     {"symbol": "lose_buffer", "image": "", "file": f"{BUILT_IN}/four_kinds.c",
      "line": 23}),
    # "#0 … in __interceptor_malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:69"
    ("gcc12-asan.txt", 6,
     {"symbol": "__interceptor_malloc",
      "file": "../../../../src/libsanitizer/asan/asan_malloc_linux.cpp", "line": 69}),
    # "#0 … in __interceptor_malloc (/tmp/memdash-sanitizers/gcc_asan_static+0x9c1df)": the
    # static runtime, inside the program.
    ("gcc12-asan_static.txt", 6,
     {"symbol": "__interceptor_malloc", "image": f"{BUILT_IN}/gcc_asan_static",
      "offset": 0x9C1DF, "file": ""}),
    # "#2 … (<unknown module>)": code written at run time.
    ("gcc12-asan_cxx.txt", 31, {"symbol": "", "image": "", "offset": None, "file": ""}),
    # "#1 … in std::vector<int, std::allocator<int> >::vector(unsigned long, std::allocator<int>
    # const&) /usr/include/c++/12/bits/stl_vector.h:552"
    ("gcc12-asan_cxx.txt", 55,
     {"symbol": "std::vector<int, std::allocator<int> >::vector(unsigned long, "
                "std::allocator<int> const&)",
      "file": "/usr/include/c++/12/bits/stl_vector.h", "line": 552}),
    # "#1 … in lose_copy /tmp/memdash-sanitizers/lose_copy.c:6": in the shared library.
    ("gcc12-asan_cxx.txt", 38,
     {"symbol": "lose_copy", "file": f"{BUILT_IN}/lose_copy.c", "line": 6}),
    # "#0 … in __interceptor_malloc (/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/
    # libclang_rt.asan-x86_64.so+0xd3bde) (BuildId: 2c5433d00caeb9250fe2f4e673005aaddca5cef0)"
    ("clang14-asan_shared.txt", 6,
     {"symbol": "__interceptor_malloc",
      "image": "/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.asan-x86_64.so",
      "offset": 0xD3BDE, "build_id": "2c5433d00caeb9250fe2f4e673005aaddca5cef0"}),
    # "#1 … in lose_buffer /tmp/memdash-sanitizers/four_kinds.c:23:20": line and column.
    ("clang14-asan_shared.txt", 7,
     {"symbol": "lose_buffer", "file": f"{BUILT_IN}/four_kinds.c", "line": 23}),
    # "#3 … (/lib/x86_64-linux-gnu/libc.so.6+0x27249) (BuildId: 93ac61ec…)"
    ("clang14-asan_symbolize0.txt", 9,
     {"symbol": "", "image": "/lib/x86_64-linux-gnu/libc.so.6", "offset": 0x27249,
      "build_id": "93ac61ec5a8eb1396f9fbd350e3169a558528a40"}),
    # "#0 0x4a214e in __interceptor_malloc (clang_asan_nopie+0x4a214e) (BuildId: a08e1e90…)"
    ("clang14-asan_nopie_strip_prefix.txt", 6,
     {"symbol": "__interceptor_malloc", "image": "clang_asan_nopie", "offset": 0x4A214E,
      "address": 0x4A214E, "build_id": "a08e1e907aa442c6ddabf7e316b96fcb060a9c2b"}),
    # "#1 0x4dcf51 in lose_buffer four_kinds.c": a file and no line (no -g).
    ("clang14-asan_nopie_strip_prefix.txt", 7,
     {"symbol": "lose_buffer", "image": "", "file": "four_kinds.c", "line": None,
      "address": 0x4DCF51}),
    # "#1 0x4dcf51  (clang_asan_nopie+0x4dcf51) (BuildId: a08e1e90…)"
    ("clang14-asan_nopie_strip_prefix_symbolize0.txt", 7,
     {"symbol": "", "image": "clang_asan_nopie", "offset": 0x4DCF51,
      "build_id": "a08e1e907aa442c6ddabf7e316b96fcb060a9c2b"}),
    # "#0 … in malloc ??:?": addr2line as the symbolizer.
    ("clang14-asan_addr2line.txt", 6, {"symbol": "malloc", "image": "", "file": "",
                                       "line": None}),
    # "#5 … in _start (/tmp/memdash-sanitizers/gcc_asan+0x10f0)": the slow unwinder's last frame.
    ("gcc12-asan_slow_unwind.txt", 11,
     {"symbol": "_start", "image": f"{BUILT_IN}/gcc_asan", "offset": 0x10F0, "file": ""}),
    # "#2 … (<unknown module>)" under Clang.
    ("clang14-asan_cxx.txt", 31, {"symbol": "", "image": "", "offset": None}),
]  # fmt: skip


@pytest.mark.parametrize(("name", "number", "expected"), FRAMES)
def test_frame_forms(name, number, expected):
    frame = frame_at(name, number)
    printed = line(name, number).split()
    assert printed[0].startswith("#") and frame.address == int(printed[1], 16)
    assert {key: getattr(frame, key) for key in expected} == expected


@pytest.mark.parametrize(
    ("name", "number"),
    [
        ("gcc12-asan.txt", 6),  # __interceptor_malloc in libsanitizer/asan
        ("gcc12-asan_symbolize0.txt", 6),  # (/lib/x86_64-linux-gnu/libasan.so.8+0xb89cf)
        ("gcc12-asan_static.txt", 6),  # __interceptor_malloc inside the program
        ("clang14-asan_shared.txt", 6),  # in libclang_rt.asan-x86_64.so
        ("clang14-asan_addr2line.txt", 6),  # malloc ??:?
        ("gcc12-asan_cxx.txt", 43),  # operator new[](unsigned long)
        ("gcc12-asan_cxx.txt", 37),  # __interceptor_strdup
    ],
)
def test_runtime_frames_are_known_in_every_form(name, number):
    assert is_allocator_frame(frame_at(name, number))


SYMBOLIZED = [
    "gcc12-asan.txt",
    "gcc12-asan_no_symbolizer_on_path.txt",
    "gcc12-asan_slow_unwind.txt",
    "gcc12-asan_static.txt",
    "gcc12-asan_nopie_strip_prefix.txt",
    "gcc12-lsan.txt",
    "clang14-asan.txt",
    "clang14-asan_no_symbolizer_on_path.txt",
    "clang14-asan_slow_unwind.txt",
    "clang14-asan_addr2line.txt",
    "clang14-asan_shared.txt",
    "clang14-asan_nopie_strip_prefix.txt",
    "clang14-lsan.txt",
]


@pytest.mark.parametrize("name", SYMBOLIZED)
def test_one_leak_one_fingerprint_whichever_compiler_runtime_or_symbolizer(name):
    """four_kinds.c's leaks as each symbolized run prints them: the fingerprints of
    `gcc12-asan.txt`'s, whatever the compiler, runtime, symbolizer, PIE or path prefix."""
    (reference,) = parse_leak_log(raw("gcc12-asan.txt")).reports
    (report,) = parse_leak_log(raw(name)).reports
    assert [fingerprint(r) for r in report.records] == [fingerprint(r) for r in reference.records]
    # "Direct leak of 100 …" in lose_buffer, "Direct leak of 16 …" and "Indirect leak of 40 …"
    # in lose_node.
    assert [fingerprint(r).title for r in report.records] == [
        "lose_buffer",
        "lose_node",
        "lose_node",
    ]


def test_a_leak_report_after_an_error_the_process_went_on_from():
    """`halt_on_error=0`: "ERROR: AddressSanitizer: heap-use-after-free" (line 2) and its
    SUMMARY, then the same pid's "ERROR: LeakSanitizer: detected memory leaks" (line 57),
    "Direct leak of 48 byte(s) in 1 object(s)" and "SUMMARY: AddressSanitizer: 48 byte(s) leaked
    in 1 allocation(s).": the leak report is read, the error kept with it."""
    (report,) = parse_leak_log(raw("gcc12-asan_recover_then_leak.txt")).reports
    assert report.line == 57
    assert (report.stated_bytes, report.stated_allocations) == (48, 1)
    assert [(r.kind, r.bytes, fingerprint(r).title) for r in report.records] == [
        (DIRECT, 48, "lose_block")
    ]
    assert report.info["errors_before"] == ["heap-use-after-free"]


@pytest.mark.parametrize(
    ("name", "number", "message"),
    [
        # "==…==ERROR: AddressSanitizer: heap-use-after-free on address …" on line 2.
        ("gcc12-asan_use_after_free.txt", 2, "an AddressSanitizer heap-use-after-free report"),
        ("clang14-asan_use_after_free.txt", 2, "an AddressSanitizer heap-use-after-free report"),
        # "LeakSanitizer: CHECK failed: lsan_interceptors.cpp:82 …" (GCC 12, -static-liblsan).
        ("gcc12-lsan_static.txt", 1, "LeakSanitizer's runtime failed its own check"),
    ],
)
def test_no_leak_check_refused_with_the_reason(name, number, message):
    assert detect_tool(raw(name)) == "sanitizer"
    with pytest.raises(InvalidUpload) as error:
        parse_leak_log(raw(name))
    assert error.value.path == f"line {number}"
    assert error.value.message.startswith(message)


@pytest.mark.parametrize("name", [n for n in LEAK_FILES if "symbolize0" in n])
def test_leaks_of_a_stack_without_names_stay_apart(name):
    """`symbolize=0`: no frame is named, each is its module and offset; each leak LeakSanitizer
    printed apart (its own stack) is its own fingerprint."""
    (report,) = parse_leak_log(raw(name)).reports
    prints = [fingerprint(r) for r in report.records]
    assert len({p.key for p in prints}) == len(report.records) == len(HEADER.findall(raw(name)))


# --- through the upload API -------------------------------------------------------------------


def send(upload, name: str) -> dict:
    response = upload(raw(name), content_type="text/plain", query="build_version=1.0")
    body = response.json()
    assert response.status_code == 202 and body["status"] == "done", body
    return body


@pytest.mark.django_db
def test_non_pie_stripped_report_stored_by_function(upload, app):
    """`in lose_buffer (gcc_asan_nopie+0x4011b7)`: stored as the function in its module, the
    groups titled by the function."""
    body = send(upload, "gcc12-asan_nopie_strip_prefix.txt")
    assert body["counts"]["records"] == 3 and body["counts"]["groups"] == 2
    report = LeakReport.objects.get(app=app)
    # "SUMMARY: AddressSanitizer: 156 byte(s) leaked in 3 allocation(s)."
    assert (report.stated_bytes, report.stated_allocations) == (156, 3)
    assert (report.listed_bytes, report.listed_allocations) == (156, 3)
    records = list(report.records.order_by("position"))
    # "Direct leak of 100 byte(s) in 1 object(s)", "Direct leak of 16 …", "Indirect leak of 40 …"
    assert [(r.kind, r.bytes, r.allocations, r.group.title) for r in records] == [
        (DIRECT, 100, 1, "lose_buffer"),
        (DIRECT, 16, 1, "lose_node"),
        (INDIRECT, 40, 1, "lose_node"),
    ]
    # "#1 0x4011b7 in lose_buffer (gcc_asan_nopie+0x4011b7)"
    assert records[0].frames[1] == {
        "symbol": "lose_buffer",
        "image": "gcc_asan_nopie",
        "address": "0x4011b7",
        "offset": "0x4011b7",
    }


@pytest.mark.django_db
def test_cxx_report_stored_with_the_tools_figures(upload, app):
    body = send(upload, "clang14-asan_cxx.txt")
    report = LeakReport.objects.get(app=app)
    # "SUMMARY: AddressSanitizer: 250 byte(s) leaked in 10 allocation(s).", 8 leak headers.
    assert (report.stated_bytes, report.stated_allocations) == (250, 10)
    assert (report.listed_bytes, report.listed_allocations, report.listed_records) == (250, 10, 8)
    assert body["counts"]["records"] == 8
    # "Direct leak of 120 byte(s) in 3 object(s)": lose_arrays()'s three `new int[10]`.
    arrays = report.records.get(bytes=120)
    assert (arrays.allocations, arrays.size, arrays.group.title) == (3, 40, "lose_arrays()")
    # The vector's buffer, allocated inside libstdc++'s templates, indirectly leaked.
    vector = report.records.get(kind=INDIRECT, bytes=20)
    assert vector.group.title == "std::__new_allocator<int>::allocate(unsigned long, void const*)"
    kinds = {
        (kind, size) for kind, size in LeakRecord.objects.values_list("kind", "bytes").distinct()
    }
    assert kinds == {
        (DIRECT, 120), (DIRECT, 24), (DIRECT, 16), (DIRECT, 8), (DIRECT, 6),
        (INDIRECT, 32), (INDIRECT, 20),
    }  # fmt: skip
