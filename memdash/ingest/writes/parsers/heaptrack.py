"""heaptrack data files (KDE heaptrack on Linux and the Android NDK) as memdash snapshots.

The file (`heaptrack.<program>.<pid>.zst` or `.gz`, text once decompressed) is read by
`heaptrack_data` exactly as heaptrack's analyzer reads it; then:

- each allocation info (a block size at a trace) is an allocation row: category `Malloc <size>`
  (as Instruments names heap blocks), # Persistent / Persistent Bytes = its blocks still
  allocated at the end (heaptrack's "leaked", before suppressions), # Transient / Transient
  Bytes = its blocks released; # Total = heaptrack's "allocations";
- the stack is the trace node's path, outermost first, from `main` (heaptrack shows backtraces
  up to `main`, `__libc_start_main` or `__static_initialization_and_destruction_0`, counting from
  the allocation, and skips `operator new`); an instruction pointer with inlined functions gives
  one frame per function, the caller first; a frame without a function is its address in its
  module (`0x… in libfoo.so`);
- each module is an image named by its file name; `/lib/…`, `/usr/lib/…`, `/system/…` and
  `/apex/…` modules are system images.

heaptrack's own totals, as `heaptrack_print --disable-builtin-suppressions` prints them, are
added to the upload's counts: allocations, temporary allocations, peak heap bytes, leaked bytes
(after the program's embedded suppressions), suppressed bytes, peak RSS, runtime; and kept on
the snapshot in heaptrack_print's words (`tool_figures`), shown on its page. heaptrack's built-in
suppressions (known leaks of glibc and glib) are not applied: they are heaptrack's opinion,
varying with its version, and the memory they cover is still allocated.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

import numpy as np

from memdash.allocations.logic.analysis import TimedKey
from memdash.allocations.logic.columns import NONE, BlockColumns, RowColumns
from memdash.allocations.logic.document.parse import ParsedSnapshot, TimelineParts, parse_snapshot
from memdash.core.logic.errors import InvalidUpload
from memdash.core.logic.reading import ZSTD_MAGIC, unzstd_limited, unzstd_prefix
from memdash.core.logic.units import malloc_category
from memdash.ingest.logic import heaptrack_data
from memdash.ingest.logic.heaptrack_timeline import HeaptrackTimeline, heaptrack_timeline
from memdash.ingest.logic.monitor_common import SnapshotBuilder, build_section, document_header
from memdash.ingest.writes.parse_memory import decompress_within_budget
from memdash.ingest.writes.parsers.pprof import SYSTEM_PATH_PREFIXES
from memdash.ingest.writes.parsers.snapshot import figures_handler, tool_figure

FORMAT_NAME = "heaptrack"
DESCRIPTION = "heaptrack data file (`heaptrack.<program>.<pid>.zst` or `.gz`)"
# The content's own cap (the body's was applied to the compressed file).
UNZSTD_LIMIT = 1024 * 1024 * 1024
VERSION_LINE_RE = re.compile(rb"v [0-9a-f]+(?: [0-9a-f]+)?\r?(?:\n|$)")


def detect(raw: bytes, doc: Any) -> bool:
    prefix = unzstd_prefix(raw, 64) if raw.startswith(ZSTD_MAGIC) else raw[:64]
    return VERSION_LINE_RE.match(prefix) is not None


def content_of(raw: bytes) -> bytes:
    """The text of the data file (a gzip body was decompressed on receipt)."""
    if raw.startswith(ZSTD_MAGIC):
        return decompress_within_budget(  # the lesser of its cap and what a worker may parse
            FORMAT_NAME, UNZSTD_LIMIT, lambda cap: unzstd_limited(raw, cap, "content")
        )
    return raw


def convert(
    raw: bytes, doc: Any, meta_fields: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, int]]:
    """The snapshot document of a heaptrack file, and heaptrack's own figures for it."""
    document, counts, _data, _stacks = _converted(raw, meta_fields)
    return document, counts


def convert_timed(
    raw: bytes, doc: Any, meta_fields: dict[str, Any]
) -> tuple[ParsedSnapshot, dict[str, int]]:
    """The snapshot of a heaptrack file as stored: its document validated, with its rows by the
    time bucket their blocks were made in and what ended in each (its timeline, as the events
    shape's: `heaptrack_timeline`); and heaptrack's own figures."""
    document, counts, data, stack_of_info = _converted(raw, meta_fields)
    parsed = parse_snapshot(document)
    timeline = heaptrack_timeline(data)
    timed: dict[TimedKey, list[int]] = {}
    infos = data.infos
    rows = zip(timeline.info.tolist(), timeline.bucket.tolist(), timeline.counts.tolist(),
               strict=True)  # fmt: skip
    for info, bucket, counts_of_row in rows:
        key = (malloc_category(infos[info][0]), stack_of_info[info], None, None, bucket)
        acc = timed.setdefault(key, [0, 0, 0, 0])
        for k in range(4):
            acc[k] += counts_of_row[k]
    parsed.columns, parsed.rows = RowColumns.from_timed(timed), {}
    parsed.timeline = TimelineParts(timeline.buckets, timeline.ended)
    parsed.block_columns = _blocks(timeline, infos, stack_of_info)
    return parsed, counts


def _blocks(
    timeline: HeaptrackTimeline, infos: list[tuple[int, int]], stack_of_info: list[int | None]
) -> BlockColumns:
    """Every allocation (`+`) one by one, as the list shows them: its info's category, stack
    and size, when made and released (the file has no address)."""
    used = np.unique(timeline.block_info).tolist()
    names = sorted({malloc_category(infos[i][0]) for i in used})
    at = {name: k for k, name in enumerate(names)}
    category = np.full(len(infos), NONE, dtype=np.int64)
    stack = np.full(len(infos), NONE, dtype=np.int64)
    size = np.zeros(len(infos), dtype=np.int64)
    for i in used:
        category[i] = at[malloc_category(infos[i][0])]
        stack[i] = NONE if stack_of_info[i] is None else stack_of_info[i]
        size[i] = infos[i][0]
    of = timeline.block_info
    return BlockColumns(
        names, category[of], stack[of], size[of], timeline.block_made, timeline.block_freed
    )


def _converted(
    raw: bytes, meta_fields: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, int], heaptrack_data.HeaptrackData, list[int | None]]:
    """The document, the figures, the data read and the stack node of each allocation info."""
    build = build_section(meta_fields, "heaptrack data file")
    try:
        data = heaptrack_data.read(content_of(raw))
    except heaptrack_data.HeaptrackError as exc:
        if exc.message == heaptrack_data.RAW_STREAM:
            raise InvalidUpload(f"not a heaptrack data file yet: {exc.message}", exc.path) from exc
        raise InvalidUpload(
            f"heaptrack data file, reading stopped: {exc.message}; send the file "
            "`heaptrack` wrote (`.zst` or `.gz`) as it is",
            exc.path,
        ) from exc
    builder, stack_of_info = snapshot_content(data)
    header = document_header(meta_fields, build=build, captured_at=None, trigger="manual")
    return builder.document(header), figures(data), data, stack_of_info


def figures(data: heaptrack_data.HeaptrackData) -> dict[str, int]:
    counts = {
        "heaptrack_allocations": data.allocations,
        "heaptrack_temporary": data.temporary,
        "heaptrack_peak_bytes": data.peak,
        "heaptrack_leaked_bytes": data.leaked,
        "heaptrack_suppressed_bytes": data.suppressed,
        "heaptrack_peak_rss_bytes": data.peak_rss_pages * data.page_size,
        "heaptrack_runtime_ms": data.total_time_ms,
    }
    if data.untracked_frees:
        counts["heaptrack_untracked_frees"] = data.untracked_frees
    return counts


# heaptrack_print's summary, in its order and words: (label, count, unit, shown when 0)
PRINTED = [
    ("total runtime", "heaptrack_runtime_ms", "ms", True),
    ("calls to allocation functions", "heaptrack_allocations", "count", True),
    ("temporary memory allocations", "heaptrack_temporary", "count", True),
    ("peak heap memory consumption", "heaptrack_peak_bytes", "bytes", True),
    ("peak RSS (including heaptrack overhead)", "heaptrack_peak_rss_bytes", "bytes", False),
    ("total memory leaked", "heaptrack_leaked_bytes", "bytes", True),
    ("suppressed leaks", "heaptrack_suppressed_bytes", "bytes", False),
]


def tool_figures(counts: dict[str, int]) -> dict[str, dict[str, Any]]:
    """What `heaptrack_print` prints for the file, kept on the snapshot: the peak RSS when the
    file records it, the suppressed leaks when there are any (heaptrack_print omits both
    otherwise)."""
    return {
        label: tool_figure(order, counts[key], unit)
        for order, (label, key, unit, always) in enumerate(PRINTED)
        if always or counts[key]
    }


def snapshot_content(
    data: heaptrack_data.HeaptrackData,
) -> tuple[SnapshotBuilder, list[int | None]]:
    """The document's content, and the stack node of each allocation info."""
    builder = SnapshotBuilder()
    frames_of_ip: dict[int, list[int]] = {}
    node_of_trace: dict[int, int | None] = {0: None}

    def image_of(module: int) -> int | None:
        if not module:
            return None
        path = data.string(module)
        entry: dict[str, Any] = {"name": posixpath.basename(path) or path or "(unknown image)"}
        if path.startswith(SYSTEM_PATH_PREFIXES) or (path.startswith("[") and path.endswith("]")):
            entry["system"] = True
        return builder.image(module, entry)

    def ip_frames(ip_index: int) -> list[int]:
        """The frames of an instruction pointer, outermost (the function it is inlined into)
        first."""
        if ip_index not in frames_of_ip:
            ip = data.ips[ip_index - 1]
            image = image_of(ip.module)
            indices = []
            for function, file, line in ip.frames or [(0, 0, 0)]:
                entry: dict[str, Any] = {"address": ip.address}
                if image is not None:
                    entry["image"] = image
                if data.string(function):
                    entry["symbol"] = data.string(function)
                if data.string(file):
                    entry["file"] = data.string(file)
                    if line:
                        entry["line"] = line
                indices.append(builder.frame(entry))
            frames_of_ip[ip_index] = list(reversed(indices))
        return frames_of_ip[ip_index]

    def stack_node(trace: int) -> int | None:
        """The node of a trace: its ip's frames below its caller's node, from the nearest
        stop function (main) on the way up."""
        pending = []
        base: int | None = None
        while trace not in node_of_trace:
            pending.append(trace)
            ip, parent = data.traces[trace - 1]
            if ip in data.stop_ips:
                break  # heaptrack shows no frame above main
            trace = parent
        else:
            base = node_of_trace[trace]
        for trace in reversed(pending):
            ip = data.traces[trace - 1][0]
            base = builder.stack(ip_frames(ip), base) if ip else base
            node_of_trace[trace] = base
        return base

    stack_of_info: list[int | None] = []
    for info, (size, trace) in enumerate(data.infos):
        live, freed = data.live[info], data.freed[info]
        stack_of_info.append(stack_node(trace) if live or freed else None)
        if not (live or freed):
            continue
        builder.add_row(
            malloc_category(size),
            stack=stack_node(trace),
            persistent=live,
            persistent_bytes=live * size,
            transient=freed,
            transient_bytes=freed * size,
        )
    return builder, stack_of_info


HANDLER = figures_handler(FORMAT_NAME, DESCRIPTION, detect, convert_timed, tool_figures)
