"""Xcode's `leaks` reports read as plain data (no database): the real reports' own figures, the
hand-written one's (worked out by hand from its lines), and every malformed input refused at its
line."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdash.core.logic.errors import InvalidUpload
from memdash.leaks.logic.parsers import xcode_leaks
from memdash.leaks.logic.parsers.xcode_tree import size_in_bytes

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "xcode-leaks"
CHAT_UUID = "9F0E2A4F-1B2C-4D3E-8F4A-5B6C7D8E9F01"


def sample(name: str) -> bytes:
    return (SAMPLES / name).read_bytes()


def refused(text: str) -> InvalidUpload:
    with pytest.raises(InvalidUpload) as caught:
        xcode_leaks.parse(text.encode())
    return caught.value


def test_the_tree_form_with_a_cycle_and_its_totals():
    parsed = xcode_leaks.parse(sample("memoryleakscheck_cycle.txt"))
    (report,) = parsed.log.reports
    # `Process 5756: 5 leaks for 208 total leaked bytes.`
    assert (report.stated_bytes, report.stated_allocations) == (208, 5)
    assert report.process == "pid 5756"
    assert report.info["malloced_nodes"] == 20176 and report.info["malloced_kb"] == 4467
    cycle, *leaks = report.records
    # the ROOT CYCLE: Apartment [32] and Person [32]: 2 blocks, 64 bytes
    assert (cycle.bytes, cycle.allocations, cycle.size, cycle.cycle) == (64, 2, 32, True)
    assert cycle.detail["title"] == "ROOT CYCLE: Apartment"
    assert [(r.bytes, r.allocations, r.cycle) for r in leaks] == [(48, 1, False)] * 3
    assert {r.detail["title"] for r in leaks} == {"ROOT LEAK: HomeViewModel"}
    # 64 + 3 × 48 = 208 in 5: every block listed
    assert (report.listed_bytes, report.listed_allocations) == (208, 5)
    # the loop: `person --> Person`, then `apartment --> CYCLE BACK TO <Apartment>`
    assert parsed.cycles == [(("Apartment", ("apartment",), ""), ("Person", ("person",), ""))]


def test_the_header_footprint_and_a_report_without_leaks():
    (report,) = xcode_leaks.parse(sample("bytebuddy_no_leaks.txt")).log.reports
    assert report.process == "ByteBuddyExample (pid 53732)"
    assert (report.stated_bytes, report.stated_allocations, report.records) == (0, 0, [])
    info = report.info
    # `Physical footprint: 27.5M`, `(peak): 27.6M`; leaks' M is 1024 × 1024 bytes
    assert (info["footprint"], info["peak_footprint"]) == ("27.5M", "27.6M")
    assert info["footprint_bytes"] == round(27.5 * 1024 * 1024) == 28835840
    assert info["peak_footprint_bytes"] == round(27.6 * 1024 * 1024)
    assert info["platform"] == "iOS Simulator" and info["code_type"] == "ARM64"
    assert "version" not in info  # `Version: ???` says nothing
    assert info["malloced_nodes"] == 31594


def test_two_reports_run_together_are_refused_at_the_tree_that_lists_too_much():
    error = refused(sample("bytebuddy_spliced.txt").decode())
    # the cycle says `2 (64 bytes)`; the NSURL tree of another report lands under it
    assert error.path == "line 27"
    assert "more than its count (2)" in error.message


def test_stacks_cycles_with_ownership_and_binary_images():
    parsed = xcode_leaks.parse(sample("handwritten_stacks_and_cycles.txt"))
    (report,) = parsed.log.reports
    assert (report.stated_bytes, report.stated_allocations) == (464, 7)
    assert report.info["version"] == "8.0.4 (104)"
    assert report.info["identifier"] == "com.example.chat"
    assert report.info["report_version"] == "4.0, multi-line stacks"
    cycle, first, second, malloc = report.records
    # 192 + 64 + 64 + 32 bytes in 4 blocks
    assert (cycle.bytes, cycle.allocations, cycle.cycle) == (352, 4, True)
    assert cycle.detail["thread"] == "0x1f6a2c140"
    # innermost first: the allocator, then the app's unnamed frames with its image's UUID
    assert [f.symbol for f in cycle.frames[:4]] == [
        "_malloc_zone_calloc_instrumented_or_legacy", "_malloc_zone_calloc",
        "class_createInstance", "_objc_rootAllocWithZone",
    ]  # fmt: skip
    unnamed = cycle.frames[4]
    assert (unnamed.image, unnamed.offset, unnamed.build_id) == ("Chat", 2760496, CHAT_UUID)
    assert cycle.frames[-1].symbol == "start" and cycle.frames[-1].image == "dyld"
    # two instances under one stack: two records, the block's count kept
    assert [r.detail["stack_instances"] for r in (first, second)] == [2, 2]
    assert [(r.bytes, r.allocations) for r in (first, second)] == [(48, 1), (48, 1)]
    assert first.frames == second.frames
    # a named Swift frame: symbol without its offset, file and line
    decode = next(f for f in malloc.frames if f.symbol == "ChatImageCache.decode(_:)")
    assert (decode.file, decode.line, decode.offset) == ("ChatImageCache.swift", 97, None)
    assert malloc.detail["title"] == "ROOT LEAK: malloc in ChatImageCache.decode(_:)"
    # the two loops of the ROOT CYCLE, each reference with its ownership
    assert parsed.cycles == [
        (("ChatViewController", ("_delegate",), "weak"),
         ("ChatDataSource", ("_dataSource",), "strong")),
        (("ChatViewController", ("self",), "strong"),
         ("ChatDataSource", ("_dataSource",), "strong"),
         ("__NSMallocBlock__", ("_onUpdate",), "strong")),
    ]  # fmt: skip
    tree = cycle.detail["tree"]
    title_view = next(row for row in tree if row["class"] == "UILabel")
    assert title_view["edge"] == "__unsafe_unretained _titleView + 16"
    assert title_view["ownership"] == "unsafe_unretained"


def test_a_tree_without_a_stack_is_described_by_its_shape():
    parsed = xcode_leaks.parse(sample("memoryleakscheck_cycle.txt"))
    cycle, leak, *_ = parsed.log.reports[0].records
    assert cycle.detail["shape"] == [
        "ROOT CYCLE:Apartment",
        "person>Person",
        "loop:Apartment > Person",
    ]
    assert leak.detail["shape"] == ["ROOT LEAK:HomeViewModel"]


def test_two_processes_in_one_file_are_two_reports():
    both = sample("memoryleakscheck_cycle.txt") + b"\n" + sample("bytebuddy_no_leaks.txt")
    first, second = xcode_leaks.parse(both).log.reports
    assert (first.stated_bytes, second.stated_bytes) == (208, 0)
    assert second.info["process_name"] == "ByteBuddyExample"


def test_sizes_as_leaks_prints_them():
    assert size_in_bytes("64 bytes") == 64
    assert size_in_bytes("1.53K") == 1567  # 1.53 × 1024 = 1566.72
    assert size_in_bytes("153K") == 156672
    assert size_in_bytes("1344K") == 1376256
    assert size_in_bytes("4.0G") == 4 * 1024**3
    assert size_in_bytes("a lot") is None


HEAD = "leaks Report Version: 4.0\nProcess 1: 2 leaks for 64 total leaked bytes.\n\n"


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (HEAD + "    2 (64 bytes) ROOT CYCLE: <A 0x10> [32]\n"
         "       1 (32 bytes) b --> ROOT CYCLE: <B 0x20> [32]\n"
         "          a --> CYCLE BACK TO <A 0x99> [32]\n", 6, "no block above it"),
        (HEAD + "    1 (32 bytes) <A 0x10> [32]\n", 4, "no ROOT LEAK or ROOT CYCLE"),
        (HEAD + "    1 (32 bytes) ROOT LEAK: <A 0x10 [32]\n", 4, "expected a block"),
        (HEAD + "    hello\n", 4, "not a line of leaks' report"),
        (HEAD + "STACK OF 1 INSTANCE OF 'ROOT LEAK: <A>':\n3   app  0x10\n", 5, "stack frame"),
        (HEAD + "STACK OF 1 INSTANCE OF 'ROOT LEAK: <A>':\n0   app  0x10 main + 1\n", 4,
         "never ends"),
        (HEAD + "STACK OF 1 INSTANCE OF 'ROOT LEAK: <A>':\n0   app  0x10 main + 1\n====\n"
         "    1 (32 bytes) ROOT LEAK: <A 0x10> [32]\n    1 (32 bytes) ROOT LEAK: <A 0x20> [32]\n",
         4, "follow a stack of 1 instance"),
        ("leaks Report Version: 4.0\nProcess 1: 9 nodes malloced for 1 KB\n", 1, "cut off"),
        ("leaks Report Version: 4.0\nsomething else\n", 2, "expected leaks' summary"),
        ("Process 1: 1 leak for 16 total leaked bytes.\n    1 (32 bytes) ROOT LEAK: <A 0x1> [32]\n",
         1, "more than the 16 bytes"),
        ("Leak: 0x600000c0c0a0  size=16  zone: DefaultMallocZone_0x1\n"
         "Analysis Tool:   /usr/bin/leaks\n", 1, "list form"),
        (HEAD + "Binary Images:\n   nonsense\n", 5, "binary image"),
    ],
)  # fmt: skip
def test_malformed_reports_are_refused_at_their_line(text: str, line: int, words: str):
    error = refused(text)
    assert error.path == f"line {line}"
    assert words in error.message


def test_detection_by_the_reports_own_lines():
    assert xcode_leaks.looks_like(sample("memoryleakscheck_cycle.txt"))
    assert xcode_leaks.looks_like(b"Process 1: 0 leaks for 0 total leaked bytes.\n")
    assert not xcode_leaks.looks_like(b"==1==ERROR: LeakSanitizer: detected memory leaks\n")
