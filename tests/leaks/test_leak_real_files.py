"""The leak parsers on files valgrind 3.19 and GCC 12's AddressSanitizer/LeakSanitizer wrote for
tests/data/leaks/src/four_kinds.c (commands in tests/data/PROVENANCE.md), against the figures
the tools printed: each expected number below is copied from the file's own LEAK SUMMARY, HEAP
SUMMARY, loss record or SUMMARY line, quoted beside it."""

from pathlib import Path

import pytest

from memdash.leaks.logic.fingerprint import fingerprint
from memdash.leaks.logic.parsers import detect_tool, parse_leak_log
from memdash.leaks.logic.reports import DIRECT, INDIRECT, POSSIBLE, REACHABLE, SUPPRESSED

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "leaks"


def sample(name: str) -> bytes:
    return (SAMPLES / name).read_bytes()


# LEAK SUMMARY of every leak-checked run of four_kinds (the same in each file):
#    definitely lost: 116 bytes in 2 blocks
#    indirectly lost: 40 bytes in 1 blocks
#      possibly lost: 64 bytes in 1 blocks
#    still reachable: 32 bytes in 1 blocks
#         suppressed: 0 bytes in 0 blocks
LEAK_SUMMARY = {
    DIRECT: (116, 2),
    INDIRECT: (40, 1),
    POSSIBLE: (64, 1),
    REACHABLE: (32, 1),
    SUPPRESSED: (0, 0),
}
# HEAP SUMMARY: "in use at exit: 252 bytes in 5 blocks",
# "total heap usage: 5 allocs, 0 frees, 252 bytes allocated".
HEAP_SUMMARY = {
    "in_use_bytes": 252,
    "in_use_blocks": 5,
    "allocs": 5,
    "frees": 0,
    "bytes_allocated": 252,
}
TEXT_LOGS = {
    # file: (pid, loss records listed, "ERROR SUMMARY: N errors")
    "valgrind-3.19_summary.txt": ("16002", 0, 0),
    "valgrind-3.19_full.txt": ("16019", 3, 3),
    "valgrind-3.19_full_all.txt": ("16020", 5, 3),
    "valgrind-3.19_full_all_verbose.txt": ("16021", 5, 3),
}


@pytest.mark.parametrize(("name", "expected"), TEXT_LOGS.items())
def test_valgrind_text_log_keeps_the_leak_summary_apart_by_kind(name, expected):
    pid, listed, errors = expected
    assert detect_tool(sample(name)) == "valgrind-log"
    log = parse_leak_log(sample(name))
    (report,) = log.reports
    assert report.process == f"pid {pid}"
    assert report.stated_kinds == LEAK_SUMMARY
    # Leaked = the lost kinds of the LEAK SUMMARY: 116 + 40 + 64 = 220 bytes, 2 + 1 + 1 = 4
    # blocks; the 32 still-reachable bytes are not in it.
    assert (report.stated_bytes, report.stated_allocations) == (220, 4)
    assert report.unreachable_bytes == 220
    assert report.listed_records == listed
    assert report.info["heap_summary"] == HEAP_SUMMARY
    assert report.info["command"] == "./four_kinds"  # "Command: ./four_kinds"
    assert report.info["errors"] == errors


def test_valgrind_text_log_records_with_kinds_and_stacks():
    (report,) = parse_leak_log(sample("valgrind-3.19_full_all.txt")).reports
    # "... in loss record i of 5", in the tool's order: still reachable 32, indirectly lost 40,
    # definitely lost "56 (16 direct, 40 indirect)", possibly lost 64, definitely lost 100.
    assert report.stated_records == 5
    assert [(r.kind, r.bytes, r.allocations) for r in report.records] == [
        (REACHABLE, 32, 1),
        (INDIRECT, 40, 1),
        (DIRECT, 16, 1),
        (POSSIBLE, 64, 1),
        (DIRECT, 100, 1),
    ]
    assert report.records[2].detail["leakedbytes"] == 56
    # Listed leaks: 40 + 16 + 64 + 100 = 220 bytes in 4 blocks, all the summary counts.
    assert (report.listed_bytes, report.listed_allocations) == (220, 4)
    assert (report.unlisted_bytes, report.unlisted_allocations) == (0, 0)
    malloc, lose_node, main = report.records[2].frames
    # "at 0x48417B4: malloc (in /usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so)"
    assert (malloc.symbol, malloc.address, malloc.image) == (
        "malloc",
        0x48417B4,
        "/usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so",
    )
    # "by 0x1091A1: lose_node (four_kinds.c:29)"
    assert (lose_node.symbol, lose_node.file, lose_node.line) == ("lose_node", "four_kinds.c", 29)
    assert main.symbol == "main"


def test_valgrind_default_kinds_leave_the_indirect_bytes_unlisted():
    (report,) = parse_leak_log(sample("valgrind-3.19_full.txt")).reports
    # Shown: "56 (16 direct, 40 indirect) … definitely lost", "64 … possibly lost",
    # "100 … definitely lost": 16 + 64 + 100 = 180 bytes listed of the 220 stated; the 40
    # indirectly lost bytes are counted by the summary but have no record of their own.
    assert report.listed_bytes == 180
    assert (report.unlisted_bytes, report.unlisted_allocations) == (40, 1)
    kinds = report.kind_totals()
    assert (kinds[INDIRECT]["stated_bytes"], kinds[INDIRECT]["listed_bytes"]) == (40, 0)


def test_valgrind_summary_only_run_has_the_totals_and_no_records():
    (report,) = parse_leak_log(sample("valgrind-3.19_summary.txt")).reports
    assert report.records == []
    assert report.unlisted_bytes == 220
    assert report.info["records"] == "not printed (--leak-check=summary)"


def test_valgrind_verbose_log_keeps_version_and_options():
    (report,) = parse_leak_log(sample("valgrind-3.19_full_all_verbose.txt")).reports
    # "Using Valgrind-3.19.0-8d3c8034b8-20220411 and LibVEX", "Valgrind options:" -v,
    # --leak-check=full, --show-leak-kinds=all.
    assert report.info["version"] == "Valgrind-3.19.0-8d3c8034b8-20220411"
    assert report.info["options"] == "-v --leak-check=full --show-leak-kinds=all"


def test_valgrind_clean_run_keeps_its_pid():
    (text,) = parse_leak_log(sample("valgrind-3.19_clean.txt")).reports
    # "All heap blocks were freed -- no leaks are possible"
    assert text.process == "pid 16023"
    assert (text.stated_bytes, text.records) == (0, [])
    (xml,) = parse_leak_log(sample("valgrind-3.19_clean_protocol4.xml")).reports
    assert xml.process == "pid 16030"  # <pid>16030</pid>
    assert xml.info["command"] == "./four_kinds clean"
    assert xml.info["version"] == "Valgrind-3.19.0"


def test_valgrind_xml_protocol_4_of_the_same_program():
    (report,) = parse_leak_log(sample("valgrind-3.19_protocol4.xml")).reports
    assert report.info["protocol"] == 4  # <protocolversion>4</protocolversion>
    assert report.process == "pid 16022"
    assert report.stated_bytes is None  # protocol 4 prints no LEAK SUMMARY
    # The five <text>s: 32 still reachable, 40 indirectly, 56 (16 direct) definitely, 64
    # possibly, 100 definitely lost: leaks 40 + 16 + 64 + 100 = 220 bytes in 4 blocks.
    assert (report.listed_bytes, report.listed_allocations) == (220, 4)
    assert report.unreachable_bytes == 220
    assert report.kind_totals()[REACHABLE]["listed_bytes"] == 32
    assert "--show-leak-kinds=all" in report.info["options"]


def test_one_leak_is_one_fingerprint_whichever_tool_found_it():
    """The 100-byte buffer lose_buffer() drops, as valgrind (text and XML) and GCC's and
    Clang's ASan and LSan print it: one fingerprint (allocator, runtime and libc start frames
    skipped). Every sanitizer variant: tests/leaks/test_sanitizer_corpus.py."""

    def buffer_leak(name: str):
        (report,) = parse_leak_log(sample(name)).reports
        (record,) = [r for r in report.records if r.bytes == 100]
        return fingerprint(record)

    names = [
        "valgrind-3.19_full_all.txt",
        "valgrind-3.19_protocol4.xml",
        "sanitizers/gcc12-asan.txt",
        "sanitizers/gcc12-lsan.txt",
        "sanitizers/clang14-asan.txt",
        "sanitizers/clang14-lsan.txt",
    ]
    prints = {buffer_leak(name) for name in names}
    assert len(prints) == 1
    (only,) = prints
    assert only.frames == ("lose_buffer", "main")
