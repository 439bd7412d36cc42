"""LeakSanitizer reports, standalone or from AddressSanitizer, as they appear in a test log.

```
=================================================================
==3294==ERROR: LeakSanitizer: detected memory leaks

Direct leak of 10 byte(s) in 1 object(s) allocated from:
    #0 0x7fef9d463acb in __interceptor_malloc ??:?
    #1 0x7fefa091110b in xmlStrndup /src/third_party/libxml/src/xmlstring.c:45
    #2 0x7fee08409afa  (<unknown module>)

-----------------------------------------------------
Suppressions used:
  count      bytes template
    360      17792 libfontconfig
-----------------------------------------------------

SUMMARY: AddressSanitizer: 10 byte(s) leaked in 1 allocation(s).
```

One log may hold several reports (one per process, mixed with the programs' own output). A
report runs from its `ERROR: LeakSanitizer` line to its `SUMMARY` line; a suppression table
printed between them belongs to it, one printed outside any report belongs to a process whose
leaks were all suppressed (the tool prints no report then, only the table). SUMMARY counts direct
and indirect leaks, and every leak even past `max_leaks`, so it is the report's stated total.

The leak checker is LeakSanitizer whichever sanitizer runs it: its ERROR line names it (and the
report is called so), the SUMMARY line names the sanitizer it ran under (AddressSanitizer,
HWAddressSanitizer, or LeakSanitizer alone), kept as the report's `runtime`. Frames come in every
form the sanitizers print: `in fn file:line:col`, `in fn file:line`, `in fn file` (Clang's
symbolizer on a binary without debug info), `in fn (module+0xoff)`, `(module+0xoff) (BuildId: …)`
(the build id kept, so that a debug file can name the frame), `(module:arch+0xoff)` (Darwin),
`(<unknown module>)`, `in fn ??:0`/`??:?`/`???:0`, and the `in fn _asan_rtl_` of old ASan (the
runtime, printed where the file goes). A module is a path (`/lib/x86_64-linux-gnu/libc.so.6`) or,
when the run set `strip_path_prefix`, a bare name (`prog+0x401cb0`; its offset is the address in
a program built without PIE). tests/data/leaks/sanitizers/ holds each form as GCC 12 and Clang 14
print it.
"""

from __future__ import annotations

import re

from memdash.core.logic.errors import InvalidUpload
from memdash.leaks.logic.parsers.common import (
    check_report_totals,
    decode_lines,
    head_text,
    last_line,
)
from memdash.leaks.logic.reports import (
    DIRECT,
    INDIRECT,
    SANITIZER,
    LeakLog,
    LeakRecord,
    LeakReport,
    StackFrame,
    Suppression,
)

_HEADER = re.compile(r"==(\d+)==ERROR: (\w*Sanitizer): detected memory leaks")
_OTHER_ERROR = re.compile(r"==(\d+)==ERROR: (\w*Sanitizer): (\S+)")
_RECORD = re.compile(
    r"^\s*(Direct|Indirect) leak of (\d+) byte\(s\) in (\d+) object\(s\) allocated from:"
)
_FRAME = re.compile(r"^\s*#(\d+) 0x([0-9a-fA-F]+)\s*(.*)$")
_SUMMARY = re.compile(r"SUMMARY: (\w+Sanitizer): (\d+) byte\(s\) leaked in (\d+) allocation\(s\)\.")
_RULE = re.compile(r"^-{20,}\s*$")
_SUPPRESSIONS = re.compile(r"^\s*Suppressions used:\s*$")
_SUPPRESSION_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(.+?)\s*$")
_TOO_MANY = re.compile(r"Too many leaks! Only the first (\d+) leaks encountered will be reported")
# `max_leaks=N`: "The N top leak(s):" before the records, "Omitting M more leak(s)." after them
# (SUMMARY still counts all of them).
_TOP_LEAKS = re.compile(r"^The (\d+) top leak\(s\):")
_OMITTED = re.compile(r"^Omitting (\d+) more leak\(s\)\.")
# The runtime stopping at its own assertion, before any check (GCC 12's -static-liblsan at start).
_CHECK_FAILED = re.compile(r"(\w*Sanitizer): CHECK failed: (\S+)")

_BUILD_ID = re.compile(r"\s*\(BuildId: ([0-9a-fA-F]*)\)\s*$")
_DISCRIMINATOR = re.compile(r"\s*\(discriminator \d+\)\s*$")
# `(module+0xoff)`: any name, a path or (after `strip_path_prefix`) a bare file name; a
# parenthesised text without an offset is a module only if it reads as a file (`(libc.so.6)`).
_MODULE = re.compile(r"(?:^|\s)\(([^()]*?)(?:\+0x([0-9a-fA-F]+))?\)$")
_ARCH = re.compile(r":[A-Za-z0-9_]+$")  # Darwin's `libfoo.dylib:x86_64h`
_SOURCE = re.compile(
    r"^(?P<file>\?{2,3}|[^\s()]*?[/\\][^\s()]*?|[^\s():]+?\.[A-Za-z0-9+]+?)"
    r"(?::(?P<line>\d+|\?))?(?::\d+)?$"
)
_UNKNOWN_MODULE = "<unknown module>"
OLD_ASAN_RUNTIME = "_asan_rtl_"  # old ASan's name for its runtime, printed where the file goes
LEAK_SANITIZER = "LeakSanitizer"


def looks_like(raw: bytes) -> bool:
    head = head_text(raw)
    return bool(_OTHER_ERROR.search(head) or _SUMMARY.search(head) or _CHECK_FAILED.search(head))


def parse(raw: bytes) -> LeakLog:
    return _Parser().run(decode_lines(raw))


class _Parser:
    def __init__(self) -> None:
        self.log = LeakLog(tool=SANITIZER)
        self.report: LeakReport | None = None
        self.record: LeakRecord | None = None
        self.suppressions: list[Suppression] | None = None  # inside a suppression table
        # Errors a process reported and went on from (`halt_on_error=0`), by pid, until its
        # leak report: kept with it as `errors_before`.
        self.errors: dict[str, list[str]] = {}

    def run(self, lines: list[str]) -> LeakLog:
        other: tuple[int, str, str] | None = None  # the first other sanitizer error
        failed: tuple[int, str, str] | None = None  # the first failed runtime check
        for number, line in enumerate(lines, start=1):
            self.take(line, number)
            if other is None and not _HEADER.search(line) and (match := _OTHER_ERROR.search(line)):
                other = (number, match[2], match[3].rstrip(":"))
            if not _HEADER.search(line) and (match := _OTHER_ERROR.search(line)):
                self.errors.setdefault(match[1], []).append(match[3].rstrip(":"))
            if failed is None and (match := _CHECK_FAILED.search(line)):
                failed = (number, match[1], match[2])
        if self.report is not None:
            stopped = last_line(lines)
            raise InvalidUpload(
                f"LeakSanitizer report cut off at line {stopped}: no SUMMARY line after the "
                f"report that begins at line {self.report.line}; send the log through its "
                "`SUMMARY: …Sanitizer: N byte(s) leaked` line",
                f"line {stopped}",
            )
        if not self.log.reports:
            if other is not None:
                number, sanitizer, what = other
                article = "an" if sanitizer[:1] in "AEIOU" else "a"
                raise InvalidUpload(
                    f"{article} {sanitizer} {what} report, not a leak report: the process "
                    "stopped at this error before LeakSanitizer's check at exit; memdash reads "
                    "`ERROR: LeakSanitizer: detected memory leaks` reports",
                    f"line {number}",
                )
            if failed is not None:
                number, sanitizer, where = failed
                raise InvalidUpload(
                    f"{sanitizer}'s runtime failed its own check ({where}) and stopped the "
                    "process before any leak check: there is no leak report in this log",
                    f"line {number}",
                )
            raise InvalidUpload(
                "no LeakSanitizer report (no `SUMMARY: …Sanitizer:` line)",
                f"line {last_line(lines)}",
            )
        return self.log

    def take(self, line: str, number: int) -> None:
        if self.suppressions is not None:
            self.take_suppression_line(line, number)
        elif match := _HEADER.search(line):
            if self.report is not None:
                raise InvalidUpload(
                    "a new LeakSanitizer report starts before the previous one's SUMMARY line",
                    f"line {number}",
                )
            self.report = LeakReport(tool=SANITIZER, process=f"pid {match[1]}", line=number)
            if errors := self.errors.pop(match[1], None):
                self.report.info["errors_before"] = errors
            self.report.info["sanitizer"] = match[2]
            self.record = None
        elif match := _SUMMARY.search(line):
            self.close_report(match, number)
        elif _SUPPRESSIONS.match(line):
            self.suppressions = []
            self.record = None
        elif self.report is not None:
            self.take_report_line(self.report, line, number)

    def take_report_line(self, report: LeakReport, line: str, number: int) -> None:
        if match := _RECORD.match(line):
            self.record = LeakRecord(
                kind=DIRECT if match[1] == "Direct" else INDIRECT,
                bytes=int(match[2]),
                allocations=int(match[3]),
                line=number,
            )
            self.record.size = exact_size(self.record.bytes, self.record.allocations)
            report.records.append(self.record)
        elif (match := _FRAME.match(line)) and self.record is not None:
            self.record.frames.append(sanitizer_frame(int(match[2], 16), match[3]))
        elif (match := _TOO_MANY.search(line)) or (match := _TOP_LEAKS.match(line)):
            report.info["max_leaks"] = int(match[1])
        elif match := _OMITTED.match(line):
            report.info["omitted_leaks"] = int(match[1])
        elif not line.strip():
            self.record = None

    def take_suppression_line(self, line: str, number: int) -> None:
        assert self.suppressions is not None
        if match := _SUPPRESSION_ROW.match(line):
            self.suppressions.append(
                Suppression(template=match[3], count=int(match[1]), bytes=int(match[2]))
            )
        elif _RULE.match(line) or not line.strip():
            owner = self.report.suppressions if self.report else self.log.other_suppressions
            owner.extend(self.suppressions)
            self.suppressions = None
        # else: the table's own header ("count bytes template")

    def close_report(self, match: re.Match[str], number: int) -> None:
        report = self.report
        if report is None:
            # A SUMMARY whose header line was lost (a filtered log): the totals still stand.
            report = LeakReport(tool=SANITIZER, line=number)
        report.stated_bytes = int(match[2])
        report.stated_allocations = int(match[3])
        report.info.setdefault("sanitizer", LEAK_SANITIZER)
        if match[1] != report.info["sanitizer"]:
            report.info["runtime"] = match[1]  # the sanitizer LeakSanitizer ran under
        check_report_totals(report)
        self.log.reports.append(report)
        self.report = self.record = None


def exact_size(total: int, count: int) -> int | None:
    """The size of each allocation when the record's are all alike (total divisible by count)."""
    if count > 0 and total % count == 0:
        return total // count
    return None


def sanitizer_frame(address: int, rest: str) -> StackFrame:
    """The text after `#N 0xADDR`: `in fn file:line[:col]`, `in fn (module+0xoff)`, `in fn`,
    or ` (module+0xoff)` alone, each maybe followed by `(BuildId: …)` (the module's, kept so
    that a debug file can name the frame)."""
    build_id = match[1].lower() if (match := _BUILD_ID.search(rest)) else ""
    rest = _BUILD_ID.sub("", rest).strip()
    rest = _DISCRIMINATOR.sub("", rest)
    image, offset = "", None
    if match := _MODULE.search(rest):
        module = _ARCH.sub("", match[1])
        if module and module != _UNKNOWN_MODULE and (match[2] or "/" in module or "." in module):
            image = module
            offset = int(match[2], 16) if match[2] else None
            rest = rest[: match.start()]
        elif module == _UNKNOWN_MODULE:
            rest = rest[: match.start()]
    rest = rest.strip()
    if not rest.startswith("in "):
        return StackFrame(image=image, offset=offset, address=address, build_id=build_id)
    text = rest[3:].strip()
    file, line = "", None
    head, _, last = text.rpartition(" ")
    if head and last == OLD_ASAN_RUNTIME:
        text, image = head.rstrip(), image or OLD_ASAN_RUNTIME
    elif head and (source := _SOURCE.match(last)):
        text = head.rstrip()
        if source["file"] not in ("??", "???"):
            file = source["file"]
            line = int(source["line"]) if source["line"] and source["line"] != "?" else None
    return StackFrame(
        symbol=text, image=image, offset=offset, address=address, file=file, line=line,
        build_id=build_id,
    )  # fmt: skip
