"""What processing an upload costs a worker in memory, known before anything is parsed.

A worker's peak while it processes an upload (gunzip, parse, convert, validate, store:
`tasks.process_upload`) grows with the content's decompressed size by a factor that depends on
the format: `FACTORS`, measured by `bench/parse_memory.py` (docs/scaling.md, "Memory"; the
marginal cost of a byte, rounded up). The estimate is size × factor; past
`MEMDASH_MAX_PARSE_MEMORY_BYTES` the upload is refused (413) and nothing is parsed:

- while it is read, on receipt (`services.receive_upload`: its digest, streaming, nothing kept)
  and in the worker (`tasks.process_upload`) alike, before any parser: the content is read no
  further than the setting ÷ the factor of the cheapest format its first bytes leave possible
  (`cap`, `formats.content_cap`: a JSON document whose head names no format, the cheapest
  factor; text no format detects from its head, the cheapest text format's), so that what the
  web process refuses, a worker would refuse too, and no worker holds more content than a parse
  could afford;
- by the worker, on the content it holds, before parsing it: the format named anywhere in a
  JSON document (the dearest, if several; a snapshot of raw `events` at EVENTS_FACTOR), a text
  or binary format by its detection, and a JSON document that names none the dearest factor of
  the formats that do not name themselves.

Content that is compressed inside its format (heaptrack's `.zst`; a pprof `.pb.gz` sent gzipped
again) is estimated on receipt and before decompressing by the size its zstd frame declares, if
it does (`inner_size`); either way its decompression, in the handler, stops at the format's
budget (`decompress_within_budget`), and the refusal then says why.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import zstandard
from django.conf import settings

from memdash.core.logic.errors import TooLarge
from memdash.core.logic.reading import GZIP_MAGIC, ZSTD_MAGIC, Cap

EVENTS_FACTOR = 11  # 9.3 measured (an events document of 128 MB peaked a worker at 1.29 GB)
EVENTS_KEY = re.compile(rb'"events"\s*:')
# Bytes of worker memory per byte of decompressed content, by format (handler name): the peak
# over the task's start per byte of content measured by bench/parse_memory.py at 4-56 MB of
# content (docs/scaling.md, "Memory"), rounded up with a tenth to spare. A format without a
# measurement of its own has the one of the format it is stored like (noted).
FACTORS: dict[str, float] = {
    "memdash.snapshot": 8,  # 4.8; 8.0 before the store's rework (so a 1M-row bench snapshot fits)
    # a snapshot of raw allocator events (`events`, replayed one by one): read the generic way
    "memdash.snapshot.events": EVENTS_FACTOR,
    "memdash.sessions": 10,  # 8.8
    "memdash.retain-cycles": 150,  # 139 (at 4 MB: the clustering's structures)
    "fbretaincycledetector.text": 150,  # stored as the JSON form
    "memdash.churn": 10,  # a document validated whole, as sessions
    "memdash.exitinfo": 10,  # sessions
    "android.exitinfo": 10,  # sessions
    "memdash.metrickit": 28,  # converted to a snapshot, as matrix
    "metrickit": 28,  # as matrix
    "matrix": 28,  # 25.8
    "fballocationtracker": 19,  # 17.6
    "pprof": 12,  # 10.9 (profile.proto, decoded by upb and numpy; 18.0 before)
    "heaptrack": 25,  # 22.8
    "massif": 30,  # 27.9
    "sanitizer.leaks": 18,  # 16.4
    "valgrind.memcheck-log": 18,  # 15.3
    "valgrind.memcheck-xml": 18,  # the leak logs' store
    "libmemunreachable": 18,  # the leak logs' store
    "xcode.leaks": 18,  # 15.7 (26.1 at 4 MB)
    "leakcanary": 20,  # 17.8 (a signature of its own per leak: as many clusters)
    "android.exitinfo.text": 17,  # 15.3
}
# Text formats (not JSON): content no format detects from its first bytes is costed as the
# cheapest of them while it is read (their detection may need more than its head).
TEXT_FORMATS = (
    "pprof", "heaptrack", "massif", "sanitizer.leaks", "valgrind.memcheck-log",
    "valgrind.memcheck-xml", "libmemunreachable", "fbretaincycledetector.text",
)  # fmt: skip
# JSON formats that do not name themselves in a `"format"` key: a JSON document that names no
# format is taken for the dearest of them.
UNNAMED_JSON = ("fballocationtracker", "matrix", "metrickit", "android.exitinfo")
NAMED_FORMAT_RE = re.compile(rb'"format"\s*:\s*"(memdash\.[a-z-]{1,40})"')
HEAD_BYTES = 64 * 1024


@dataclass(frozen=True)
class Estimate:
    format: str  # whose factor counts
    size: int  # decompressed bytes to parse
    factor: float

    @property
    def bytes(self) -> int:
        return math.ceil(self.size * self.factor)


def named_format(content: bytes, limit: int = 16) -> str | None:
    """The memdash format a JSON document names (`"format": "memdash.…"`; the dearest if it
    names several: a document may carry another's format in a string), looking at the first
    `limit` names; None if it names none."""
    names: set[str] = set()
    for match in NAMED_FORMAT_RE.finditer(content):
        names.add(match.group(1).decode())
        if len(names) >= limit:
            break
    known = [name for name in names if name in FACTORS]
    return max(known, key=lambda name: FACTORS[name]) if known else None


def unnamed_json(*, whole: bool) -> str:
    """The format a JSON document that names none is costed as: from the whole document, the
    dearest of the formats that do not name themselves; from its head only (on receipt), the
    cheapest of all, a lower bound."""
    if whole:
        return max(UNNAMED_JSON, key=lambda name: FACTORS[name])
    return min(FACTORS, key=lambda name: FACTORS[name])


def snapshot_shape(fmt: str, content: bytes) -> str:
    """A snapshot document of raw events is costed as such (the events are read the generic
    way, at EVENTS_FACTOR); any other format as itself."""
    if fmt == "memdash.snapshot" and content.find(b'"events"') >= 0 and EVENTS_KEY.search(content):
        return "memdash.snapshot.events"
    return fmt


def cheapest_text() -> str:
    return min(TEXT_FORMATS, key=lambda name: FACTORS[name])


def limit() -> int:
    return int(settings.MEMDASH_MAX_PARSE_MEMORY_BYTES)


def budget(fmt: str) -> int:
    """The most content of format `fmt` that a worker may parse."""
    return int(limit() / FACTORS[fmt])


def inner_size(content: bytes) -> int | None:
    """The decompressed size of content compressed inside its format, as its zstd frame
    declares it (exact for that frame, and a lower bound for several); None when it does not
    (heaptrack streams its file, so it rarely does) or for gzip (its ISIZE is a hint only: the
    size of the last member, modulo 2^32)."""
    if not content.startswith(ZSTD_MAGIC):
        return None
    try:
        size = zstandard.frame_content_size(content[:18])
    except zstandard.ZstdError:
        return None
    return size if size >= 0 else None


def refusal(estimate: Estimate, *, more_than: bool = False) -> TooLarge:
    """The refusal of content whose parse would take more than the setting; `more_than`: the
    content's size is known only to be larger (its decompression stopped there)."""
    over = "more than " if more_than else ""
    return TooLarge(
        f"the content is {over}{estimate.size:,} bytes decompressed; a worker parsing "
        f"{estimate.format} needs about {estimate.factor:g} bytes of memory per byte of it "
        f"({over}{estimate.bytes:,} bytes), "
        f"more than MEMDASH_MAX_PARSE_MEMORY_BYTES ({limit():,} bytes): send a smaller capture, "
        "or raise the setting where workers have the memory (docs/scaling.md, Memory)",
        "content",
    )


def estimate(fmt: str | None, size: int, head: bytes) -> Estimate | None:
    """What parsing `size` bytes of content of format `fmt` (None: no format reads it) will
    cost; for content compressed inside its format, by the size its zstd frame declares (None
    when it declares none: its decompression is bounded by the budget instead)."""
    if fmt is None:
        return None
    if head.startswith((ZSTD_MAGIC, GZIP_MAGIC)):
        inner = inner_size(head)
        return None if inner is None else Estimate(fmt, inner, FACTORS[fmt])
    return Estimate(fmt, size, FACTORS[fmt])


def check(cost: Estimate | None) -> None:
    """Refuse (TooLarge, 413) what would take a worker past the setting."""
    if cost is not None and cost.bytes > limit():
        raise refusal(cost)


def inner_limit(fmt: str, own_limit: int) -> int:
    """What content compressed inside format `fmt` may decompress to: its own cap, or less
    when the budget is smaller."""
    return min(own_limit, budget(fmt))


def decompress_within_budget(fmt: str, own_limit: int, decompress: Callable[[int], bytes]) -> bytes:
    """`decompress(limit)` (a bounded decompression) at `inner_limit`; when the budget is what
    stopped it, the refusal says so."""
    cap = inner_limit(fmt, own_limit)
    try:
        return decompress(cap)
    except TooLarge:
        if cap < own_limit:
            raise refusal(Estimate(fmt, cap, FACTORS[fmt]), more_than=True) from None
        raise


def cap(fmt: str | None) -> Cap:
    """What content of format `fmt` (None: text no format recognises from its head, costed as
    the cheapest text format) may be read: the setting over its factor; the refusal past it
    names the setting."""
    name = fmt or cheapest_text()
    factor = FACTORS[name]
    size = int(limit() / factor)
    shown = name if fmt else f"text no format recognises from its first 64 KiB (as {name} at best)"
    return Cap(size, lambda: refusal(Estimate(shown, size, factor), more_than=True))


def head_cap(fmt: str | None, head: bytes) -> Cap:
    """`cap`, or none at all (refused at once) for content compressed inside its format whose
    frame declares a size that its parse could not afford (`estimate`)."""
    declared = estimate(fmt, 0, head) if head.startswith((ZSTD_MAGIC, GZIP_MAGIC)) else None
    if declared is not None and declared.bytes > limit():
        return Cap(0, lambda: refusal(declared))
    return cap(fmt)


def assess(
    fmt: str | None, head: bytes, size: int | None = None, content: bytes | None = None
) -> Cap:
    """The cap of content of format `fmt` while it is read; with its `size`, the estimate of
    its parse checked first (TooLarge past the setting), on the whole `content` when given (a
    snapshot of raw events costed as such)."""
    if size is not None:
        shape = snapshot_shape(fmt, content) if fmt and content is not None else fmt
        check(estimate(shape, size, head))
    return head_cap(fmt, head)
