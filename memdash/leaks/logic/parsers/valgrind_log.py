"""valgrind memcheck's text log (its stderr or `--log-file`), by default or with `-v`.

```
==14268== Memcheck, a memory error detector
==14268== Using Valgrind-3.19.0 and LibVEX; rerun with -h for copyright info
==14268== Command: ./four_kinds
==14268== HEAP SUMMARY:
==14268==     in use at exit: 252 bytes in 5 blocks
==14268==   total heap usage: 5 allocs, 0 frees, 252 bytes allocated
==14268==
==14268== 56 (16 direct, 40 indirect) bytes in 1 blocks are definitely lost in loss record 3 of 5
==14268==    at 0x48417B4: malloc (in /usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so)
==14268==    by 0x109191: lose_node (four_kinds.c:27)
==14268==
==14268== LEAK SUMMARY:
==14268==    definitely lost: 116 bytes in 2 blocks
==14268==    indirectly lost: 40 bytes in 1 blocks
==14268==      possibly lost: 64 bytes in 1 blocks
==14268==    still reachable: 32 bytes in 1 blocks
==14268==         suppressed: 0 bytes in 0 blocks
==14268== ERROR SUMMARY: 3 errors from 3 contexts (suppressed: 0 from 0)
```

Only `==PID==` lines are valgrind's (the program's own output runs between them; `-v` adds
`--PID--` lines, of which the `Valgrind options:` are kept). A report is one leak check of one
process, closed by its LEAK SUMMARY (or by "All heap blocks were freed", a clean run): the
summary's lost kinds are its stated total, still reachable and suppressed stay apart. The loss
records are read as in the XML (memdash.leaks.logic.parsers.valgrind): a definitely lost record adds
its direct bytes, the indirect ones are their own "indirectly lost" record, shown or not. The
default `--leak-check=summary` prints no records: the report then has only the summary's totals.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memdash.core.logic.errors import InvalidUpload
from memdash.leaks.logic.parsers.common import (
    check_kind_totals,
    check_report_totals,
    decode_lines,
    head_text,
    last_line,
    parse_int,
)
from memdash.leaks.logic.parsers.valgrind import LOSS_RECORD, VERSION, stated_totals
from memdash.leaks.logic.reports import (
    DIRECT,
    INDIRECT,
    NO_LEAK_CHECK,
    POSSIBLE,
    REACHABLE,
    SUPPRESSED,
    VALGRIND,
    LeakLog,
    LeakRecord,
    LeakReport,
    StackFrame,
    Suppression,
)

_LINE = re.compile(r"^(==|--|\*\*)(\d+)\1 ?(.*)$")
_DETECT = re.compile(
    r"^==\d+== (?:Memcheck, a memory error detector|Copyright \(C\) .*Julian Seward"
    r"|Using Valgrind-|HEAP SUMMARY:|LEAK SUMMARY:)",
    re.MULTILINE,
)
_TOOL = re.compile(r"^([A-Z][\w-]*), an? .+$")
_D = r"(?: \([+-][\d,]+\))?"  # an added leak check's difference to the one before
_IN_USE = re.compile(rf"^\s*in use at exit: ([\d,]+){_D} bytes in ([\d,]+){_D} blocks?\s*$")
_USAGE = re.compile(
    r"^\s*total heap usage: ([\d,]+) allocs, ([\d,]+) frees, ([\d,]+) bytes allocated\s*$"
)
_SUMMARY_ROW = re.compile(
    rf"^\s*(definitely lost|indirectly lost|possibly lost|still reachable|suppressed): "
    rf"([\d,]+){_D} bytes in ([\d,]+){_D} blocks?\s*$"
)
_HEURISTIC_ROW = re.compile(r"^\s*(\w+)\s*: ([\d,]+) bytes in ([\d,]+) blocks?\s*$")
_FRAME = re.compile(
    r"^\s+(?:at|by) 0x([0-9A-Fa-f]+): (.*?)(?: \((?:in ([^()]+)|([^\s()]+):(\d+))\))?\s*$"
)
_ERRORS = re.compile(r"^ERROR SUMMARY: ([\d,]+) errors? from ([\d,]+) contexts?")
_USED_SUPPRESSION = re.compile(r"^used_suppression:\s+([\d,]+) (\S+)")
_FATAL_SIGNAL = re.compile(
    r"^Process terminating with default action of signal (\d+) \((\w+)\)(?:: dumping core)?\s*$"
)
_KINDS = {
    "definitely lost": DIRECT,
    "indirectly lost": INDIRECT,
    "possibly lost": POSSIBLE,
    "still reachable": REACHABLE,
    "suppressed": SUPPRESSED,
}
_CLEAN = "All heap blocks were freed -- no leaks are possible"
_NO_DETAILS = "Rerun with --leak-check=full to see details of leaked memory"
_HINT = "run valgrind --leak-check=full (and let the program exit)"


# What valgrind's regression tests keep as expected output (`memcheck/tests/*.stderr.exp`): a
# log passed through their filter_stderr scripts, `==PID== ` prefixes dropped, addresses and
# record numbers replaced by dots. It is no run's output: its numbers are a test's, not a run's.
_FILTERED = re.compile(r"^\s+(?:at|by) 0x\.{8}: |in loss record \.\.\. of \.\.\.\s*$", re.MULTILINE)


def looks_like(raw: bytes) -> bool:
    head = head_text(raw)
    return bool(_DETECT.search(head) or _FILTERED.search(head))


def parse(raw: bytes) -> LeakLog:
    head = head_text(raw)
    if not _DETECT.search(head) and (filtered := _FILTERED.search(head)):
        number = head.count("\n", 0, filtered.start()) + 1
        raise InvalidUpload(
            "valgrind's regression-test expected output (a `.stderr.exp`: a log filtered by "
            "valgrind's test scripts, pids dropped, addresses and loss record numbers replaced "
            "by dots: `loss record ... of ...`), not the log of a run: upload what valgrind "
            "wrote (its stderr, --log-file or --xml-file)",
            f"line {number}",
        )
    return _Parser().run(decode_lines(raw))


@dataclass
class _Process:
    """What one process's `==PID==` lines said so far."""

    pid: str
    info: dict[str, object] = field(default_factory=dict)
    reports: list[LeakReport] = field(default_factory=list)
    report: LeakReport | None = None  # a leak check whose LEAK SUMMARY is still to come
    record: LeakRecord | None = None  # taking frames
    last_index: int = 0
    summary: dict[str, tuple[int, int]] | None = None  # inside a LEAK SUMMARY
    heuristics: dict[str, list[int]] = field(default_factory=dict)
    in_heap_summary: bool = False
    in_options: bool = False
    options: list[str] = field(default_factory=list)  # `-v`'s "Valgrind options:"
    suppressions: list[Suppression] = field(default_factory=list)
    signal: dict[str, object] | None = None  # the fatal signal whose lines are being read


class _Parser:
    def __init__(self) -> None:
        self.processes: dict[str, _Process] = {}
        self.order: list[_Process] = []

    def run(self, lines: list[str]) -> LeakLog:
        for number, line in enumerate(lines, start=1):
            if match := _LINE.match(line):
                process = self.processes.get(match[2])
                if process is None:
                    process = self.processes[match[2]] = _Process(pid=match[2])
                    self.order.append(process)
                if match[1] == "==":
                    self.take(process, match[3], number)
                elif match[1] == "--":
                    self.take_debug(process, match[3])
        return self.finish(last_line(lines))

    def take_debug(self, process: _Process, body: str) -> None:
        """`-v`'s `--PID--` lines: only the options valgrind ran with are kept."""
        if body.strip() == "Valgrind options:":
            process.in_options = True
        elif process.in_options and body.startswith("   "):
            process.options.append(body.strip())
        else:
            process.in_options = False

    def take(self, process: _Process, body: str, number: int) -> None:
        if process.summary is not None and self.take_summary_line(process, body, number):
            return
        if process.signal is not None and take_signal_line(process.signal, body):
            return
        process.signal = None
        if process.in_heap_summary and self.take_heap_line(process, body):
            return
        process.in_heap_summary = False
        if "tool" not in process.info and (match := _TOOL.match(body)):
            process.info["tool"] = match[1]
            if match[1] == "Massif":
                raise InvalidUpload(
                    "a valgrind Massif log, not its profile: memdash reads the massif.out.<pid> "
                    "file massif writes (--massif-out-file); upload that file",
                    f"line {number}",
                )
            if match[1] != "Memcheck":
                raise InvalidUpload(
                    f"a valgrind {match[1]} log, not memcheck: only memcheck finds leaks; run "
                    "valgrind --tool=memcheck --leak-check=full",
                    f"line {number}",
                )
        elif match := VERSION.search(body):
            process.info["version"] = match[1]
        elif body.startswith("Command: "):
            process.info["command"] = body.removeprefix("Command: ").strip()
        elif body.startswith("Parent PID: "):
            process.info["ppid"] = body.removeprefix("Parent PID: ").strip()
        elif body.strip() == "HEAP SUMMARY:":
            process.in_heap_summary = True
        elif match := _FATAL_SIGNAL.match(body.strip()):
            process.signal = {"number": int(match[1]), "name": match[2], "frames": []}
            process.info["fatal_signal"] = process.signal
        elif match := LOSS_RECORD.match(body):
            self.take_record(process, match, number)
        elif process.record is not None and (match := _FRAME.match(body)):
            process.record.frames.append(log_frame(match))
        elif body.strip() == "LEAK SUMMARY:":
            process.summary, process.heuristics = {}, {}
            process.record = None
        elif body.strip() == _CLEAN:
            report = self.open_report(process, number)
            stated_totals(report, {})
            self.close_report(process)
        elif body.strip() == _NO_DETAILS and process.reports:
            process.reports[-1].info["records"] = "not printed (--leak-check=summary)"
        elif match := _ERRORS.match(body.strip()):
            process.info["errors"] = parse_int(match[1])
        elif match := _USED_SUPPRESSION.match(body.strip()):
            process.suppressions.append(Suppression(template=match[2], count=parse_int(match[1])))
        elif not body.strip():
            process.record = None

    def take_heap_line(self, process: _Process, body: str) -> bool:
        heap = process.info.setdefault("heap_summary", {})
        assert isinstance(heap, dict)
        if match := _IN_USE.match(body):
            heap["in_use_bytes"], heap["in_use_blocks"] = parse_int(match[1]), parse_int(match[2])
        elif match := _USAGE.match(body):
            heap["allocs"], heap["frees"] = parse_int(match[1]), parse_int(match[2])
            heap["bytes_allocated"] = parse_int(match[3])
        else:
            return False
        return True

    def open_report(self, process: _Process, number: int) -> LeakReport:
        if process.report is None:
            process.report = LeakReport(tool=VALGRIND, process=f"pid {process.pid}", line=number)
        return process.report

    def take_record(self, process: _Process, match: re.Match[str], number: int) -> None:
        index, of = parse_int(match["index"]), parse_int(match["of"])
        if process.report is not None and index <= process.last_index:
            raise InvalidUpload(
                f"loss record {index} of {of} after record {process.last_index}, before the "
                "LEAK SUMMARY of the leak check they belong to",
                f"line {number}",
            )
        report = self.open_report(process, number)
        if report.stated_records is not None and report.stated_records != of:
            raise InvalidUpload(
                f"loss record {index} of {of}, but the records before it count "
                f"{report.stated_records}",
                f"line {number}",
            )
        report.stated_records, process.last_index = of, index
        record = text_record(match, number)
        report.records.append(record)
        process.record = record

    def take_summary_line(self, process: _Process, body: str, number: int) -> bool:
        """A LEAK SUMMARY row; its last row (`suppressed:`) closes the leak check."""
        assert process.summary is not None
        if match := _SUMMARY_ROW.match(body):
            kind = _KINDS[match[1]]
            process.summary[kind] = (parse_int(match[2]), parse_int(match[3]))
            if kind == SUPPRESSED:
                report = self.open_report(process, number)
                stated_totals(report, process.summary)
                if process.heuristics:
                    report.info["reachable_via_heuristic"] = process.heuristics
                check_kind_totals(report, f"line {number}")
                check_report_totals(report, f"line {number}")
                self.close_report(process)
            return True
        if body.strip() == "of which reachable via heuristic:":
            return True
        if match := _HEURISTIC_ROW.match(body):
            process.heuristics[match[1]] = [parse_int(match[2]), parse_int(match[3])]
            return True
        raise InvalidUpload(
            "valgrind's LEAK SUMMARY breaks off before its `suppressed:` row", f"line {number}"
        )

    def close_report(self, process: _Process) -> None:
        assert process.report is not None
        process.reports.append(process.report)
        process.report = process.record = process.summary = None
        process.last_index = 0

    def finish(self, stopped: int) -> LeakLog:
        log = LeakLog(tool=VALGRIND)
        for process in self.order:
            if process.summary is not None:
                raise InvalidUpload(
                    f"valgrind log cut off at line {stopped}, inside a LEAK SUMMARY; send the "
                    "log to its end",
                    f"line {stopped}",
                )
            if process.report is not None:
                raise InvalidUpload(
                    f"valgrind log cut off at line {stopped}: the loss records from line "
                    f"{process.report.line} on have no LEAK SUMMARY; send the log to its end",
                    f"line {stopped}",
                )
            info = {key: value for key, value in process.info.items() if key != "tool"}
            if process.options:
                info["options"] = " ".join(process.options)
            if not process.reports and "fatal_signal" in info:
                # It died, and valgrind ran no leak check (--leak-check=no): a report that
                # says so, with the signal and the heap in use, rather than no report or 0 leaks.
                info["leak_check"] = NO_LEAK_CHECK
                report = LeakReport(tool=VALGRIND, process=f"pid {process.pid}", line=stopped)
                process.reports.append(report)
            for report in process.reports:
                report.info = {**info, **report.info}
            if process.reports:
                process.reports[-1].suppressions = process.suppressions
            log.reports += process.reports
        if not log.reports:
            raise InvalidUpload(no_leak_check_message(self.order, stopped), f"line {stopped}")
        log.info = dict(log.reports[0].info)
        return log


def take_signal_line(signal: dict[str, object], body: str) -> bool:
    """The lines after "Process terminating with default action of signal N": what happened
    (`Access not within mapped region at address 0x0`), then the frames where it happened;
    False at the first line that is neither (valgrind's advice on stack overflows, a blank)."""
    frames = signal["frames"]
    assert isinstance(frames, list)
    if match := _FRAME.match(body):
        frames.append(log_frame(match).display())
        return True
    if "event" not in signal and not frames and body.startswith(" ") and body.strip():
        signal["event"] = body.strip()
        return True
    return False


def no_leak_check_message(processes: list[_Process], stopped: int) -> str:
    """Why a valgrind log holds no leak check, and what to do."""
    if any("heap_summary" in process.info for process in processes):
        return (
            f"looks like a valgrind memcheck log without leak records or LEAK SUMMARY (read to "
            f"line {stopped}): it was run with --leak-check=no; {_HINT}"
        )
    return (
        f"looks like a valgrind memcheck log cut off at line {stopped}, before its HEAP SUMMARY "
        f"(the program had not exited): send the whole log; {_HINT}"
    )


def text_record(match: re.Match[str], number: int) -> LeakRecord:
    """A loss record's first line, read as the XML's `<text>` is (direct bytes counted)."""
    kind = _KINDS.get(match["kind"])
    if kind is None or kind == SUPPRESSED:
        raise InvalidUpload(f"unknown leak kind {match['kind']!r}", f"line {number}")
    total, blocks = parse_int(match["bytes"]), parse_int(match["blocks"])
    indirect = parse_int(match["indirect"]) if match["indirect"] else 0
    direct = parse_int(match["direct"]) if match["direct"] else total - indirect
    if direct + indirect != total:
        raise InvalidUpload(
            f"{total} bytes is not {direct} direct plus {indirect} indirect", f"line {number}"
        )
    return LeakRecord(
        kind=kind,
        bytes=direct,
        allocations=blocks,
        size=direct // blocks if blocks and direct % blocks == 0 else None,
        detail={"leakedbytes": total, "indirect_bytes": indirect, "text": match[0].strip()},
        line=number,
    )


def log_frame(match: re.Match[str]) -> StackFrame:
    """`at 0x48417B4: malloc (in /usr/lib/…/vgpreload_memcheck-amd64-linux.so)` or
    `by 0x109191: lose_node (four_kinds.c:27)`; `???` is valgrind's unknown function."""
    symbol = match[2].strip()
    return StackFrame(
        symbol="" if symbol == "???" else symbol,
        image=(match[3] or "").strip(),
        address=int(match[1], 16),
        file=match[4] or "",
        line=int(match[5]) if match[5] else None,
    )
