"""The leak report parsers on the tools' own output (tests/data/leaks, provenance in
tests/data/PROVENANCE.md) and on hand-written cases of the quirks the samples do not show."""

from pathlib import Path

import pytest

from memdash.core.logic.errors import InvalidUpload
from memdash.leaks.logic.parsers import detect_tool, parse_leak_log
from memdash.leaks.logic.reports import DIRECT, INDIRECT, POSSIBLE, REACHABLE

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "leaks"


def sample(name: str) -> bytes:
    return (SAMPLES / name).read_bytes()


# --- libmemunreachable ------------------------------------------------------------------------


def test_libmemunreachable_sample_keeps_the_summary_and_the_unlisted_difference():
    log = parse_leak_log(sample("libmemunreachable_chrome.txt"))
    assert log.tool == "libmemunreachable"
    (report,) = log.reports
    # The tool's summary: "1632 bytes in 10 unreachable allocations".
    assert (report.stated_bytes, report.stated_allocations) == (1632, 10)
    # Only two leaks are listed: 336 + 144 = 480 bytes in 1 + 1 = 2 allocations.
    assert (report.listed_bytes, report.listed_allocations) == (480, 2)
    # The difference the tool counted but did not list: 1632 - 480 = 1152 bytes, 10 - 2 = 8.
    assert (report.unlisted_bytes, report.unlisted_allocations) == (1152, 8)
    assert report.unreachable_bytes == 1632
    assert report.process == "com.android.chrome (pid 25905)"
    assert report.info["abi"] == "arm"


def test_libmemunreachable_first_20_bytes_is_hexadecimal():
    (report,) = parse_leak_log(sample("libmemunreachable_chrome.txt")).reports
    first, second = report.records
    assert (first.size, first.address) == (336, 0xE31C1350)
    assert (second.size, second.address) == (144, 0xE86C9430)
    # "first 20 bytes of contents:" means 0x20 = 32 bytes: two dump lines of 16.
    assert first.detail["contents_bytes"] == 32
    assert first.detail["contents"].startswith("8813e807000000009e9f1508")
    assert len(first.detail["contents"]) == 2 * 32
    assert first.frames == []  # no malloc_debug backtraces in this dump


FOLDED = b"""\
 Unreachable memory
  4096 bytes in 12 unreachable allocations
  ABI: 'arm64'

  1024 bytes unreachable at 7f12340000
   referencing 256 unreachable bytes in 2 allocations
   and 2048 similar unreachable bytes in 2 allocations
   referencing 512 unreachable bytes in 4 allocations
   first 20 bytes of contents:
   7f12340000: 01 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 ................
   7f12340010: 03 00 00 00 00 00 00 00 04 00 00 00 00 00 00 00 ................
          #00  pc 000000000001d0f8  /system/lib64/libc_malloc_debug.so (debug_malloc+128)
          #01  pc 00000000000a1b2c  /data/app/com.example.chat/lib/arm64/libchat.so (ChatCache::Put(char const*)+44)
          #02  pc 00000000000a0000  /data/app/com.example.chat/lib/arm64/libchat.so (BuildId: 1a2b3c)

  256 bytes unreachable at 7f12350000
   contents:
   7f12350000: ff ff ff ff                                     ....
"""  # noqa: E501


def test_libmemunreachable_folded_leaks_count_in_their_record():
    (report,) = parse_leak_log(FOLDED).reports
    folded, small = report.records
    # 1024 itself + 256 it references + 2048 similar + 512 the similar reference = 3840 bytes,
    # 1 + 2 + 2 + 4 = 9 allocations.
    assert (folded.bytes, folded.allocations) == (3840, 9)
    assert folded.detail["referencing_bytes"] == 256
    assert folded.detail["similar_allocations"] == 2
    assert folded.detail["similar_referencing_bytes"] == 512
    assert (small.bytes, small.allocations) == (256, 1)
    # Listed 3840 + 256 = 4096 bytes (all of them), 9 + 1 = 10 of the 12 allocations.
    assert (report.unlisted_bytes, report.unlisted_allocations) == (0, 2)


def test_libmemunreachable_malloc_debug_backtrace():
    (report,) = parse_leak_log(FOLDED).reports
    frames = report.records[0].frames
    assert [f.symbol for f in frames] == ["debug_malloc", "ChatCache::Put(char const*)", ""]
    assert frames[1].image == "/data/app/com.example.chat/lib/arm64/libchat.so"
    assert frames[1].offset == 0xA1B2C
    assert report.records[1].detail["contents_bytes"] == 256  # "contents:" = all of it


def test_libmemunreachable_listing_more_than_the_summary_is_refused():
    text = b"  100 bytes in 1 unreachable allocation\n\n  336 bytes unreachable at e31c1350\n"
    with pytest.raises(InvalidUpload) as error:
        parse_leak_log(text)
    assert error.value.path == "line 1"
    assert "336 bytes" in error.value.message


# --- LeakSanitizer ----------------------------------------------------------------------------


def test_lsan_direct_leak_sample_has_two_reports_with_their_summaries():
    log = parse_leak_log(sample("lsan_direct_leak.txt"))
    assert log.tool == "sanitizer"
    first, second = log.reports
    # SUMMARY lines: 3079 bytes in 252 allocations, and 10 bytes in 1 allocation.
    assert (first.stated_bytes, first.stated_allocations) == (3079, 252)
    assert (first.listed_bytes, first.listed_allocations) == (3079, 252)
    assert (second.stated_bytes, second.stated_allocations) == (10, 1)
    assert (second.listed_bytes, second.listed_allocations) == (10, 1)
    assert (first.process, second.process) == ("pid 3236", "pid 3294")
    assert first.records[0].kind == INDIRECT
    assert second.records[0].kind == DIRECT


def test_lsan_suppressions_go_to_their_report_or_the_log():
    log = parse_leak_log(sample("lsan_direct_leak.txt"))
    first, second = log.reports
    # Printed between pid 3236's leaks and its SUMMARY line: that report's.
    assert [(s.template, s.count, s.bytes) for s in first.suppressions] == [
        ("libfontconfig", 360, 17792)
    ]
    assert second.suppressions == []
    # Printed after both reports: a process whose leaks were all suppressed.
    assert [(s.template, s.count, s.bytes) for s in log.other_suppressions] == [
        ("libGL.so", 3, 18072)
    ]


def test_lsan_frames_in_each_printed_form():
    first, second = parse_leak_log(sample("lsan_direct_leak.txt")).reports
    malloc, strdup = first.records[0].frames
    assert (malloc.symbol, malloc.file, malloc.address) == (
        "__interceptor_malloc",
        "",
        0x7F3B595F8ACB,
    )
    assert (strdup.symbol, strdup.file, strdup.line) == (
        "__GI___strdup",
        "/build/buildd/eglibc-2.19/string/strdup.c",
        42,
    )
    frames = second.records[0].frames
    assert len(frames) == 30  # #0..#25 then #20..#23 again, as printed
    assert frames[19].symbol == (
        "v8::internal::Builtin_HandleApiCall(int, v8::internal::Object**, v8::internal::Isolate*)"
    )
    assert frames[18].line == 1115  # "(discriminator 1)" dropped
    assert (frames[20].symbol, frames[20].image) == ("", "")  # (<unknown module>)


def test_lsan_multiple_leaks_sample():
    log = parse_leak_log(sample("lsan_multiple_leaks.txt"))
    (report,) = log.reports
    # SUMMARY: 236448 byte(s) leaked in 450 allocation(s); 32 records that add up to it.
    assert len(report.records) == 32
    assert (report.stated_bytes, report.stated_allocations) == (236448, 450)
    assert (report.listed_bytes, report.listed_allocations) == (236448, 450)
    assert report.unlisted_bytes == 0
    direct = [r for r in report.records if r.kind == DIRECT]
    assert len(direct) == 18
    # The suppression table before the report is another process's.
    assert [s.template for s in log.other_suppressions] == ["libfontconfig"]
    frame = report.records[5].frames[1]  # "#1 0x7f1bb3c9cf78  (/usr/lib/…/libstdc++.so.6+0xbef78)"
    assert (frame.image, frame.offset, frame.symbol) == (
        "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
        0xBEF78,
        "",
    )
    assert report.records[0].size == 65536  # 196608 bytes in 3 objects


def test_lsan_newer_frame_forms():
    text = b"""\
==7==ERROR: LeakSanitizer: detected memory leaks

Direct leak of 7 byte(s) in 1 object(s) allocated from:
    #0 0x4c2b3d in malloc (/build/a.out+0x4c2b3d) (BuildId: 0123abcd)
    #1 0x4f1a2e in make_name /build/src/name.c:12:14
    #2 0x7f0a in main (/build/a.out+0x1f0a)

SUMMARY: LeakSanitizer: 7 byte(s) leaked in 1 allocation(s).
"""
    (report,) = parse_leak_log(text).reports
    malloc, make_name, main = report.records[0].frames
    assert (malloc.symbol, malloc.image, malloc.offset) == ("malloc", "/build/a.out", 0x4C2B3D)
    assert (make_name.symbol, make_name.file, make_name.line) == (
        "make_name",
        "/build/src/name.c",
        12,
    )
    assert (main.symbol, main.offset) == ("main", 0x1F0A)
    assert report.info["sanitizer"] == "LeakSanitizer"


def test_lsan_report_cut_short_is_refused():
    text = sample("lsan_multiple_leaks.txt").split(b"SUMMARY:")[0]
    with pytest.raises(InvalidUpload) as error:
        parse_leak_log(text)
    # The SUMMARY line is line 144 and line 143 is blank: reading stopped at line 142, in the
    # report whose ERROR line is line 13.
    assert error.value.message.startswith("LeakSanitizer report cut off at line 142: no SUMMARY")
    assert "begins at line 13" in error.value.message
    assert error.value.path == "line 142"


def test_lsan_records_adding_up_to_more_than_summary_are_refused():
    text = b"""==1==ERROR: LeakSanitizer: detected memory leaks
Direct leak of 64 byte(s) in 1 object(s) allocated from:
    #0 0x1 in malloc
SUMMARY: AddressSanitizer: 32 byte(s) leaked in 1 allocation(s).
"""
    with pytest.raises(InvalidUpload, match="more than the 32 bytes"):
        parse_leak_log(text)


# --- valgrind ---------------------------------------------------------------------------------


def test_valgrind_sample_records():
    log = parse_leak_log(sample("valgrind_memcheck_protocol4.xml"))
    assert log.tool == "valgrind"
    (report,) = log.reports
    assert len(report.records) == 8 and report.stated_records == 8  # "loss record i of 8"
    first, second = report.records[:2]
    # Leak_DefinitelyLost, 15 bytes in 1 block; Leak_StillReachable, 24 bytes in 1 block.
    assert (first.detail["valgrind_kind"], first.bytes, first.allocations) == (
        "Leak_DefinitelyLost",
        15,
        1,
    )
    assert (second.detail["valgrind_kind"], second.bytes, second.allocations) == (
        "Leak_StillReachable",
        24,
        1,
    )
    assert (first.kind, second.kind) == (DIRECT, REACHABLE)
    assert first.frames[0].symbol == "realloc"
    assert first.frames[0].file.endswith("m_replacemalloc/vg_replace_malloc.c")
    assert first.frames[3].symbol == "reserve_internal<u8,alloc::alloc::Global>"  # &lt; decoded
    assert report.info["protocol"] == 4 and report.info["version"] == "Valgrind-3.14.0"
    # Unreachable: the two definitely lost records, 15 + 185 = 200 bytes in 1 + 6 = 7 blocks.
    assert report.unreachable_bytes == 200
    assert report.unreachable_allocations == 7
    # Listed leaks: the same two records (still reachable memory is no leak).
    assert (report.listed_bytes, report.listed_allocations) == (200, 7)
    # Still reachable, apart: the other six, 24 + 24 + 1191 + 1416 + 4064 + 72704 = 79423 bytes.
    kinds = report.kind_totals()
    assert (kinds[REACHABLE]["listed_bytes"], kinds[REACHABLE]["records"]) == (79423, 6)
    assert kinds[REACHABLE]["stated_bytes"] is None  # protocol 4 states no totals
    assert report.process == "pid 17670"


PROTOCOL_6 = b"""<?xml version="1.0"?>
<valgrindoutput>
<protocolversion>6</protocolversion>
<protocoltool>memcheck</protocoltool>
<pid>42</pid>
<error>
  <unique>0x1</unique><tid>1</tid><kind>FdNotClosed</kind>
  <what>Open file descriptor 3: /tmp/x</what>
</error>
<error>
  <unique>0x2</unique><tid>1</tid><kind>Leak_IndirectlyLost</kind>
  <xwhat><text>80 bytes in 2 blocks are indirectly lost in loss record 1 of 3</text>
  <leakedbytes>80</leakedbytes><leakedblocks>2</leakedblocks></xwhat>
  <stack><frame><ip>0x10</ip><fn>malloc</fn></frame><frame><ip>0x20</ip><fn>make_node</fn></frame></stack>
</error>
<error>
  <unique>0x3</unique><tid>1</tid><kind>Leak_DefinitelyLost</kind>
  <xwhat><text>1,200 (1,120 direct, 80 indirect) bytes in 3 blocks are definitely lost in loss record 2 of 3</text>
  <leakedbytes>1200</leakedbytes><leakedblocks>3</leakedblocks></xwhat>
  <stack><frame><ip>0x10</ip><fn>malloc</fn></frame><frame><ip>0x30</ip><fn>make_list</fn></frame></stack>
</error>
<error>
  <unique>0x4</unique><tid>1</tid><kind>Leak_PossiblyLost</kind>
  <xwhat><text>16 bytes in 1 blocks are possibly lost in loss record 3 of 3</text>
  <leakedbytes>16</leakedbytes><leakedblocks>1</leakedblocks></xwhat>
</error>
<suppcounts><pair><count>4</count><name>dl-init</name></pair></suppcounts>
</valgrindoutput>
"""  # noqa: E501


def test_valgrind_protocol_6_direct_and_indirect_bytes():
    log = parse_leak_log(PROTOCOL_6)
    (report,) = log.reports
    indirect, definite, possible = report.records
    assert (indirect.kind, indirect.bytes, indirect.allocations) == (INDIRECT, 80, 2)
    # leakedbytes 1200 = 1120 direct + 80 indirect; the record adds its direct 1120 bytes, the
    # indirect 80 are the Leak_IndirectlyLost record's.
    assert (definite.kind, definite.bytes, definite.allocations) == (DIRECT, 1120, 3)
    assert definite.detail["leakedbytes"] == 1200
    assert definite.detail["indirect_bytes"] == 80
    assert possible.kind == POSSIBLE and possible.frames == []
    # 80 + 1120 + 16 = 1216 bytes, 2 + 3 + 1 = 6 blocks, counted once each.
    assert (report.listed_bytes, report.listed_allocations) == (1216, 6)
    assert report.process == "pid 42"
    assert log.info["other_errors"] == 1  # the FdNotClosed error
    assert [(s.template, s.count) for s in report.suppressions] == [("dl-init", 4)]


def test_valgrind_text_and_leakedbytes_must_agree():
    bad = PROTOCOL_6.replace(b"<leakedbytes>1200<", b"<leakedbytes>1300<")
    with pytest.raises(InvalidUpload) as error:
        parse_leak_log(bad)
    assert error.value.path == "error[2].xwhat.leakedbytes"


def test_valgrind_unsupported_protocol_is_refused():
    with pytest.raises(InvalidUpload) as error:
        parse_leak_log(PROTOCOL_6.replace(b">6<", b">3<"))
    assert error.value.path == "valgrindoutput.protocolversion"


@pytest.mark.parametrize(
    "prolog",
    [
        b'<!DOCTYPE valgrindoutput [<!ENTITY a "aaaaaaaaaa">]>',
        b'<!DOCTYPE valgrindoutput SYSTEM "file:///etc/passwd">',
    ],
)
def test_valgrind_xml_with_a_dtd_is_refused(prolog):
    raw = PROTOCOL_6.replace(b"<valgrindoutput>", prolog + b"\n<valgrindoutput>", 1)
    with pytest.raises(InvalidUpload, match="DOCTYPE"):
        parse_leak_log(raw)


def test_valgrind_undeclared_entity_is_refused_not_expanded():
    raw = PROTOCOL_6.replace(b"<pid>42</pid>", b"<pid>&lol;</pid>")
    with pytest.raises(InvalidUpload, match="not well-formed"):
        parse_leak_log(raw)


def test_valgrind_broken_xml_names_its_line():
    with pytest.raises(InvalidUpload) as error:
        parse_leak_log(PROTOCOL_6[:600])
    assert error.value.path.startswith("line ")


# --- detection --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "tool"),
    [
        ("libmemunreachable_chrome.txt", "libmemunreachable"),
        ("lsan_direct_leak.txt", "sanitizer"),
        ("lsan_multiple_leaks.txt", "sanitizer"),
        ("valgrind_memcheck_protocol4.xml", "valgrind"),
    ],
)
def test_detect_tool(name, tool):
    assert detect_tool(sample(name)) == tool


def test_other_text_is_not_a_leak_report():
    assert detect_tool(b'{"format": "memdash.snapshot"}') is None
    with pytest.raises(InvalidUpload, match="not a leak report"):
        parse_leak_log(b"hello")
