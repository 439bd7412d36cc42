"""heaptrack data files (KDE heaptrack, as `heaptrack_interpret` writes them), read the way
heaptrack's own analyzer reads them (`src/analyze/accumulatedtracedata.cpp`), so that the
figures are those `heaptrack_print` prints for the same file.

One record per line, its first character saying what it is, every number in hexadecimal:

- `v <heaptrack version> <file version>`; from file version 3 every string (`s`, `S`) is
  written as `<length> <bytes>`;
- `X <command line>` (the debuggee), `I <page size> <pages>`, `A` (attached to a running
  process), `c <ms>` a timestamp, `R <pages>` the RSS then, `#` a comment;
- `s <string>`: string i (numbered from 1); `S <suppression>`: an LSan suppression
  (`leak:<pattern>`) the program embeds through `__lsan_default_suppressions`;
- `i <ip> <module> [<function> <file> <line> [<function> <file> <line>]…]`: instruction
  pointer i, in the function of the first frame, inlined into the functions of the others
  (innermost first); a frame may carry its function alone;
- `t <ip> <parent>`: trace node i, the ip and its caller's node (0: none). A node whose ip is
  in `operator new` is its caller's node, as heaptrack skips those frames;
- `a <size> <trace>`: allocation info i (numbered from 0);
- `+ <info>` an allocation, `- <info>` its release. File version 0 (heaptrack 1.0) has no `a`
  records: `+ <size> <trace> <pointer>`, `- <pointer>`.

heaptrack's figures: allocations (every `+`), temporary (a `-` right after the `+` of the same
info, nothing between), leaked (bytes still allocated at the end), peak (the most bytes
allocated at once); per trace node the same, its peak being what it held when the whole first
reached the peak. Suppressions zero the leaked bytes of every trace with a matching function,
file or module name anywhere on its stack.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memdash.core.logic.numbers import MAX_INT32, MAX_INT64

OPERATOR_NEW = (
    "operator new(unsigned long)",
    "operator new[](unsigned long)",
    "operator new(unsigned int)",
    "operator new[](unsigned int)",
)
# Backtraces are shown up to the first of these, counting from the allocation.
STOP_FUNCTIONS = ("main", "__libc_start_main", "__static_initialization_and_destruction_0")
HIGHEST_FILE_VERSION = 3  # what heaptrack 1.4 writes (1.2.80 wrote 2)
MODES = frozenset(b"vXIAcR#sSita+-")
HEX_DIGITS = b"0123456789abcdef"


# What only heaptrack's raw stream has (`heaptrack --raw`, or the pipe into heaptrack_interpret):
# `x <executable>` and `m <module> <address> <segments>…` (the process's memory map), its
# trace nodes at raw addresses. heaptrack_interpret resolves those against the program and its
# libraries as they were on the machine that ran it, which memdash does not have.
RAW_MODES = frozenset(b"xm")
RAW_STREAM = (
    "heaptrack's raw stream (`heaptrack --raw`: the process's memory map and raw addresses, "
    "before heaptrack_interpret resolves them against the program and its libraries, which "
    "memdash does not have); on the machine that recorded it, run `zstd -dc < FILE.raw.zst | "
    "heaptrack_interpret | zstd -c > FILE.zst` (heaptrack prints the command) and upload that"
)


class HeaptrackError(ValueError):
    def __init__(self, message: str, line_number: int):
        super().__init__(message)
        self.message = message
        self.path = f"line {line_number}"


@dataclass
class Ip:
    address: int
    module: int  # a string index, 0 for none
    # (function, file, line), innermost first; the first may carry a function alone
    frames: list[tuple[int, int, int]] = field(default_factory=list)


@dataclass
class TraceCost:
    """heaptrack's AllocationData of one trace node."""

    allocations: int = 0
    temporary: int = 0
    leaked: int = 0
    peak: int = 0


@dataclass
class HeaptrackData:
    heaptrack_version: int = 0
    file_version: int = 0
    debuggee: str = ""
    attached: bool = False
    page_size: int = 0
    strings: list[str] = field(default_factory=list)
    ips: list[Ip] = field(default_factory=list)
    traces: list[tuple[int, int]] = field(default_factory=list)  # (ip, parent), 1-based
    infos: list[tuple[int, int]] = field(default_factory=list)  # (size, trace)
    live: list[int] = field(default_factory=list)  # per info: blocks still allocated at the end
    freed: list[int] = field(default_factory=list)  # per info: blocks released
    costs: dict[int, TraceCost] = field(default_factory=dict)  # per trace node
    suppressions: list[str] = field(default_factory=list)
    stop_ips: set[int] = field(default_factory=set)
    allocations: int = 0
    temporary: int = 0
    leaked: int = 0  # after the suppressions
    suppressed: int = 0
    peak: int = 0
    peak_rss_pages: int = 0
    total_time_ms: int = 0
    untracked_frees: int = 0  # releases of blocks allocated before tracking began
    # When things happened (`heaptrack_timeline`): every `+` and `-` in order (info i allocated:
    # i; released: ~i), the `c` timestamps as (events before it, ms), and the releases of
    # blocks allocated before tracking began (their index among the events).
    events: list[int] = field(default_factory=list)
    clock: list[tuple[int, int]] = field(default_factory=list)
    untracked: list[int] = field(default_factory=list)

    def string(self, index: int) -> str:
        return self.strings[index - 1] if 0 < index <= len(self.strings) else ""


class _Line:
    """heaptrack's LineReader over one line: hexadecimal numbers and (sized) strings."""

    def __init__(self, text: bytes, number: int):
        self.text = text
        self.number = number
        self.fields = text[2:].split(b" ") if len(text) > 2 else []
        self.at = 0

    def hex(self, what: str) -> int:
        if self.at >= len(self.fields):
            raise HeaptrackError(f"`{chr(self.text[0])}` record without its {what}", self.number)
        token = self.fields[self.at]
        self.at += 1
        return hex_number(token, what, self.number)

    def has_more(self) -> bool:
        return self.at < len(self.fields)

    def rest(self, sized: bool) -> str:
        """The rest of the line as a string (v3: `<length> <bytes>`, the length in bytes)."""
        raw = self.text[2:]
        if sized:
            length_text, _, body = raw.partition(b" ")
            try:
                length = int(length_text, 16)
            except ValueError:
                raise HeaptrackError("a string without its length", self.number) from None
            if length > len(body):
                raise HeaptrackError(
                    f"a string of {length} bytes, but the line has {len(body)}", self.number
                )
            raw = body[:length]
        if b"\0" in raw:
            raise HeaptrackError("a string with a NUL character", self.number)
        return raw.decode("utf-8", errors="replace")


def hex_number(token: bytes, what: str, line_number: int) -> int:
    """A number as heaptrack writes it: lower-case hexadecimal digits, nothing else."""
    if not token or token.strip(HEX_DIGITS):
        text = token[:20].decode("utf-8", errors="replace")
        raise HeaptrackError(f"{what} must be a hexadecimal number, found {text!r}", line_number)
    return int(token, 16)


def read(content: bytes) -> HeaptrackData:
    """The data of a heaptrack file (decompressed); raises HeaptrackError with its line."""
    reader = _Reader()
    for number, text in enumerate(content.split(b"\n"), start=1):
        mode = text[:2]
        if mode == b"+ " and reader.indexed:  # the bulk of a file: `+ <info>`, `- <info>`
            reader.allocate(hex_number(text[2:], "allocation info", number), number)
        elif mode == b"- " and reader.indexed:
            reader.release(hex_number(text[2:], "allocation info", number), number)
        elif mode == b"t ":
            ip, _, parent = text[2:].partition(b" ")
            reader.trace(hex_number(ip, "ip", number), hex_number(parent, "parent", number), number)
        else:
            reader.record(text, number)
    return reader.finish()


class _Reader:
    def __init__(self) -> None:
        self.data = HeaptrackData()
        self.op_new_strings = set(OPERATOR_NEW)
        self.stop_strings = set(STOP_FUNCTIONS)
        self.op_new_string_ids: set[int] = set()
        self.stop_string_ids: set[int] = set()
        self.op_new_ips: set[int] = set()
        self.seen_version = self.seen_debuggee = False
        self.indexed = False  # file version 1 and later: `+`/`-` name an allocation info
        self.timestamp = 0
        self.last = 0  # heaptrack's lastAllocationPtr: the last `+`'s info (v0: its pointer)
        self.events = self.data.events  # info i allocated: i; released: ~i
        self.peak_event = -1  # where the running total first reached the peak
        self.allocated_bytes = 0
        # file version 0: infos by (size, trace), live pointers to their info
        self.info_of: dict[tuple[int, int], int] = {}
        self.pointers: dict[int, int] = {}

    def record(self, text: bytes, number: int) -> None:
        if not text or text[0] == 0x23:  # '#': a comment (heaptrack reads "" as one too)
            return
        mode = text[0]
        if mode in RAW_MODES and text[1:2] == b" ":
            raise HeaptrackError(RAW_STREAM, number)
        if mode not in MODES or (len(text) > 1 and text[1] != 0x20):
            raise HeaptrackError(
                f"not a heaptrack record: {text[:40].decode('utf-8', 'replace')!r}", number
            )
        line = _Line(text, number)
        data = self.data
        if mode == 0x2B:  # '+' of file version 0: `+ <size> <trace> <pointer>`
            size, trace, pointer = line.hex("size"), line.hex("trace"), line.hex("pointer")
            key = (size, trace)
            if key not in self.info_of:
                self.info_of[key] = self.add_info(size, trace, number)
            self.pointers[pointer] = self.info_of[key]
            self.allocate(self.info_of[key], number)
            self.last = pointer
        elif mode == 0x2D:  # '-' of file version 0: `- <pointer>`
            pointer = line.hex("pointer")
            if pointer in self.pointers:  # else allocated before heaptrack attached: skipped
                self.release(self.pointers.pop(pointer), number, temporary=self.last == pointer)
        elif mode == 0x74:  # 't'
            self.trace(line.hex("ip"), line.hex("parent"), number)
        elif mode == 0x61:  # 'a'
            size, trace = line.hex("size"), line.hex("trace")
            self.add_info(size, trace, number)
        elif mode == 0x69:  # 'i'
            self.instruction_pointer(line)
        elif mode == 0x73:  # 's'
            self.add_string(line.rest(data.file_version >= 3))
        elif mode == 0x63:  # 'c'
            self.timestamp = line.hex("time")
            data.clock.append((len(self.events), self.timestamp))
        elif mode == 0x52:  # 'R'
            data.peak_rss_pages = max(data.peak_rss_pages, line.hex("RSS"))
        elif mode == 0x76:  # 'v'
            self.version(line)
        elif mode == 0x58:  # 'X'
            if self.seen_debuggee:
                raise HeaptrackError("a second debuggee (`X`) record", number)
            self.seen_debuggee = True
            data.debuggee = text[2:].decode("utf-8", errors="replace")
        elif mode == 0x49:  # 'I'
            data.page_size = line.hex("page size")
        elif mode == 0x41:  # 'A'
            data.attached = True
        elif mode == 0x53:  # 'S'
            suppression = line.rest(data.file_version >= 3).strip()
            if suppression.startswith("leak:"):
                data.suppressions.append(suppression[5:])

    def trace(self, ip: int, parent: int, number: int) -> None:
        data = self.data
        if ip > len(data.ips) or parent > len(data.traces):
            raise HeaptrackError("a trace node refers to a record not read yet", number)
        while ip in self.op_new_ips:  # skip operator new at the top of a trace
            ip, parent = data.traces[parent - 1] if parent else (0, 0)
        data.traces.append((ip, parent))

    def version(self, line: _Line) -> None:
        data = self.data
        data.heaptrack_version = line.hex("heaptrack version")
        data.file_version = line.hex("file version") if line.has_more() else 0
        if not line.has_more() and data.heaptrack_version == 0x010200:
            data.file_version = 1  # heaptrack 1.0.0 wrote its own version here
        if data.file_version > HIGHEST_FILE_VERSION:
            raise HeaptrackError(
                f"file format version {data.file_version} is newer than memdash reads "
                f"(up to {HIGHEST_FILE_VERSION}, as heaptrack 1.4 writes)",
                line.number,
            )
        self.seen_version = True
        self.indexed = data.file_version >= 1

    def add_string(self, text: str) -> None:
        data = self.data
        data.strings.append(text)
        index = len(data.strings)
        if text in self.op_new_strings:
            self.op_new_strings.discard(text)
            self.op_new_string_ids.add(index)
        elif text in self.stop_strings:
            self.stop_strings.discard(text)
            self.stop_string_ids.add(index)

    def instruction_pointer(self, line: _Line) -> None:
        data = self.data
        ip = Ip(address=line.hex("address"), module=line.hex("module"))
        if ip.address >= 1 << 64:
            raise HeaptrackError("the address does not fit in 64 bits", line.number)
        while line.has_more():
            function = line.hex("function")
            if not line.has_more():  # heaptrack keeps a function read without its file
                if not ip.frames:
                    ip.frames.append((function, 0, 0))
                break
            file, number = line.hex("file"), line.hex("line") if line.has_more() else -1
            if number < 0:
                if not ip.frames:
                    ip.frames.append((function, file, 0))
                break
            ip.frames.append((function, file, number))
        for function, file, number in [(ip.module, 0, 0), *ip.frames]:
            if max(function, file) > len(data.strings):
                raise HeaptrackError(
                    "an instruction pointer names a string not read yet", line.number
                )
            if number > MAX_INT32:
                raise HeaptrackError("a line number does not fit in 32 bits", line.number)
        data.ips.append(ip)
        if ip.frames and ip.frames[0][0] in self.op_new_string_ids:
            self.op_new_ips.add(len(data.ips))
        if ip.frames and ip.frames[0][0] in self.stop_string_ids:
            data.stop_ips.add(len(data.ips))

    def add_info(self, size: int, trace: int, number: int) -> int:
        data = self.data
        if size > MAX_INT64:
            raise HeaptrackError("the size does not fit in 64 bits", number)
        if trace > len(data.traces):
            raise HeaptrackError(f"allocation info of trace node {trace:x}, not read yet", number)
        data.infos.append((size, trace))
        data.live.append(0)
        data.freed.append(0)
        data.costs.setdefault(trace, TraceCost())
        return len(data.infos) - 1

    def allocate(self, info: int, number: int) -> None:
        data = self.data
        if info >= len(data.infos):
            raise HeaptrackError(f"allocation info {info:x} is not defined", number)
        self.last = info
        size, trace = data.infos[info]
        self.allocated_bytes += size
        if self.allocated_bytes > MAX_INT64:
            raise HeaptrackError("more bytes allocated than 64 bits count", number)
        data.live[info] += 1
        self.events.append(info)
        data.allocations += 1
        data.leaked += size
        if data.leaked > data.peak:
            data.peak = data.leaked
            self.peak_event = len(self.events) - 1
        cost = data.costs[trace]
        cost.allocations += 1
        cost.leaked += size

    def release(self, info: int, number: int, temporary: bool | None = None) -> None:
        """A `-`: temporary when it follows the `+` of the same info (v0: pointer) at once."""
        data = self.data
        if info >= len(data.infos):
            raise HeaptrackError(f"allocation info {info:x} is not defined", number)
        if temporary is None:
            temporary = self.last == info
        self.last = 0
        size, trace = data.infos[info]
        if data.live[info]:
            data.live[info] -= 1
            data.freed[info] += 1
        else:
            data.untracked_frees += 1
            data.untracked.append(len(self.events))
        self.events.append(~info)
        data.leaked -= size
        cost = data.costs[trace]
        cost.leaked -= size
        if temporary:
            data.temporary += 1
            cost.temporary += 1

    def finish(self) -> HeaptrackData:
        data = self.data
        if not self.seen_version:
            raise HeaptrackError("no `v` (version) record: not a heaptrack data file", 1)
        data.total_time_ms = self.timestamp + 1
        # Each trace's peak: what it held when the total first reached the peak.
        held: dict[int, int] = {}
        for event in self.events[: self.peak_event + 1]:
            size, trace = data.infos[event if event >= 0 else ~event]
            held[trace] = held.get(trace, 0) + (size if event >= 0 else -size)
        for trace, amount in held.items():
            data.costs[trace].peak = amount
        apply_suppressions(data)
        return data


def template_match(template: str, text: str) -> bool:
    """The sanitizers' TemplateMatch, as heaptrack copies it: `*` any run, `^` and `$` anchors,
    each literal part found at its first occurrence."""
    if not text:
        return False
    start = template.startswith("^")
    if start:
        template = template[1:]
    asterisk = False
    while template:
        if template[0] == "*":
            template, start, asterisk = template[1:], False, True
            continue
        if template[0] == "$":
            return not text or asterisk
        if not text:
            return False
        ends = [i for i in (template.find("*"), template.find("$")) if i >= 0]
        cut = min(ends) if ends else len(template)
        part, template = template[:cut], template[cut:]
        found = text.find(part)
        if found < 0 or (start and found != 0):
            return False
        text = text[found + len(part) :]
        start = asterisk = False
    return True


def apply_suppressions(data: HeaptrackData) -> None:
    """heaptrack's applyLeakSuppressions: a trace is suppressed when any ip on it (up to the
    root) has a module, function or file name that matches; its leaked bytes are not counted."""
    if not data.suppressions:
        return
    matched_strings = {
        index
        for index, text in enumerate(data.strings, start=1)
        if any(p == text or template_match(p, text) for p in data.suppressions)
    }
    if not matched_strings:
        return
    suppressed_ips = {
        index
        for index, ip in enumerate(data.ips, start=1)
        if ip.module in matched_strings
        or any(f in matched_strings or file in matched_strings for f, file, _ in ip.frames)
    }
    suppressed_traces: list[bool] = [False]
    for ip, parent in data.traces:
        suppressed_traces.append(suppressed_traces[parent] or ip in suppressed_ips)
    for trace, cost in data.costs.items():
        if suppressed_traces[trace]:
            data.suppressed += cost.leaked
            data.leaked -= cost.leaked
            cost.leaked = 0
