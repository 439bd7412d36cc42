"""A serialized Profile's samples, locations and functions as `Stream`s: the messages of one
kind end to end, which `pprof_columns` reads in bulk.

Producers write a profile's fields in number order, each kind in one run (Go's encoder does), so
the messages of a kind already lie end to end in the profile's own bytes, each behind its key
and its length. Found there (`streams`), they are read where they lie instead of being copied
out of the parsed message and joined: at a million samples that copy is 70 MB and a fifth of a
second. A profile written otherwise has its messages copied and joined (`Stream.of`).

Where a kind's run starts is found by skipping the fields before it (sample types, mappings: a
few); the run is then taken only if every message of it, as the parser read them, has its key
and its length (minimally encoded) where the one before it ends. That makes the run the
parser's messages exactly: the first is found at a field boundary, and a field that is not of
the kind could not have its key there (a key byte below 0x80 is the whole key).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from memdash.ingest.logic.pprof.proto import (
    FIXED32,
    FIXED64,
    LENGTH,
    VARINT,
    ProtoError,
    read_varint,
)

I64 = NDArray[np.int64]
KINDS = (2, 4, 5)  # sample, location, function: the fields read as streams, in written order
SCAN_LIMIT = 10_000  # fields skipped looking for where a kind starts; past them, copies


class Malformed(Exception):
    """An encoding error in message `index` of a stream, at absolute position `at`."""

    def __init__(self, message: str, index: int, at: int, field: str = ""):
        super().__init__(message)
        self.message, self.index, self.at, self.field = message, index, at, field


@dataclass
class Stream:
    """Encoded messages of one kind, end to end."""

    buf: NDArray[np.uint8]
    starts: I64  # where each message begins in buf
    stops: I64  # and where it ends (exclusive)

    @classmethod
    def of(cls, messages: Sequence[bytes], lengths: I64 | None = None) -> Stream:
        """The messages copied and joined."""
        if lengths is None:
            lengths = np.fromiter(map(len, messages), np.int64, len(messages))
        stops = np.cumsum(lengths)
        buf = np.frombuffer(b"".join(messages), np.uint8)
        return cls(buf, stops - lengths, stops)

    def error(self, exc: Malformed, what: str) -> ProtoError:
        offset = exc.at - int(self.starts[exc.index])
        path = f"{what}[{exc.index}]" + (f".{exc.field}" if exc.field else "")
        return ProtoError(f"{exc.message} (at byte {offset} of {what}[{exc.index}])", path)


def streams(data: bytes, kinds: Sequence[Sequence[bytes]]) -> list[Stream]:
    """A stream of each of KINDS, whose messages, as the parser read them from `data`, are
    `kinds`: in place where they lie as written in number order, else copied."""
    buf = np.frombuffer(data, np.uint8)
    found: list[Stream] = []
    at: int | None = 0  # where the fields after the last kind found in place begin
    for i, (number, messages) in enumerate(zip(KINDS, kinds, strict=True)):
        lengths = np.fromiter(map(len, messages), np.int64, len(messages))
        stream = None
        if at is not None and len(messages):
            start = _first_of(data, number, KINDS[i + 1 :], at)
            stream = None if start is None else _run_at(buf, start, lengths, number)
        if stream is None:
            if len(messages):
                at = None  # not as usual: the kinds after it are copied too
            stream = Stream.of(messages, lengths)
        else:
            at = int(stream.stops[-1])
        found.append(stream)
    return found


def _first_of(data: bytes, number: int, later: Sequence[int], at: int) -> int | None:
    """Where the first field `number` at or after field boundary `at` begins; None when a field
    of a `later` kind comes first or it is not among the next SCAN_LIMIT fields."""
    view = memoryview(data)
    try:
        for _ in range(SCAN_LIMIT):
            if at >= len(data):
                return None
            key, after = read_varint(view, at, "")
            if key >> 3 == number and key & 7 == LENGTH:
                return at
            if key >> 3 in later:
                return None
            wire = key & 7
            if wire == VARINT:
                at = read_varint(view, after, "")[1]
            elif wire == LENGTH:
                length, after = read_varint(view, after, "")
                at = after + length
            elif wire in (FIXED64, FIXED32):
                at = after + (8 if wire == FIXED64 else 4)
            else:
                return None
    except ProtoError:
        return None
    return None


def _run_at(buf: NDArray[np.uint8], start: int, lengths: I64, number: int) -> Stream | None:
    """The messages of `lengths` as a run of fields `number` from `start`, each a one-byte key
    and its length's minimal varint before its content; None when they do not lie so."""
    size = np.ones(len(lengths), np.int64)  # bytes of each length's varint
    for shift in range(7, 64, 7):
        size += lengths >= 1 << shift
    record = 1 + size + lengths
    ends = start + np.cumsum(record)
    if int(ends[-1]) > len(buf):
        return None
    heads = ends - record
    if not bool((buf[heads] == (number << 3 | LENGTH)).all()):
        return None
    for k in range(int(size.max())):
        has = np.flatnonzero(size > k)
        expected = (lengths[has] >> 7 * k) & 0x7F | np.where(size[has] > k + 1, 0x80, 0)
        if not bool((buf[heads[has] + 1 + k] == expected).all()):
            return None
    return Stream(buf, ends - lengths, ends)
