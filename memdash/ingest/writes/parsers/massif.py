"""valgrind massif output (`massif.out.<pid>`) as a memdash snapshot whose generations are
massif's snapshots, read as `ms_print` reads the file, so that each generation's figures are
the ones ms_print prints.

The file: `desc:` lines, `cmd:`, `time_unit: i|ms|B`, then each snapshot as `snapshot=N`,
`time=`, `mem_heap_B=`, `mem_heap_extra_B=`, `mem_stacks_B=`, `heap_tree=empty|detailed|peak`,
and for a detailed (or the peak) snapshot its heap tree, one node a line,
`n<children>: <bytes> <what>`, each followed by its children. The root is the heap allocation
functions; below it each node is the function that called its parent (`0x…: fn (file:line)` or
`(in /lib/object.so)`), so a path from the root goes from the allocation outwards; a node of
`N places, below massif's threshold` folds the small ones. `#` starts a comment (ms_print
ignores the rest of such a line); blank lines are skipped.

Mapping: every massif snapshot is a generation, in order, named `snapshot N` (`(detailed)`,
`(peak)` as ms_print marks them); its rows are what was allocated at that moment:
- `useful heap`: for each tree node its own bytes (its bytes less its named children's) at its
  stack, the path reversed to memdash's outermost-first order; what the tree does not place
  (an empty snapshot's heap, the root's own bytes) has no stack;
- `extra heap` (`mem_heap_extra_B`: the allocator's headers and alignment) and `VM: Stack`
  (`mem_stacks_B`, with `--stacks=yes`), without stacks.
Massif counts bytes, not blocks: the counts are 0. So a generation's Persistent Bytes is
ms_print's total(B) of that snapshot, and the generations chart is massif's graph; the whole
snapshot's totals add up every massif snapshot and are no heap size: open a generation.
Times: `ms` is the generation's time; for instructions (`i`) and bytes (`B`) the time is in the
generation's name and its time is 0.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from memdash.core.logic.errors import InvalidUpload
from memdash.core.logic.numbers import MAX_INT64
from memdash.ingest.logic.monitor_common import SnapshotBuilder, build_section, document_header
from memdash.ingest.writes.parsers.pprof import SYSTEM_PATH_PREFIXES
from memdash.ingest.writes.parsers.snapshot import figures_handler, tool_figure

FORMAT_NAME = "massif"
DESCRIPTION = "valgrind massif output (`massif.out.<pid>`)"
USEFUL_HEAP = "useful heap"
EXTRA_HEAP = "extra heap"
STACKS = "VM: Stack"
TIME_UNITS = {"i": "instructions", "ms": "ms", "B": "bytes allocated"}
TIME_COUNTS = {"i": "instructions", "ms": "ms", "B": "bytes"}  # massif_peak_time_<…> counts
HEADER_RE = re.compile(rb"\A(?:desc:[^\n]*\n)*cmd:[^\n]*\ntime_unit: *(?:i|ms|B)\s*\n")
NODE_RE = re.compile(r"^\s*n(\d+):\s*(\d+)(.*)$")
FRAME_RE = re.compile(r"^\s*0x([0-9A-Fa-f]+): (.*?)(?: \((?:in (.+)|([^()]*):(\d+))\))?\s*$")
SNAPSHOT_FIELDS = ("time", "mem_heap_B", "mem_heap_extra_B", "mem_stacks_B")


@dataclass
class Node:
    bytes: int
    line_number: int
    frame: dict[str, Any] | None  # None: the root, or a fold of nodes below the threshold
    children: list[Node] = field(default_factory=list)


@dataclass
class MassifSnapshot:
    number: int
    time: int
    heap: int
    extra: int
    stacks: int
    tree_kind: str  # empty, detailed or peak
    tree: Node | None = None

    @property
    def total(self) -> int:
        return self.heap + self.extra + self.stacks


@dataclass
class MassifFile:
    command: str
    time_unit: str
    snapshots: list[MassifSnapshot] = field(default_factory=list)


def detect(raw: bytes, doc: Any) -> bool:
    return HEADER_RE.match(raw[:8192].replace(b"\r\n", b"\n")) is not None


class _Lines:
    """ms_print's get_line: the next line that is not blank once its comment is removed."""

    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.at = 0

    @property
    def number(self) -> int:
        return self.at

    def next(self, tree_node: bool = False) -> str | None:
        while self.at < len(self.lines):
            line = self.lines[self.at]
            self.at += 1
            if not tree_node or line.lstrip().startswith("#"):
                line = line.split("#", 1)[0]  # a tree node keeps a `#` in a function name
            if line.strip():
                return line
        return None

    def fail(self, message: str) -> InvalidUpload:
        return InvalidUpload(f"massif output, reading stopped: {message}", f"line {self.at}")


def parse(text: str) -> MassifFile:
    lines = _Lines(text)
    line = lines.next()
    while line is not None and line.startswith("desc:"):
        line = lines.next()
    if line is None or not line.startswith("cmd:"):
        raise lines.fail("expected the `cmd:` line after `desc:`")
    command = line[4:].strip()
    line = lines.next()
    match = re.match(r"^time_unit:\s*(.*?)\s*$", line or "")
    if match is None or match[1] not in TIME_UNITS:
        raise lines.fail("expected `time_unit: i`, `ms` or `B`")
    massif = MassifFile(command=command, time_unit=match[1])
    line = lines.next()
    while line is not None:
        massif.snapshots.append(read_snapshot(lines, line, massif))
        line = lines.next()
    return massif


def number_field(lines: _Lines, line: str | None, name: str) -> int:
    match = re.match(rf"^{name}=(\d+)\s*$", line or "")
    if match is None:
        raise lines.fail(f"expected `{name}=<number>`")
    value = int(match[1])
    if value > MAX_INT64:
        raise lines.fail(f"{name} does not fit in 64 bits")
    return value


def read_snapshot(lines: _Lines, line: str, massif: MassifFile) -> MassifSnapshot:
    number = number_field(lines, line, "snapshot")
    time, heap, extra, stacks = (number_field(lines, lines.next(), f) for f in SNAPSHOT_FIELDS)
    match = re.match(r"^heap_tree=(empty|detailed|peak)\s*$", lines.next() or "")
    if match is None:
        raise lines.fail("expected `heap_tree=empty`, `detailed` or `peak`")
    previous = massif.snapshots[-1] if massif.snapshots else None
    if previous is not None and time < previous.time:
        raise lines.fail(f"snapshot {number} is earlier than snapshot {previous.number}")
    snapshot = MassifSnapshot(number, time, heap, extra, stacks, match[1])
    if snapshot.tree_kind != "empty":
        snapshot.tree = read_tree(lines)
    return snapshot


def read_tree(lines: _Lines) -> Node:
    """A heap tree: each node line followed by its children's (read without recursion)."""
    root: Node | None = None
    open_nodes: list[tuple[Node, int]] = []  # (node, children still to read)
    while root is None or open_nodes:
        line = lines.next(tree_node=True)
        match = NODE_RE.match(line or "")
        if match is None:
            raise lines.fail("expected a heap tree node `n<children>: <bytes> …`")
        node = Node(int(match[2]), lines.number, None if root is None else frame_of(match[3]))
        if node.bytes > MAX_INT64:
            raise lines.fail("the bytes do not fit in 64 bits")
        if root is None:
            root = node
        else:
            parent, left = open_nodes.pop()
            parent.children.append(node)
            if left > 1:
                open_nodes.append((parent, left - 1))
        if int(match[1]):
            open_nodes.append((node, int(match[1])))
    return root


def frame_of(details: str) -> dict[str, Any] | None:
    """The frame of a node's `0x…: function (location)`; None for a fold below the threshold."""
    match = FRAME_RE.match(details)
    if match is None:
        return None
    address, function, obj, file, line = match.groups()
    entry: dict[str, Any] = {"address": int(address, 16)}
    if function and function != "???":
        entry["symbol"] = function
    if obj:
        entry["image"] = obj
    elif file:
        entry["file"] = file
        entry["line"] = min(int(line), 2**31 - 1)
    return entry


def convert(
    raw: bytes, doc: Any, meta_fields: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, int]]:
    """The snapshot document of a massif file, and ms_print's own figures for it."""
    build = build_section(meta_fields, "massif output")
    if b"\0" in raw:
        raise InvalidUpload("massif output, reading stopped: a NUL character", "content")
    massif = parse(raw.decode("utf-8", errors="replace"))
    builder = SnapshotBuilder()
    peak = None
    for snapshot in massif.snapshots:
        if snapshot.tree_kind == "peak":
            peak = snapshot
        add_generation(builder, snapshot, massif.time_unit)
    header = document_header(meta_fields, build=build, captured_at=None, trigger="manual")
    counts = {
        "massif_snapshots": len(massif.snapshots),
        "massif_detailed_snapshots": sum(s.tree is not None for s in massif.snapshots),
    }
    if peak is not None:
        counts.update(
            massif_peak_snapshot=peak.number,
            massif_peak_bytes=peak.total,
            massif_peak_useful_heap_bytes=peak.heap,
            massif_peak_extra_heap_bytes=peak.extra,
            massif_peak_stacks_bytes=peak.stacks,
        )
        counts[f"massif_peak_time_{TIME_COUNTS[massif.time_unit]}"] = peak.time
    return builder.document(header), counts


def tool_figures(counts: dict[str, int]) -> dict[str, dict[str, Any]]:
    """ms_print's figures, kept on the snapshot: the number of snapshots, of detailed ones, and
    the peak's row of its table (snapshot number, time, total, useful heap, extra heap, stacks)."""
    figures = {
        "number of snapshots": counts["massif_snapshots"],
        "detailed snapshots": counts["massif_detailed_snapshots"],
    }
    units = {}
    if "massif_peak_snapshot" in counts:
        figures["peak snapshot"] = counts["massif_peak_snapshot"]
        for unit, name in TIME_COUNTS.items():
            key = f"massif_peak_time_{name}"
            if key in counts:
                label = "peak time" if unit == "ms" else f"peak time ({TIME_UNITS[unit]})"
                figures[label] = counts[key]
                units[label] = {"i": "count", "ms": "ms", "B": "bytes"}[unit]
        for label, key in (
            ("peak total", "massif_peak_bytes"),
            ("peak useful heap", "massif_peak_useful_heap_bytes"),
            ("peak extra heap", "massif_peak_extra_heap_bytes"),
            ("peak stacks", "massif_peak_stacks_bytes"),
        ):
            figures[label] = counts[key]
            units[label] = "bytes"
    return {
        label: tool_figure(order, value, units.get(label, "count"))
        for order, (label, value) in enumerate(figures.items())
    }


def add_generation(builder: SnapshotBuilder, snapshot: MassifSnapshot, time_unit: str) -> None:
    name = f"snapshot {snapshot.number}"
    if snapshot.tree is not None:
        name += " (peak)" if snapshot.tree_kind == "peak" else " (detailed)"
    if time_unit == "ms":
        generation = builder.generation(name, snapshot.time)
    else:
        generation = builder.generation(f"{name}, {snapshot.time:,} {TIME_UNITS[time_unit]}", 0)
    placed = 0
    if snapshot.tree is not None:
        placed = add_tree(builder, snapshot.tree, generation)
    if placed > snapshot.heap:
        raise InvalidUpload(
            f"massif output: the heap tree of snapshot {snapshot.number} places {placed} "
            f"bytes, more than its mem_heap_B {snapshot.heap}",
            f"line {snapshot.tree.line_number if snapshot.tree else 0}",
        )
    for category, amount, stack in (
        (USEFUL_HEAP, snapshot.heap - placed, None),
        (EXTRA_HEAP, snapshot.extra, None),
        (STACKS, snapshot.stacks, None),
    ):
        builder.add_row(category, stack=stack, generation=generation, persistent_bytes=amount)


def add_tree(builder: SnapshotBuilder, root: Node, generation: int) -> int:
    """Rows for the named nodes of a heap tree; the bytes they place."""
    placed = 0
    pending: list[tuple[Node, list[int]]] = [(root, [])]  # path: frames, allocation first
    while pending:
        node, path = pending.pop()
        named = [child for child in node.children if child.frame is not None]
        own = node.bytes - sum(child.bytes for child in named)
        if own < 0:
            raise InvalidUpload(
                f"massif output: the callers of this node add up to more than its {node.bytes} "
                "bytes",
                f"line {node.line_number}",
            )
        if path and own:
            stack = builder.stack(list(reversed(path)))
            builder.add_row(USEFUL_HEAP, stack=stack, generation=generation, persistent_bytes=own)
            placed += own
        for child in named:
            assert child.frame is not None
            pending.append((child, [*path, frame_index(builder, child.frame)]))
    return placed


def frame_index(builder: SnapshotBuilder, frame: dict[str, Any]) -> int:
    entry = dict(frame)
    obj = entry.pop("image", None)
    if obj is not None:
        image: dict[str, Any] = {"name": posixpath.basename(obj) or obj}
        if obj.startswith(SYSTEM_PATH_PREFIXES):
            image["system"] = True
        entry["image"] = builder.image(obj, image)
    return builder.frame(entry)


HANDLER = figures_handler(FORMAT_NAME, DESCRIPTION, detect, convert, tool_figures)
