"""Leak reports as plain data: what libmemunreachable, LeakSanitizer, valgrind and Xcode's `leaks`
printed.

No Django here. The parsers in `memdash.leaks.logic.parsers` build these; `services` stores them.

A report keeps two sets of totals apart: what the tool *states* (a summary line, a SUMMARY line,
"loss record i of N") and what its *records* add up to. They differ when the tool counted more
than it listed (libmemunreachable lists at most 100 folded leaks; LeakSanitizer stops at
`max_leaks`; valgrind hides the leak kinds not asked for), and memdash shows that difference
instead of hiding it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memdash.core.logic.numbers import MAX_INT64

# What kind of memory a record is about. Everything but "reachable" is lost memory, a leak:
# direct (valgrind's "definitely lost", LeakSanitizer's "Direct leak"), indirect (reached only
# from lost blocks), possible (reached only through interior pointers); still-reachable memory
# is kept and shown apart, never counted as leaked. SUPPRESSED is only ever a stated figure
# (valgrind's LEAK SUMMARY), never a record.
DIRECT, INDIRECT, POSSIBLE, REACHABLE = "direct", "indirect", "possible", "reachable"
SUPPRESSED = "suppressed"
LEAK_KINDS = (DIRECT, INDIRECT, POSSIBLE, REACHABLE)
LOST_KINDS = (DIRECT, INDIRECT, POSSIBLE)

LIBMEMUNREACHABLE, SANITIZER, VALGRIND = "libmemunreachable", "sanitizer", "valgrind"
XCODE_LEAKS = "xcode-leaks"  # Apple's `leaks` (Xcode, macOS), a memgraph's report too
TOOLS = (LIBMEMUNREACHABLE, SANITIZER, VALGRIND, XCODE_LEAKS)

# A report's `info["leak_check"]` when its leak check is not a whole one: none ran (valgrind's
# --leak-check=no, in a process that died of a signal: the report says so, never "0 leaks"), or
# valgrind's XML of protocol 4 or 5, which states no totals, listed no loss record (whatever was
# lost or reachable is not in the file: still-reachable blocks are not listed by default).
NO_LEAK_CHECK, NOTHING_LISTED = "none", "nothing listed"

# Each kind in the tool's own words (valgrind's wherever a tool has none of its own).
KIND_LABELS = {
    DIRECT: "definitely lost",
    INDIRECT: "indirectly lost",
    POSSIBLE: "possibly lost",
    REACHABLE: "still reachable",
    SUPPRESSED: "suppressed",
}
_TOOL_KIND_LABELS = {
    SANITIZER: {DIRECT: "direct leak", INDIRECT: "indirect leak"},
    LIBMEMUNREACHABLE: {DIRECT: "unreachable"},
    # `leaks` counts each root with the nodes only it holds (`N (size) ROOT LEAK: …`).
    XCODE_LEAKS: {DIRECT: "leaked (roots and what they hold)"},
}


def kind_label(tool: str, kind: str) -> str:
    """`direct` as the tool says it: "definitely lost" (valgrind), "direct leak" (the
    sanitizers), "unreachable" (libmemunreachable)."""
    return _TOOL_KIND_LABELS.get(tool, {}).get(kind) or KIND_LABELS.get(kind, kind)


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
    # A retain cycle (Xcode's `ROOT CYCLE`): counted in its report, but triaged with the app's
    # retain cycles (one cluster, whichever tool found the loop), so in no leak group.
    cycle: bool = False

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
    """One leak check of one process.

    `stated_bytes`/`stated_allocations` and `listed_bytes`/`listed_allocations` are about lost
    memory only (the leaks); still-reachable memory is in `stated_kinds` and `kind_totals()`."""

    tool: str
    process: str = ""
    stated_bytes: int | None = None
    stated_allocations: int | None = None
    stated_records: int | None = None
    records: list[LeakRecord] = field(default_factory=list)
    suppressions: list[Suppression] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)  # ABI, tool version, command line …
    line: int = 0
    # (bytes, blocks) per kind as the tool states them (valgrind's LEAK SUMMARY), with
    # SUPPRESSED; empty when the tool states no figure per kind.
    stated_kinds: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def listed_bytes(self) -> int:
        """The lost memory the records list (still-reachable records left out)."""
        return sum(record.bytes for record in self.records if record.is_unreachable)

    @property
    def listed_allocations(self) -> int:
        return sum(record.allocations for record in self.records if record.is_unreachable)

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
        what it did not list), else the lost records' sum."""
        return self.stated_bytes if self.stated_bytes is not None else self.listed_bytes

    @property
    def unreachable_allocations(self) -> int:
        if self.stated_allocations is not None:
            return self.stated_allocations
        return self.listed_allocations

    def kind_totals(self) -> dict[str, dict[str, int | None]]:
        """Per kind of memory, in LEAK_KINDS order then SUPPRESSED: what the tool states
        (None where it states nothing per kind) and what the records of that kind add up to.
        Kinds neither stated nor listed are left out."""
        totals: dict[str, dict[str, int | None]] = {}
        for kind in (*LEAK_KINDS, SUPPRESSED):
            records = [record for record in self.records if record.kind == kind]
            stated = self.stated_kinds.get(kind)
            if stated is None and not records:
                continue
            totals[kind] = {
                "stated_bytes": stated[0] if stated else None,
                "stated_allocations": stated[1] if stated else None,
                "listed_bytes": sum(record.bytes for record in records),
                "listed_allocations": sum(record.allocations for record in records),
                "records": len(records),
            }
        return totals


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
        for kind, (size, blocks) in report.stated_kinds.items():
            stated[f"{kind} bytes"], stated[f"{kind} blocks"] = size, blocks
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
