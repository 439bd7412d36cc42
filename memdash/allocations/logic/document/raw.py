"""A memdash.snapshot v1 document read straight from its bytes into columns (no Django).

The generic way, `orjson.loads` then `document.parse_snapshot`, builds a Python dict for every
allocation row (some 430 bytes each: a million rows take 0.4 GB and a second and a half before
validation starts). Here a typed decoder (msgspec) reads the document's small parts as JSON
values and its allocation rows a few megabytes at a time into structs whose fields it has
already type-checked, which become numpy columns and are dropped: the rows never exist as
Python objects all at once. Keys named twice in one object are looked for the same way, the
rows a chunk at a time and the rest of the document without them (`json_keys`): a document
with one is not read here, and the generic way refuses it with its path.

It only ever accepts what `parse_snapshot` accepts, with the same result: the small parts go
through the very same validators, the rows through the same vectorised checks. Anything it
does not take at once (a value of the wrong type, a bad index, an events document, JSON it
cannot read) makes it answer None, and the upload takes the generic way, whose error names
the first offending value with its path: bad input pays twice, good input once.
"""

from __future__ import annotations

import re
from itertools import count
from operator import attrgetter
from typing import Annotated, Any

import msgspec
import numpy as np

from memdash.allocations.logic.columns import NONE, Ints, RowColumns, index_ints
from memdash.allocations.logic.document.contract import FORMAT
from memdash.allocations.logic.document.parse import (
    ParsedSnapshot,
    parse_frames,
    parse_generations,
    parse_header,
    parse_images,
    parse_threads,
)
from memdash.allocations.logic.document.rows import (
    COUNTERS,
    INDEXES,
    NeedsRowByRow,
    checked_columns,
    checked_stacks,
)
from memdash.core.logic.errors import InvalidUpload
from memdash.core.logic.json_keys import has_duplicate_key

UNSET: Any = msgspec.UNSET
INT = np.int64
CHUNK_BYTES = 4 * 1024 * 1024  # of allocation rows decoded at a time
_BETWEEN_ROWS = re.compile(rb"\}\s*,\s*\{")
_LOOK = 64 * 1024  # how far past a chunk's end the next row boundary is looked for


# An index or a count as the decoder takes it: never negative (a negative one fails the decoding
# and the generic way names it), so that an absent one can read as ABSENT, which no value given
# decodes to (an explicit null reads as None, then NONE): how many rows gave each key is then
# known, which is how keys named twice are found without a second parse (`_each_key_once`).
_Index = Annotated[int, msgspec.Meta(ge=0)]
_Count = Annotated[int, msgspec.Meta(ge=0)]
ABSENT = -2


class _Row(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    category: str
    stack: _Index | None = ABSENT
    thread: _Index | None = ABSENT
    generation: _Index | None = ABSENT
    persistent: _Count = ABSENT
    persistent_bytes: _Count = ABSENT
    transient: _Count = ABSENT
    transient_bytes: _Count = ABSENT


class _Document(msgspec.Struct):
    """The top level: what `parse_snapshot` reads, each key UNSET when absent."""

    format: Any = UNSET
    version: Any = UNSET
    app: Any = UNSET
    build: Any = UNSET
    device: Any = UNSET
    session: Any = UNSET
    captured_at: Any = UNSET
    trigger: Any = UNSET
    images: Any = UNSET
    frames: Any = UNSET
    stacks: list[tuple[int | None, int]] | None = None
    threads: Any = UNSET
    generations: Any = UNSET
    allocations: msgspec.Raw = msgspec.Raw()
    events: msgspec.Raw = msgspec.Raw()


_DOCUMENT = msgspec.json.Decoder(_Document)
_ROWS = msgspec.json.Decoder(list[_Row])
_SMALL_FIELDS = [f for f in _Document.__struct_fields__ if f not in ("allocations", "events")]
_SNIFF = b'"' + FORMAT.encode() + b'"'


def read_snapshot(raw: bytes) -> ParsedSnapshot | None:
    """The validated snapshot of a memdash.snapshot v1 document with allocation rows, or None
    for anything else (which the generic way then reads, or refuses with its path)."""
    if raw.lstrip()[:1] != b"{" or raw.find(_SNIFF) < 0:
        return None
    try:
        top = _DOCUMENT.decode(raw)
        # Every row has a "category" key: their count bounds the rows (other keys, values or
        # strings may add to it, never take from it; a key spelled with escapes is not
        # counted, which the rows' decoding notices).
        return _validated(top, raw, raw.count(b'"category"'))
    except (msgspec.MsgspecError, InvalidUpload, NeedsRowByRow, OverflowError, RecursionError):
        return None


def _validated(top: _Document, raw: bytes, capacity: int) -> ParsedSnapshot | None:
    doc = {name: value for name in _SMALL_FIELDS if (value := getattr(top, name)) is not UNSET}
    if doc.get("format") != FORMAT or doc.get("stacks") is None:
        return None
    if not _present(top.allocations) or _present(top.events):
        return None  # events are replayed one by one anyway: the generic way
    if has_duplicate_key(_without(raw, top.allocations)):
        return None  # msgspec kept one of the two: the generic way refuses it, with its path
    parsed = parse_header(doc)
    parsed.images = parse_images(doc.get("images"))
    parsed.frames = parse_frames(doc.get("frames"), parsed.images)
    # The pairs as decoded (some 25 MB for 200,000 nodes) are gone before the rows are read.
    parents, frames = checked_stacks(doc.pop("stacks"), len(parsed.frames))
    top.stacks = None
    parsed.stack_parents, parsed.stack_frames = parents, frames
    parsed.threads = parse_threads(doc.get("threads"))
    parsed.generations = parse_generations(doc.get("generations"))
    sizes = (len(parents), len(parsed.threads), len(parsed.generations))
    parsed.columns = _rows(memoryview(top.allocations), sizes, capacity)
    return parsed


def _without(raw: bytes, part: msgspec.Raw) -> bytes:
    """The document with one of its values (a Raw, which is a view of `raw`'s bytes) replaced
    by `null`: what is left to check for duplicate keys besides the rows."""
    view = np.frombuffer(memoryview(part), np.uint8)
    start = view.ctypes.data - np.frombuffer(raw, np.uint8).ctypes.data
    return b"".join((raw[:start], b"null", raw[start + len(view) :]))


def _present(value: msgspec.Raw) -> bool:
    """A key that is there and not null (a Raw is the value's own bytes, without blanks)."""
    return len(value) > 0 and bytes(memoryview(value)[:4]) != b"null"


def _rows(data: memoryview, sizes: tuple[int, int, int], capacity: int) -> RowColumns:
    """The allocation rows, decoded a chunk at a time into columns (of room for `capacity`
    rows, more than there are: written in place, never copied to grow), then checked and added
    up. A chunk ends at a `}, {` between two rows; should that be inside a string or a nested
    value, the chunk does not decode and the generic way reads the document."""
    start, end = _array_bounds(data)
    if start < 0:
        raise NeedsRowByRow
    first_rows: dict[str, int] = {}
    rows_seen = count()
    category = np.empty(capacity, dtype=np.int64)
    # One array per column: each is then checked as it is (a view of its first rows), with no
    # copy of the three made while they are all still held.
    indexes = [np.empty(capacity, dtype=np.int64) for _ in INDEXES]
    counts = np.empty((capacity, len(COUNTERS)), dtype=np.int64)
    at = 0
    while start < end:
        stop = _chunk_end(data, start, end)
        chunk = b"".join((b"[", data[start:stop], b"]"))
        rows = _ROWS.decode(chunk)
        n = len(rows)
        if at + n > capacity:
            raise NeedsRowByRow  # keys spelled with escapes, which the count missed
        names = map(attrgetter("category"), rows)
        category[at : at + n] = np.fromiter(map(first_rows.setdefault, names, rows_seen), INT, n)
        given = {"category": n}
        for k, name in enumerate(INDEXES):
            given[name] = _given(indexes[k][at : at + n], _index_column(rows, name), NONE)
        for k, name in enumerate(COUNTERS):
            column = np.fromiter(map(attrgetter(name), rows), INT, n)
            given[name] = _given(counts[at : at + n, k], column, 0)
        del rows
        if not _each_key_once(chunk, given):
            raise NeedsRowByRow  # which row and key: the generic way says
        at += n
        start = _next_row(data, stop, end)
    firsts = np.fromiter(first_rows.values(), INT, len(first_rows))
    codes = np.searchsorted(firsts, category[:at]).astype(np.int64)
    del category
    checked = [indexes[k][:at] for k in range(len(INDEXES))]
    del indexes
    for column, size in zip(checked, sizes, strict=True):
        if at and int(column.max()) >= size:
            raise NeedsRowByRow  # an index past what it indexes
    counts = np.ascontiguousarray(counts[:at]) if at < capacity else counts
    if at and int(counts.min()) < 0:
        raise NeedsRowByRow
    return checked_columns(list(first_rows), codes, checked, counts)


def _given(into: Ints, column: Ints, absent: int) -> int:
    """Write the column into its place, `absent` where a row did not give it; answers how
    many rows did."""
    missing = column == ABSENT
    column[missing] = absent
    into[:] = column
    return len(column) - int(np.count_nonzero(missing))


def _each_key_once(chunk: bytes, given: dict[str, int]) -> bool:
    """Whether no row of the chunk names a key twice, given how many rows gave each key (the
    decoder takes no other key). Without a backslash in the chunk, a `"` is only ever a
    string's bound, so each `":` ends a key: there are as many as the keys the rows gave, or
    some row names one twice. Otherwise (escapes, or blanks before a colon), jiter reads the
    chunk to tell."""
    if b"\\" not in chunk and _key_ends(chunk) == sum(given.values()):
        return True
    return not has_duplicate_key(chunk)


def _key_ends(chunk: bytes) -> int:
    """How many times `":` is in the chunk (numpy: several times faster than `bytes.count`)."""
    text = np.frombuffer(chunk, np.uint8)
    return int(np.count_nonzero((text[:-1] == ord('"')) & (text[1:] == ord(":"))))


def _index_column(rows: list[_Row], name: str) -> Ints:
    """A chunk's `stack`, `thread` or `generation` (ABSENT where absent, NONE where null)."""
    try:
        return np.fromiter(map(attrgetter(name), rows), INT, len(rows))
    except TypeError:  # an explicit null among them
        return index_ints(list(map(attrgetter(name), rows)))


def _array_bounds(data: memoryview) -> tuple[int, int]:
    """Where the rows of the `[...]` array start and end (-1 when it is not one)."""
    if len(data) < 2 or bytes(data[:1]) != b"[" or bytes(data[-1:]) != b"]":
        return -1, -1
    head = bytes(data[1 : min(len(data), 4096)])
    return 1 + len(head) - len(head.lstrip()), len(data) - 1


def _chunk_end(data: memoryview, start: int, end: int) -> int:
    """The end of a chunk of about CHUNK_BYTES beginning at `start`: just after a row's `}`."""
    if end - start <= CHUNK_BYTES:
        return end
    at = start + CHUNK_BYTES
    window = bytes(data[at : min(end, at + _LOOK)])
    found = _BETWEEN_ROWS.search(window)
    if found is None:
        return end
    return at + found.start() + 1


def _next_row(data: memoryview, stop: int, end: int) -> int:
    """Past the comma after a chunk's last row."""
    if stop >= end:
        return end
    window = bytes(data[stop : min(end, stop + _LOOK)])
    comma = window.find(b",")
    return stop + comma + 1
