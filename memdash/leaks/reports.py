"""Leak reports as plain data: what libmemunreachable, LeakSanitizer and valgrind printed.

No Django here. The parsers in `memdash.leaks.parsers` build these; `services` stores them.

A report keeps two sets of totals apart: what the tool *states* (a summary line, a SUMMARY line,
"loss record i of N") and what its *records* add up to. They differ when the tool counted more
than it listed (libmemunreachable lists at most 100 folded leaks; LeakSanitizer stops at
`max_leaks`; valgrind hides the leak kinds not asked for), and memdash shows that difference
instead of hiding it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memdash.core.numbers import MAX_INT64

# What kind of memory a record is about. Everything but "reachable" is unreachable memory.
DIRECT, INDIRECT, POSSIBLE, REACHABLE = "direct", "indirect", "possible", "reachable"
LEAK_KINDS = (DIRECT, INDIRECT, POSSIBLE, REACHABLE)

LIBMEMUNREACHABLE, SANITIZER, VALGRIND = "libmemunreachable", "sanitizer", "valgrind"
TOOLS = (LIBMEMUNREACHABLE, SANITIZER, VALGRIND)


@dataclass(frozen=True)
class StackFrame:
    """One frame as the tool printed it; every field is optional because tools print what
    they know (a bare address, a module and offset, or a symbol with file and line)."""

    symbol: str = ""
    image: str = ""
    address: int | None = None  # absolute program counter
    offset: int | None = None  # offset inside `image` (module+0x…, or malloc_debug's relative pc)
    file: str = ""
    line: int | None = None
    build_id: str = ""  # of `image`, as the tool printed it (`(BuildId: …)`)
    inlined: bool = False  # a call inlined into the next frame (named from a debug file)

    def display(self) -> str:
        """A one-line form for pages: symbol where known, else module+offset, else address."""
        where = ""
        if self.file:
            where = f" {self.file}:{self.line}" if self.line is not None else f" {self.file}"
        if self.symbol:
            return f"{self.symbol}{' [inlined]' if self.inlined else ''}{where}"
        if self.image:
            tail = f"+0x{self.offset:x}" if self.offset is not None else ""
            return f"{self.image}{tail}"
        return f"0x{self.address:x}" if self.address is not None else "???"

    def as_dict(self) -> dict[str, Any]:
        """For storage and JSON: addresses as hex strings (64-bit values lose precision as
        JavaScript numbers), empty fields left out."""
        fields: dict[str, Any] = {
            "symbol": self.symbol,
            "image": self.image,
            "address": f"0x{self.address:x}" if self.address is not None else "",
            "offset": f"0x{self.offset:x}" if self.offset is not None else "",
            "file": self.file,
            "line": self.line,
            "build_id": self.build_id,
            "inlined": self.inlined or None,
        }
        return {key: value for key, value in fields.items() if value not in ("", None)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StackFrame:
        def number(text: str | None) -> int | None:
            return int(text, 16) if text else None

        return cls(
            symbol=data.get("symbol", ""),
            image=data.get("image", ""),
            address=number(data.get("address")),
            offset=number(data.get("offset")),
            file=data.get("file", ""),
            line=data.get("line"),
            build_id=data.get("build_id", ""),
            inlined=bool(data.get("inlined")),
        )


@dataclass
class LeakRecord:
    """One entry of a report: a set of allocations the tool printed together.

    `bytes` and `allocations` are what this record adds to the report's total, so records can be
    summed without counting a block twice (valgrind's `leakedbytes` includes the indirect bytes
    that its own "indirectly lost" records list again; those stay in `detail`)."""

    kind: str
    bytes: int
    allocations: int
    frames: list[StackFrame] = field(default_factory=list)
    size: int | None = None  # size of one allocation, when known
    address: int | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    line: int = 0  # where the record starts in the input, for messages

    @property
    def is_unreachable(self) -> bool:
        return self.kind != REACHABLE


@dataclass(frozen=True)
class Suppression:
    """A suppression rule the tool applied (LeakSanitizer's table, valgrind's suppcounts)."""

    template: str
    count: int
    bytes: int | None = None


@dataclass
class LeakReport:
    """One leak check of one process."""

    tool: str
    process: str = ""
    stated_bytes: int | None = None
    stated_allocations: int | None = None
    stated_records: int | None = None
    records: list[LeakRecord] = field(default_factory=list)
    suppressions: list[Suppression] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)  # ABI, tool version, command line …
    line: int = 0

    @property
    def listed_bytes(self) -> int:
        return sum(record.bytes for record in self.records)

    @property
    def listed_allocations(self) -> int:
        return sum(record.allocations for record in self.records)

    @property
    def listed_records(self) -> int:
        return len(self.records)

    @property
    def unlisted_bytes(self) -> int:
        """Bytes the tool counted in its totals but did not list (0 when it listed them all)."""
        if self.stated_bytes is None:
            return 0
        return max(self.stated_bytes - self.listed_bytes, 0)

    @property
    def unlisted_allocations(self) -> int:
        if self.stated_allocations is None:
            return 0
        return max(self.stated_allocations - self.listed_allocations, 0)

    @property
    def unlisted_records(self) -> int:
        if self.stated_records is None:
            return 0
        return max(self.stated_records - self.listed_records, 0)

    @property
    def unreachable_bytes(self) -> int:
        """The report's leaked memory: the stated total where the tool states one (it counts
        what it did not list), else the unreachable records' sum."""
        if self.stated_bytes is not None:
            return self.stated_bytes
        return sum(record.bytes for record in self.records if record.is_unreachable)

    @property
    def unreachable_allocations(self) -> int:
        if self.stated_allocations is not None:
            return self.stated_allocations
        return sum(record.allocations for record in self.records if record.is_unreachable)


@dataclass
class LeakLog:
    """Everything one uploaded file holds: one or more reports of one tool."""

    tool: str
    reports: list[LeakReport] = field(default_factory=list)
    # Suppression tables printed outside any report: a process whose leaks were all suppressed.
    other_suppressions: list[Suppression] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)


def number_past_64_bits(log: LeakLog) -> tuple[int, str] | None:
    """(line, what) of the first count or size, stated or summed, that a 64-bit database column
    cannot hold; None when all fit. Tools print these as decimal text of any length."""
    for report in log.reports:
        stated = {
            "stated bytes": report.stated_bytes,
            "stated allocations": report.stated_allocations,
            "stated records": report.stated_records,
        }
        for what, value in stated.items():
            if value is not None and value > MAX_INT64:
                return report.line, f"{what} {value}"
        for record in report.records:
            for what, value in (("bytes", record.bytes), ("allocations", record.allocations)):
                if value > MAX_INT64:
                    return record.line, f"{what} {value}"
        if report.listed_bytes > MAX_INT64 or report.listed_allocations > MAX_INT64:
            return report.line, "the records' sum"
    return None
