"""What no real file here shows, written by hand after the tools' documentation and source:
valgrind's XML protocol 6 (`<leak_summary>`, docs/internals/xml-output-protocol6.txt; valgrind
3.19 here writes protocol 4), the frame forms of other sanitizer builds (Darwin, HWASan on
Android, symbolizers without a file), and the refusals, most on real files of the tools."""

from pathlib import Path

import pytest

from memdash.core.logic.errors import InvalidUpload
from memdash.leaks.logic.fingerprint import is_allocator_frame
from memdash.leaks.logic.parsers import detect_tool, parse_leak_log
from memdash.leaks.logic.parsers.sanitizer import sanitizer_frame
from memdash.leaks.logic.reports import (
    DIRECT,
    INDIRECT,
    POSSIBLE,
    REACHABLE,
    SUPPRESSED,
    StackFrame,
)

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "leaks"


def sample(name: str) -> bytes:
    return (SAMPLES / name).read_bytes()


def refusal(raw: bytes) -> InvalidUpload:
    with pytest.raises(InvalidUpload) as error:
        parse_leak_log(raw)
    return error.value


# --- valgrind XML protocol 6 ------------------------------------------------------------------

RECORD = """<error>
  <unique>0x{unique:x}</unique><tid>1</tid><kind>{kind}</kind>
  <xwhat><text>{text}</text><leakedbytes>{size}</leakedbytes><leakedblocks>{blocks}</leakedblocks></xwhat>
  <stack><frame><ip>0x48417B4</ip><fn>malloc</fn></frame><frame><ip>0x1091A1</ip><fn>{fn}</fn></frame></stack>
</error>
"""  # noqa: E501
SUMMARY = """<leak_summary>
  <definitely_lost><bytes>{d}</bytes><in_blocks>2</in_blocks></definitely_lost>
  <indirectly_lost><bytes>40</bytes><in_blocks>1</in_blocks></indirectly_lost>
  <possibly_lost><bytes>64</bytes><in_blocks>1</in_blocks></possibly_lost>
  <still_reachable><bytes>32</bytes><in_blocks>1</in_blocks></still_reachable>
  <suppressed><bytes>8</bytes><in_blocks>1</in_blocks></suppressed>
</leak_summary>
"""


def protocol_6(definitely_lost: int = 116) -> bytes:
    """four_kinds.c's run as protocol 6 prints it (the records as valgrind 3.19 wrote them in
    valgrind-3.19_protocol4.xml, with the summaries protocol 6 adds), default leak kinds."""
    records = [
        ("Leak_DefinitelyLost", "56 (16 direct, 40 indirect) bytes in 1 blocks are definitely "
         "lost in loss record 3 of 5", 56, 1, "lose_node"),
        ("Leak_PossiblyLost", "64 bytes in 1 blocks are possibly lost in loss record 4 of 5",
         64, 1, "point_inside"),
        ("Leak_DefinitelyLost", "100 bytes in 1 blocks are definitely lost in loss record 5 of "
         "5", 100, 1, "lose_buffer"),
    ]  # fmt: skip
    errors = "".join(
        RECORD.format(unique=i, kind=k, text=t, size=s, blocks=b, fn=f)
        for i, (k, t, s, b, f) in enumerate(records)
    )
    return f"""<?xml version="1.0"?>
<valgrindoutput>
<protocolversion>6</protocolversion>
<protocoltool>memcheck</protocoltool>
<preamble><line>Using Valgrind-3.26.0 and LibVEX; rerun with -h for copyright info</line></preamble>
<pid>4711</pid>
<args><vargv><exe>/usr/bin/valgrind</exe><arg>--xml=yes</arg></vargv>
<argv><exe>./four_kinds</exe></argv></args>
<heap_summary>
  <memory_in_use_at_exit><bytes>252</bytes><blocks>5</blocks></memory_in_use_at_exit>
  <total_heap_usage><allocs>5</allocs><frees>0</frees><bytes_allocated>252</bytes_allocated></total_heap_usage>
</heap_summary>
{errors}{SUMMARY.format(d=definitely_lost)}
<error_summary><errors>3</errors><error_contexts>3</error_contexts><suppressed>1</suppressed><suppressed_contexts>1</suppressed_contexts></error_summary>
</valgrindoutput>
""".encode()  # noqa: E501


def test_protocol_6_leak_summary_is_the_stated_total():
    log = parse_leak_log(protocol_6())
    (report,) = log.reports
    assert report.info["protocol"] == 6 and report.info["version"] == "Valgrind-3.26.0"
    assert report.stated_kinds == {
        DIRECT: (116, 2),
        INDIRECT: (40, 1),
        POSSIBLE: (64, 1),
        REACHABLE: (32, 1),
        SUPPRESSED: (8, 1),
    }
    # Lost: 116 + 40 + 64 = 220 bytes in 2 + 1 + 1 = 4 blocks; reachable and suppressed apart.
    assert (report.stated_bytes, report.stated_allocations) == (220, 4)
    # Listed: 16 direct + 64 + 100 = 180 bytes; the 40 indirect bytes have no record here.
    assert (report.listed_bytes, report.unlisted_bytes) == (180, 40)
    assert report.info["heap_summary"]["in_use_bytes"] == 252
    assert report.info["errors"] == 3
    assert report.info["command"] == "./four_kinds" and report.process == "pid 4711"


def test_protocol_6_summary_below_its_records_is_refused():
    # definitely_lost 100 bytes, but the records list 16 + 100 = 116 definitely lost bytes.
    error = refusal(protocol_6(definitely_lost=100))
    assert error.path == "leak_summary[0]"
    assert "more than the 100 bytes" in error.message


def test_protocol_6_clean_run():
    raw = b"""<?xml version="1.0"?>
<valgrindoutput><protocolversion>6</protocolversion><protocoltool>memcheck</protocoltool>
<pid>12</pid><all_heap_blocks_freed>true</all_heap_blocks_freed></valgrindoutput>"""
    (report,) = parse_leak_log(raw).reports
    assert (report.process, report.stated_bytes, report.records) == ("pid 12", 0, [])


# --- sanitizer frames -------------------------------------------------------------------------

FRAMES = b"""\
==9==ERROR: LeakSanitizer: detected memory leaks

Direct leak of 24 byte(s) in 1 object(s) allocated from:
    #0 0x7b3c2a4e8c  (/system/lib64/libclang_rt.hwasan-aarch64-android.so+0x20c8c) (BuildId: 5B9C0A11)
    #1 0x5d2a in make_cache (/data/local/tmp/chat+0x1d2a) (BuildId: 0123abcd)
    #2 0x10d8c0e9d in wrap_malloc+0x9d (libclang_rt.asan_osx_dynamic.dylib:x86_64h+0x48e9d)
    #3 0x4f11ca in lose_buffer ???:0
    #4 0x4f1361 in main four_kinds.c:50:5
    #5 0x7f0b1b50214e in \n
SUMMARY: HWAddressSanitizer: 24 byte(s) leaked in 1 allocation(s).
"""  # noqa: E501


def test_sanitizer_frame_forms():
    (report,) = parse_leak_log(FRAMES).reports
    hwasan, own, darwin, no_file, main, empty = report.records[0].frames
    assert (hwasan.symbol, hwasan.offset, hwasan.build_id) == ("", 0x20C8C, "5b9c0a11")
    assert (own.symbol, own.image, own.offset, own.build_id) == (
        "make_cache",
        "/data/local/tmp/chat",
        0x1D2A,
        "0123abcd",
    )
    assert (darwin.image, darwin.offset) == ("libclang_rt.asan_osx_dynamic.dylib", 0x48E9D)
    assert (no_file.symbol, no_file.file, no_file.line) == ("lose_buffer", "", None)
    assert (main.file, main.line) == ("four_kinds.c", 50)
    assert (empty.symbol, empty.address) == ("", 0x7F0B1B50214E)
    # The checker is LeakSanitizer; it ran under HWASan (the SUMMARY line's name).
    assert report.info["sanitizer"] == "LeakSanitizer"
    assert report.info["runtime"] == "HWAddressSanitizer"
    assert [is_allocator_frame(f) for f in (hwasan, own, darwin, no_file)] == [
        True,
        False,
        True,
        False,
    ]


def test_old_asan_runtime_suffix():
    """Old ASan (2012, before LeakSanitizer) printed its runtime where the file goes; a frame
    quoted from google/sanitizers issue 46: `#0 0x407fcd in memcmp _asan_rtl_`."""
    frame = sanitizer_frame(0x407FCD, "in memcmp _asan_rtl_")
    assert (frame.symbol, frame.image, frame.file) == ("memcmp", "_asan_rtl_", "")
    assert is_allocator_frame(frame)


@pytest.mark.parametrize(
    "frame",
    [
        StackFrame(
            symbol="__interceptor_malloc", file="../libsanitizer/asan/asan_malloc_linux.cpp"
        ),
        StackFrame(symbol="___interceptor_calloc"),
        StackFrame(symbol="operator new[](unsigned long)"),
        StackFrame(image="/lib/x86_64-linux-gnu/libasan.so.8", offset=0xB89CF),
        StackFrame(image="/usr/lib/x86_64-linux-gnu/liblsan.so.0", offset=0x15545),
        StackFrame(symbol="__lsan::Allocate", file="compiler-rt/lib/lsan/lsan_allocator.cpp"),
        StackFrame(symbol="realloc", file="/src/llvm/compiler-rt/lib/hwasan/hwasan_allocator.cpp"),
        StackFrame(symbol="(below main)"),
    ],
)
def test_runtime_frames_are_skipped_by_what_they_are(frame):
    assert is_allocator_frame(frame)


# --- refusals ---------------------------------------------------------------------------------


def test_another_sanitizer_error_is_named():
    # GCC 12's ASan on use_after_free.c: "==…==ERROR: AddressSanitizer: heap-use-after-free"
    # on line 2, and no leak check after it.
    error = refusal(sample("sanitizers/gcc12-asan_use_after_free.txt"))
    assert error.path == "line 2"
    assert error.message.startswith("an AddressSanitizer heap-use-after-free report, not a leak")


def test_valgrind_without_a_leak_check_says_what_to_do():
    # `valgrind --leak-check=no`: 14 lines, a HEAP SUMMARY and no LEAK SUMMARY.
    raw = sample("valgrind-3.19_no_leak_check.txt")
    assert detect_tool(raw) == "valgrind-log"
    error = refusal(raw)
    assert error.path == "line 14"
    assert "valgrind memcheck log without leak records" in error.message
    assert "--leak-check=full" in error.message


def test_valgrind_of_another_tool_is_named():
    error = refusal(sample("valgrind-3.19_helgrind.txt"))
    assert error.path == "line 1"  # "==593== Helgrind, a thread error detector"
    assert error.message.startswith("a valgrind Helgrind log, not memcheck")
    # massif's stderr (its preamble, as valgrind 3.19 prints it) instead of its massif.out file
    massif = b"""==7== Massif, a heap profiler
==7== Copyright (C) 2003-2017, and GNU GPL'd, by Nicholas Nethercote
==7== Using Valgrind-3.19.0 and LibVEX; rerun with -h for copyright info
"""
    error = refusal(massif)
    assert error.path == "line 1" and "upload that file" in error.message


def test_valgrind_log_cut_off_inside_its_records():
    lines = sample("valgrind-3.19_full_all.txt").splitlines(keepends=True)
    # Lines 1-24 of the log: up to the third loss record's frames (records begin at line 11).
    error = refusal(b"".join(lines[:24]))
    assert error.path == "line 24"
    assert error.message.startswith("valgrind log cut off at line 24")
    assert "from line 11 on have no LEAK SUMMARY" in error.message


def test_libmemunreachable_that_could_not_read_the_process():
    raw = b""" Unreachable memory
  Failed to get unreachable memory
  If you are trying to get unreachable memory from a system app
  (like com.android.systemui), disable selinux first using
  setenforce 0
"""
    error = refusal(raw)
    assert error.path == "line 2"
    assert "setenforce 0" in error.message


def test_libmemunreachable_heading_without_summary():
    error = refusal(b" Unreachable memory\n  ABI: 'arm64'\n")
    assert error.path == "line 2"
    assert error.message.startswith("libmemunreachable output cut off at line 2")
