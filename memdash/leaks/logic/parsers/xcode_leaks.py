"""Xcode's `leaks` report (`leaks <pid>`, `leaks App.memgraph`, `leaks --atExit -- ./tests`, the
memory graph debugger's export), read whole before anything is stored (pure: no Django).

```
Process:         Chat [812]
Identifier:      com.example.chat
Version:         8.0.4 (104)
Code Type:       ARM64
Platform:        iOS
OS Version:      iOS 17.4.1 (21E236)
Physical footprint:         48.2M
Physical footprint (peak):  61.0M
----

leaks Report Version: 4.0, multi-line stacks
Process 812: 41926 nodes malloced for 6668 KB
Process 812: 6 leaks for 256 total leaked bytes.

STACK OF 1 INSTANCE OF 'ROOT CYCLE: <ChatViewController>':   (with MallocStackLogging)
…frames…
====
    3 (192 bytes) ROOT CYCLE: <ChatViewController 0x…> [96]
       …
```

A report is one process's: its header (process, identifier, version, platform, OS, the physical
footprint and its peak, kept as printed and in bytes), `K leaks for B total leaked bytes` (the
stated totals: leaks counts blocks), then its trees (`xcode_tree`), grouped under the stacks
they were allocated from when stacks were logged (`xcode_stacks`). Each top-level root is a
record of `N` blocks and the bytes of its tree. A `ROOT CYCLE` is also read out as its loops,
which ingest stores as retain cycles. A file may hold several reports (one per process).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from memdash.core.logic.errors import InvalidUpload
from memdash.leaks.logic.parsers.common import (
    check_report_totals,
    decode_lines,
    head_text,
    last_line,
)
from memdash.leaks.logic.parsers.xcode_stacks import (
    BINARY_IMAGES,
    SEPARATOR,
    STACK_HEAD,
    BinaryImage,
    StackBlock,
    name_images,
    parse_image,
    take_stack_line,
)
from memdash.leaks.logic.parsers.xcode_tree import (
    ROOT_CYCLE,
    CycleLink,
    Tree,
    TreeReader,
    check_counts,
    flatten,
    root_bytes,
    shape_of,
    size_in_bytes,
)
from memdash.leaks.logic.reports import DIRECT, XCODE_LEAKS, LeakLog, LeakRecord, LeakReport

_REPORT_VERSION = re.compile(r"^leaks Report Version:\s*(?P<version>.+?)\s*$")
_NODES = re.compile(r"^Process (?P<pid>\d+): (?P<nodes>\d+) nodes? malloced for (?P<kb>\d+) KB\s*$")
_SUMMARY = re.compile(
    r"^Process (?P<pid>\d+): (?P<leaks>\d+) leaks? for (?P<bytes>\d+) total leaked bytes\.\s*$"
)
_HEADER = re.compile(r"^(?P<key>[A-Z][A-Za-z /()]*?):\s+(?P<value>.*?)\s*$")
_PROCESS = re.compile(r"^(?P<name>.*?) \[(?P<pid>\d+)\]$")
_LIST_FORM = re.compile(r"^Leak: 0x[0-9a-fA-F]+\s+size=\d+")
# Header keys kept on the report, as memdash names them.
HEADER_KEYS = {
    "Process": "process",
    "Path": "path",
    "Identifier": "identifier",
    "Version": "version",
    "Code Type": "code_type",
    "Platform": "platform",
    "Parent Process": "parent_process",
    "Target Type": "target_type",
    "Date/Time": "date_time",
    "Launch Time": "launch_time",
    "OS Version": "os_version",
    "Report Version": "crash_report_version",
    "Analysis Tool": "analysis_tool",
    "Analysis Tool Version": "analysis_tool_version",
    "Physical footprint": "footprint",
    "Physical footprint (peak)": "peak_footprint",
    "Load Address": "load_address",
    "Idle exit": "idle_exit",
}
DETECT = re.compile(
    r"^leaks Report Version:|^Process \d+: \d+ leaks? for \d+ total leaked bytes\.|"
    r"^Analysis Tool:\s+\S*/leaks\s*$",
    re.MULTILINE,
)


@dataclass
class XcodeLeaks:
    """An upload's reports, and the loops of their ROOT CYCLEs (class, reference, ownership)."""

    log: LeakLog
    cycles: list[tuple[CycleLink, ...]] = field(default_factory=list)


def looks_like(raw: bytes) -> bool:
    return bool(DETECT.search(head_text(raw)))


def parse(raw: bytes) -> XcodeLeaks:
    return _Parser().run(decode_lines(raw))


@dataclass
class _Report:
    """A report being read: its header, summary, blocks and trees."""

    line: int
    info: dict[str, Any]
    report: LeakReport | None = None
    reader: TreeReader = field(default_factory=TreeReader)
    blocks: list[tuple[StackBlock, int]] = field(default_factory=list)  # (block, its first tree)
    images: list[BinaryImage] = field(default_factory=list)
    in_images: bool = False


class _Parser:
    def __init__(self) -> None:
        self.result = XcodeLeaks(LeakLog(tool=XCODE_LEAKS))
        self.header: dict[str, Any] = {}  # read before the report it belongs to
        self.current: _Report | None = None
        self.block: StackBlock | None = None

    def run(self, lines: list[str]) -> XcodeLeaks:
        for number, line in enumerate(lines, start=1):
            self.take(line.rstrip(), number)
        self.finish()
        if not self.result.log.reports:
            if any(_LIST_FORM.match(line) for line in lines):
                raise InvalidUpload(
                    "leaks' list form (`Leak: 0x… size=…`) is not read: run leaks without "
                    "--list, which prints its leak trees",
                    "line 1",
                )
            stopped = last_line(lines)
            raise InvalidUpload(
                f"leaks report cut off at line {stopped}: no `Process N: K leaks for B total "
                "leaked bytes.` line; send the whole output of leaks",
                f"line {stopped}",
            )
        return self.result

    def take(self, line: str, number: int) -> None:
        if self.current is None or self.current.report is None:
            self.take_preamble(line, number)
        elif _REPORT_VERSION.match(line) or line.startswith("Process:"):
            self.finish()
            self.take_preamble(line, number)
        else:
            self.take_body(self.current, line, number)

    def take_preamble(self, line: str, number: int) -> None:
        """Header, report version, node count, summary; anything before the header (the
        program's own output, leaks' notes) is not the report's."""
        if match := _REPORT_VERSION.match(line):
            self.current = _Report(number, {**self.header, "report_version": match["version"]})
            self.header = {}
        elif match := _NODES.match(line):
            report = self._started(number)
            report.info.update(malloced_nodes=int(match["nodes"]), malloced_kb=int(match["kb"]))
        elif match := _SUMMARY.match(line):
            report = self._started(number)
            report.report = self._summary(report, match, number)
        elif (match := _HEADER.match(line)) and match["key"] in HEADER_KEYS:
            self.header[HEADER_KEYS[match["key"]]] = match["value"]
        elif self.current is not None and line.strip():
            raise InvalidUpload(
                "expected leaks' summary (`Process N: K leaks for B total leaked bytes.`) after "
                f"its report version at line {self.current.line}, got {line.strip()[:80]!r}",
                f"line {number}",
            )

    def _started(self, number: int) -> _Report:
        if self.current is None:
            self.current = _Report(number, dict(self.header))
            self.header = {}
        return self.current

    def _summary(self, report: _Report, match: re.Match[str], number: int) -> LeakReport:
        info = header_info(report.info)
        info["pid"] = int(match["pid"])
        name = str(info.get("process_name") or "")
        process = f"{name} (pid {match['pid']})" if name else f"pid {match['pid']}"
        return LeakReport(
            tool=XCODE_LEAKS, process=process, stated_bytes=int(match["bytes"]),
            stated_allocations=int(match["leaks"]), info=info, line=number,
        )  # fmt: skip

    def take_body(self, current: _Report, line: str, number: int) -> None:
        if current.in_images:
            if line.strip() and (image := parse_image(line)) is not None:
                current.images.append(image)
            elif line.strip():
                raise InvalidUpload(
                    "expected a binary image (`0xstart - 0xend name (version) <UUID> path`) "
                    f"under `Binary Images:`, got {line.strip()[:80]!r}",
                    f"line {number}",
                )
            return
        if BINARY_IMAGES.match(line):
            self.close_block(number)
            current.in_images = True
        elif match := STACK_HEAD.match(line):
            self.close_block(number)
            self.block = StackBlock(number, int(match["count"]), match["root"], match["label"])
        elif self.block is not None and not self.block.closed:
            if SEPARATOR.match(line):
                self.block.closed = True
                current.blocks.append((self.block, len(current.reader.trees)))
                current.reader.reset()
            elif line.strip():
                take_stack_line(self.block, line, number)
        elif not line.strip() or set(line.strip()) == {"-"}:
            current.reader.reset()
        elif current.reader.take(line, number):
            return
        elif not line[0].isspace():
            # Unindented text that is no line of a report (every tree line is indented): the
            # report is over, and what follows is the program's output, or the next report's
            # preamble (leaks' notes, its stderr).
            self.finish()
            self.take_preamble(line, number)
        else:
            raise InvalidUpload(
                "not a line of leaks' report: expected a leak tree "
                "(`N (size) ROOT LEAK: <Class 0xaddress> [size]`), a `STACK OF` block or "
                f"`Binary Images:`, got {line.strip()[:80]!r}",
                f"line {number}",
            )

    def close_block(self, number: int) -> None:
        block = self.block
        if block is not None and not block.closed:
            raise InvalidUpload(
                f"the stack of the block at line {block.line} never ends: no `====` before "
                f"line {number}",
                f"line {block.line}",
            )
        self.block = None

    def finish(self) -> None:
        """The report read so far is whole: its records, checked against its summary."""
        current, self.current = self.current, None
        if current is None:
            return
        if current.report is None:
            raise InvalidUpload(
                f"leaks report cut off: no `Process N: K leaks for B total leaked bytes.` line "
                f"after its start at line {current.line}",
                f"line {current.line}",
            )
        self.close_block(current.line)
        report = current.report
        for tree, block in trees_with_blocks(current):
            check_counts(tree)
            report.records.append(record_of(tree, block, current.images))
            self.result.cycles.extend(tree.cycles)
        check_report_totals(report)
        self.result.log.reports.append(report)


def trees_with_blocks(current: _Report) -> list[tuple[Tree, StackBlock | None]]:
    """Each tree with the stack block it was printed under (None in the plain tree form); a block
    of N instances has at most N trees."""
    trees = current.reader.trees
    starts = current.blocks
    found: list[tuple[Tree, StackBlock | None]] = []
    first_tree = starts[0][1] if starts else len(trees)
    found += [(tree, None) for tree in trees[:first_tree]]
    for index, (block, first) in enumerate(starts):
        end = starts[index + 1][1] if index + 1 < len(starts) else len(trees)
        mine = trees[first:end]
        if len(mine) > block.instances:
            raise InvalidUpload(
                f"{len(mine)} leak trees follow a stack of {block.instances} "
                f"instance{'s' if block.instances != 1 else ''}: the text was mangled",
                f"line {block.line}",
            )
        found += [(tree, block) for tree in mine]
    return found


def record_of(tree: Tree, block: StackBlock | None, images: list[BinaryImage]) -> LeakRecord:
    root = tree.root
    size, exact = root_bytes(tree)
    listed = len(root.nodes())
    kind = "ROOT CYCLE" if root.root == ROOT_CYCLE else "ROOT LEAK"
    detail: dict[str, Any] = {
        "root": kind,
        "class": root.cls,
        "title": f"{kind}: {root.cls}",
        "shape": shape_of(tree),
        "tree": flatten(tree),
        "blocks_listed": listed,
        "size_printed": root.size_text,
    }
    if not exact:
        detail["bytes_from_printed_size"] = True
    if tree.cycles:
        # Each loop as its links: [class, [reference], ownership], in the tree's order.
        detail["loops"] = [
            [[cls, list(via), own] for cls, via, own in loop] for loop in tree.cycles
        ]
    frames = []
    if block is not None:
        frames = name_images(block.stack(), images)
        detail["stack_instances"] = block.instances
        if block.thread:
            detail["thread"] = block.thread
    return LeakRecord(
        kind=DIRECT, bytes=size, allocations=root.count or listed, frames=frames,
        size=root.own_bytes, address=root.address, detail=detail, line=root.line,
        cycle=bool(tree.cycles),
    )  # fmt: skip


def header_info(header: dict[str, Any]) -> dict[str, Any]:
    """The header as kept on the report: as printed, with the process's name and pid apart and
    the footprints in bytes too (leaks' K is 1024 bytes)."""
    info = {key: value for key, value in header.items() if value not in ("", "(null)", "???")}
    if (process := _PROCESS.match(str(info.get("process", "")))) is not None:
        info["process_name"] = process["name"]
    for key in ("footprint", "peak_footprint"):
        if key in info and (size := size_in_bytes(str(info[key]))) is not None:
            info[f"{key}_bytes"] = size
    return info
