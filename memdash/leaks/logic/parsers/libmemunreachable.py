"""Android's libmemunreachable, as `dumpsys meminfo --unreachable <pid>` prints it.

```
 Unreachable memory
  1632 bytes in 10 unreachable allocations
  ABI: 'arm'

  336 bytes unreachable at e31c1350
   referencing 96 unreachable bytes in 2 allocations
   and 480 similar unreachable bytes in 3 allocations
   referencing 64 unreachable bytes in 1 allocation
   first 20 bytes of contents:
   e31c1350: 88 13 e8 07 00 00 00 00 9e 9f 15 08 00 00 00 00 ................
          #00  pc 0001cf50  /system/lib/libc_malloc_debug.so (debug_malloc+24)
```

Quirks handled here:
- the summary counts every unreachable allocation, but only the first leaks (100 by default)
  are listed, so the listed records may add up to less than the summary;
- the tool *folds* leaks: a listed leak stands for itself, the allocations only it references
  (`referencing …`), and leaks like it (`and … similar …`, followed by what those reference);
  the record's bytes and allocations include all of them, as the summary does;
- `first N bytes of contents:` prints N in hexadecimal (the stream is still in `std::hex` mode
  from the address), so `first 20 bytes` means 32 bytes;
- with malloc_debug's backtrace option, each leak carries its allocation backtrace.
"""

from __future__ import annotations

import re

from memdash.core.logic.errors import InvalidUpload
from memdash.leaks.logic.parsers.common import (
    check_report_totals,
    decode_lines,
    head_text,
    last_line,
    parse_int,
)
from memdash.leaks.logic.reports import (
    DIRECT,
    LIBMEMUNREACHABLE,
    LeakLog,
    LeakRecord,
    LeakReport,
    StackFrame,
)

_SUMMARY = re.compile(r"^\s*(\d+) bytes in (\d+) unreachable allocations?\s*$")
_PROCESS = re.compile(r"^\*\* MEMINFO in pid (\d+) \[(.*)\] \*\*\s*$")
_ABI = re.compile(r"^\s*ABI: '([^']*)'\s*$")
_LEAK = re.compile(r"^\s*(\d+) bytes unreachable at ([0-9a-fA-F]+)\s*$")
_REFERENCING = re.compile(r"^\s*referencing (\d+) unreachable bytes in (\d+) allocations?\s*$")
_SIMILAR = re.compile(r"^\s*and (\d+) similar unreachable bytes in (\d+) allocations?\s*$")
_CONTENTS_ALL = re.compile(r"^\s*contents:\s*$")
_CONTENTS_FIRST = re.compile(r"^\s*first ([0-9a-fA-F]+) bytes of contents:\s*$")
_DUMP = re.compile(r"^\s*([0-9a-fA-F]+): ((?:[0-9a-fA-F]{2} ){1,16})")
_FRAME = re.compile(r"^\s*#(\d+)\s+pc\s+([0-9a-fA-F]+)\s+(\S+)(.*)$")
_BUILD_ID = re.compile(r"\s*\(BuildId: ([^)]*)\)\s*$")
_SYMBOL_OFFSET = re.compile(r"^(.*)\+(\d+|0x[0-9a-fA-F]+)$")


_HEADING = re.compile(r"^\s*Unreachable memory\s*$", re.MULTILINE)
_FAILED = "Failed to get unreachable memory"


def looks_like(raw: bytes) -> bool:
    head = head_text(raw)
    return bool(
        re.search(r"\d+ bytes in \d+ unreachable allocation", head) or _HEADING.search(head)
    )


def parse(raw: bytes) -> LeakLog:
    return _Parser().run(decode_lines(raw))


class _Parser:
    """A line-by-line state machine: the current process, report and leak."""

    def __init__(self) -> None:
        self.log = LeakLog(tool=LIBMEMUNREACHABLE)
        self.process = ""
        self.report: LeakReport | None = None
        self.leak: LeakRecord | None = None
        self.after_similar = False  # a `referencing` line after `similar` is about the similar

    def run(self, lines: list[str]) -> LeakLog:
        for number, line in enumerate(lines, start=1):
            self.take(line, number)
        if not self.log.reports:
            failed = next((n for n, line in enumerate(lines, 1) if _FAILED in line), None)
            if failed is not None:
                raise InvalidUpload(
                    "libmemunreachable could not read the process (`Failed to get unreachable "
                    "memory`): for a system app, `adb shell setenforce 0` first, as the tool "
                    "says; an app must be debuggable",
                    f"line {failed}",
                )
            stopped = last_line(lines)
            raise InvalidUpload(
                f"libmemunreachable output cut off at line {stopped}: no summary line (`N bytes "
                "in M unreachable allocations`) under `Unreachable memory`; send the whole "
                "output of `dumpsys meminfo --unreachable <pid>`",
                f"line {stopped}",
            )
        for report in self.log.reports:
            check_report_totals(report)
        return self.log

    def take(self, line: str, number: int) -> None:
        if match := _PROCESS.match(line):
            self.process = f"{match[2]} (pid {match[1]})"
            self.report = self.leak = None
        elif match := _SUMMARY.match(line):
            self.report = LeakReport(
                tool=LIBMEMUNREACHABLE,
                process=self.process,
                stated_bytes=int(match[1]),
                stated_allocations=int(match[2]),
                line=number,
            )
            self.log.reports.append(self.report)
            self.leak = None
        elif self.report is None:
            return  # the rest of dumpsys' output (PSS tables …) is not ours
        elif match := _ABI.match(line):
            self.report.info["abi"] = match[1]
        elif match := _LEAK.match(line):
            size = int(match[1])
            self.leak = LeakRecord(
                kind=DIRECT,
                bytes=size,
                allocations=1,
                size=size,
                address=int(match[2], 16),
                line=number,
            )
            self.report.records.append(self.leak)
            self.after_similar = False
        elif self.leak is not None:
            self.take_leak_line(self.leak, line, number)

    def take_leak_line(self, leak: LeakRecord, line: str, number: int) -> None:
        if match := _REFERENCING.match(line):
            key = "similar_referencing" if self.after_similar else "referencing"
            add_folded(leak, key, parse_int(match[1]), parse_int(match[2]))
        elif match := _SIMILAR.match(line):
            add_folded(leak, "similar", parse_int(match[1]), parse_int(match[2]))
            self.after_similar = True
        elif _CONTENTS_ALL.match(line):
            leak.detail["contents_bytes"] = leak.size
            leak.detail["contents"] = ""
        elif match := _CONTENTS_FIRST.match(line):
            # Hexadecimal: the tool's stream is still in std::hex mode here.
            leak.detail["contents_bytes"] = int(match[1], 16)
            leak.detail["contents"] = ""
        elif (match := _DUMP.match(line)) and "contents" in leak.detail:
            leak.detail["contents"] += match[2].replace(" ", "")
        elif match := _FRAME.match(line):
            leak.frames.append(malloc_debug_frame(match))
        elif line.strip():
            # Another section of dumpsys began; this report's leaks are over.
            self.leak = None


def add_folded(leak: LeakRecord, key: str, size: int, count: int) -> None:
    """Folded leaks count in the record, as they count in the tool's summary."""
    leak.detail[f"{key}_bytes"] = size
    leak.detail[f"{key}_allocations"] = count
    leak.bytes += size
    leak.allocations += count


def malloc_debug_frame(match: re.Match[str]) -> StackFrame:
    """`#00  pc 0001cf50  /system/lib/libc.so (malloc+24) (BuildId: …)`: the pc is relative to
    the library, the offset after the symbol is decimal; the library's build id is kept."""
    build = _BUILD_ID.search(match[4])
    rest = _BUILD_ID.sub("", match[4]).strip()
    symbol = ""
    if rest.startswith("(") and rest.endswith(")"):
        inner = rest[1:-1]
        offset_match = _SYMBOL_OFFSET.match(inner)
        symbol = offset_match[1] if offset_match else inner
    return StackFrame(
        symbol=symbol, image=match[3], offset=int(match[2], 16),
        build_id=build[1].strip().lower() if build else "",
    )  # fmt: skip
