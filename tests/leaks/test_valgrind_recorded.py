"""Every valgrind file tests/corpus/record_valgrind.sh recorded (valgrind 3.19.0, Debian 12) read
with valgrind's own figures: the HEAP SUMMARY, LEAK SUMMARY and signal lines it printed for each,
kept beside them in tests/data/leaks/valgrind-3.19.recorded.txt, read here with a regular
expression of this test's own (counts with thousands separators, `64,146`, as valgrind prints
them). An XML file's figures are those of the same run without --xml (protocol 4 states none).
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from memdash.core.logic.errors import InvalidUpload
from memdash.leaks.logic.parsers import detect_tool, parse_leak_log
from memdash.leaks.logic.reports import DIRECT, INDIRECT, POSSIBLE, REACHABLE, SUPPRESSED

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "leaks"
FIGURES = SAMPLES / "valgrind-3.19.recorded.txt"
KINDS = {
    "definitely lost": DIRECT,
    "indirectly lost": INDIRECT,
    "possibly lost": POSSIBLE,
    "still reachable": REACHABLE,
    "suppressed": SUPPRESSED,
}
ROW = re.compile(r"==(\d+)==\s+(definitely lost|indirectly lost|possibly lost|still reachable|"
                 r"suppressed): ([\d,]+)(?: \(\S+\))? bytes in ([\d,]+)")  # fmt: skip
IN_USE = re.compile(r"==(\d+)==\s+in use at exit: ([\d,]+) bytes in ([\d,]+) blocks")
USAGE = re.compile(r"==(\d+)==\s+total heap usage: ([\d,]+) allocs, ([\d,]+) frees, ([\d,]+) bytes")
SIGNAL = re.compile(r"==(\d+)== Process terminating with default action of signal (\d+) \((\w+)\)")


def number(text: str) -> int:
    return int(text.replace(",", ""))


def sections() -> dict[str, list[str]]:
    """The figures file's lines, by the file they are about."""
    found: dict[str, list[str]] = {}
    name = ""
    for line in FIGURES.read_text().splitlines():
        if line.startswith("## "):
            name = line[3:]
            found[name] = []
        elif name:
            found[name].append(line)
    return found


class Figures:
    """valgrind's own figures for one recorded file, per pid."""

    def __init__(self, lines: list[str]) -> None:
        self.summaries: dict[str, list[dict[str, tuple[int, int]]]] = defaultdict(list)
        self.heap: dict[str, dict[str, int]] = {}
        self.signals: dict[str, tuple[int, str]] = {}
        self.command = next(line for line in lines if line.startswith("# command: "))
        for line in lines:
            if match := ROW.match(line):
                pid, kind = match[1], KINDS[match[2]]
                if kind == DIRECT:
                    self.summaries[pid].append({})
                self.summaries[pid][-1][kind] = (number(match[3]), number(match[4]))
            elif match := IN_USE.match(line):
                self.heap.setdefault(match[1], {}).update(
                    in_use_bytes=number(match[2]), in_use_blocks=number(match[3])
                )
            elif match := USAGE.match(line):
                self.heap.setdefault(match[1], {}).update(
                    allocs=number(match[2]), frees=number(match[3]),
                    bytes_allocated=number(match[4]),
                )  # fmt: skip
            elif match := SIGNAL.match(line):
                self.signals[match[1]] = (int(match[2]), match[3])


RECORDED = sections()
TEXT_LOGS = [name for name in RECORDED if name.endswith(".txt") and "helgrind" not in name]
TEXT_LOGS = [name for name in TEXT_LOGS if "no_leak_check.txt" not in name or "crash" in name]


def test_the_recording_holds_the_runs_issue_30_asks_for():
    assert {"valgrind-3.19_every_kind.txt", "valgrind-3.19_every_kind_verbose.txt",
            "valgrind-3.19_every_kind_protocol4.xml", "valgrind-3.19_crash.txt",
            "valgrind-3.19_crash_protocol4.xml", "valgrind-3.19_trace_children.txt",
            } <= set(RECORDED)  # fmt: skip
    assert "# tool: valgrind-3.19.0" in FIGURES.read_text()
    for name in RECORDED:
        assert (SAMPLES / name).exists(), name


@pytest.mark.parametrize("name", TEXT_LOGS)
def test_each_text_log_reads_with_valgrinds_own_figures(name):
    figures = Figures(RECORDED[name])
    raw = (SAMPLES / name).read_bytes()
    assert detect_tool(raw) == "valgrind-log"
    reports = parse_leak_log(raw).reports
    for pid, summaries in figures.summaries.items():
        mine = [r for r in reports if r.process == f"pid {pid}"]
        assert [r.stated_kinds for r in mine] == summaries, (name, pid)
        lost = [sum(s[kind][0] for kind in (DIRECT, INDIRECT, POSSIBLE)) for s in summaries]
        assert [r.stated_bytes for r in mine] == lost
    for pid, heap in figures.heap.items():
        (first, *_) = [r for r in reports if r.process == f"pid {pid}"]
        assert first.info["heap_summary"] == heap, (name, pid)
    for pid, (signal, signame) in figures.signals.items():
        for report in [r for r in reports if r.process == f"pid {pid}"]:
            assert (report.info["fatal_signal"]["number"], report.info["fatal_signal"]["name"]) == (
                signal,
                signame,
            )
    if not figures.signals:
        assert all("fatal_signal" not in r.info for r in reports)


def test_counts_in_thousands_as_valgrind_prints_them():
    """every_kind.c: "definitely lost: 64,146 bytes in 1,001 blocks", "104,000 (64,000 direct,
    40,000 indirect) bytes in 1,000 blocks are definitely lost in loss record 4 of 5"."""
    (report,) = parse_leak_log((SAMPLES / "valgrind-3.19_every_kind.txt").read_bytes()).reports
    assert report.stated_kinds[DIRECT] == (64_146, 1_001)
    fourth = report.records[3]
    assert (fourth.bytes, fourth.allocations, fourth.detail["indirect_bytes"]) == (
        64_000,
        1_000,
        40_000,
    )
    assert report.info["heap_summary"]["bytes_allocated"] == 432_146


@pytest.mark.parametrize(
    "name", ["valgrind-3.19_protocol4.xml", "valgrind-3.19_every_kind_protocol4.xml"]
)
def test_an_xml_run_of_every_kind_lists_what_the_text_run_summed(name):
    """With --show-leak-kinds=all every kind is listed, so the XML's records (their `<text>`
    with thousands separators) add up, kind by kind, to the LEAK SUMMARY of the same run."""
    figures = Figures(RECORDED[name])
    ((summary,),) = figures.summaries.values()
    (report,) = parse_leak_log((SAMPLES / name).read_bytes()).reports
    assert report.info["protocol"] == 4 and report.stated_bytes is None
    listed = {
        kind: (totals["listed_bytes"], totals["listed_allocations"])
        for kind, totals in report.kind_totals().items()
    }
    assert listed == {kind: figure for kind, figure in summary.items() if figure != (0, 0)}


def test_an_xml_run_that_died_of_sigsegv():
    """crash.c under --leak-check=full --xml=yes: its <fatal_signal> (signal 11, SIGSEGV, in
    write_through), then the leak check valgrind runs as the process dies: "60,000 bytes in
    1,200 blocks are definitely lost"; the 32,000 still-reachable bytes are not listed."""
    figures = Figures(RECORDED["valgrind-3.19_crash_protocol4.xml"])
    ((summary,),) = figures.summaries.values()
    (report,) = parse_leak_log((SAMPLES / "valgrind-3.19_crash_protocol4.xml").read_bytes()).reports
    signal = report.info["fatal_signal"]
    assert (signal["number"], signal["name"]) == (11, "SIGSEGV")
    assert signal["event"] == "Access not within mapped region at address 0x0"
    assert signal["frames"][0].startswith("write_through ")
    assert (report.listed_bytes, report.listed_allocations) == summary[DIRECT]
    assert "leak_check" not in report.info


def test_an_xml_run_that_died_with_only_reachable_blocks_is_not_0_leaks():
    """`crash kept`: only still-reachable blocks (32,000 bytes in 2,000), which the default
    --show-leak-kinds does not list; protocol 4 states no totals: nothing listed, not 0."""
    raw = (SAMPLES / "valgrind-3.19_crash_kept_protocol4.xml").read_bytes()
    (report,) = parse_leak_log(raw).reports
    assert report.info["fatal_signal"]["name"] == "SIGSEGV"
    assert report.info["leak_check"] == "nothing listed"
    assert report.stated_bytes is None and report.records == []


def test_a_text_run_that_died_without_a_leak_check_is_a_report_that_says_so():
    """crash.c under --leak-check=no: "Process terminating with default action of signal 11
    (SIGSEGV)", a HEAP SUMMARY (92,000 bytes in 3,200 blocks) and no LEAK SUMMARY."""
    raw = (SAMPLES / "valgrind-3.19_crash_no_leak_check.txt").read_bytes()
    (report,) = parse_leak_log(raw).reports
    assert report.info["leak_check"] == "none"
    assert report.info["fatal_signal"]["frames"] == ["write_through crash.c:27", "main crash.c:34"]
    assert report.stated_bytes is None and report.records == []
    assert report.info["heap_summary"]["in_use_bytes"] == 92_000


def test_a_run_that_exited_without_a_leak_check_is_still_refused():
    """four_kinds.c under --leak-check=no, exiting normally: nothing to keep but a hint."""
    with pytest.raises(InvalidUpload, match="--leak-check=no"):
        parse_leak_log((SAMPLES / "valgrind-3.19_no_leak_check.txt").read_bytes())
