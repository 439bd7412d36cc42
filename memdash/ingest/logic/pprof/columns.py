"""profile.proto decoded in bulk: protobuf's compiled (upb) parser for the outer message, numpy
for the samples, locations and functions, whose millions of varints are never read one at a
time in Python.

`LazyProfile` (lazy.proto) has Profile's field numbers but leaves each sample, location
and function as its encoded bytes. Those of one kind lie end to end in one buffer (the
profile's own bytes, as producers write them, else a copy: `pprof_streams`), where `walk` reads
the fields of all the messages at once: one step reads the next field of every message that has
one left, so Python loops over the handful of fields a message has, never over the messages.
Every field of these three messages is a varint or a run of varints (packed repeated integers,
labels, lines), so a varint's last byte is any byte below 0x80 and the varints of a packed run
are found by their last bytes (`_decode_runs`).

What cannot be read so (a truncated message, a varint longer than ten bytes) is refused with
the message's path and the byte offset in it; a profile the compiled parser refuses is read
again by the field-by-field reader of `pprof_proto`, only to say where it breaks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError
from numpy.typing import NDArray

from memdash.ingest.logic.pprof import lazy_pb2 as pprof_lazy_pb2
from memdash.ingest.logic.pprof.proto import Mapping, ProtoError, decode_profile
from memdash.ingest.logic.pprof.streams import Malformed, Stream, streams

I64 = NDArray[np.int64]
U64 = NDArray[np.uint64]
UIDS = NDArray[np.uint32] | NDArray[np.uint64]  # ids: uint32 while they fit
# The field-by-field reader names the place of an error the compiled parser reports without
# one; past this size an error is reported without it rather than read for minutes.
DIAGNOSE_LIMIT = 64 * 1024 * 1024
VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
CHUNK = 1 << 18  # bytes of packed runs decoded at a time: bounds the temporary arrays


def concat_ranges(lo: I64, hi: I64) -> I64:
    """lo[0]..hi[0]-1, lo[1]..hi[1]-1, … as one array."""
    counts = hi - lo
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    before = np.cumsum(counts) - counts
    return np.repeat(lo - before, counts) + np.arange(total, dtype=np.int64)


def varints_at(buf: NDArray[np.uint8], pos: I64, limit: I64, index: I64) -> tuple[U64, I64]:
    """The varint at each position (none may reach `limit`): values and the positions after."""
    value = np.zeros(len(pos), np.uint64)
    after = pos.copy()
    active = np.arange(len(pos))
    for shift in range(10):
        if not active.size:
            return value, after
        at = after[active]
        past = at >= limit[active]
        if past.any():
            first = int(np.argmax(past))
            raise Malformed("truncated varint", int(index[active[first]]), int(at[first]))
        byte = buf[at]
        value[active] |= (byte & 0x7F).astype(np.uint64) << np.uint64(7 * shift)
        after[active] = at + 1
        active = active[byte >= 0x80]
    if active.size:
        raise Malformed("varint longer than 10 bytes", int(index[active[0]]), int(pos[active[0]]))
    return value, after


@dataclass
class Fields:
    """Fields of a set of messages, by message and then in the order written."""

    message: I64
    wire: I64
    value: U64  # the varint (wire type 0); the start of the content (wire type 2)
    stop: I64  # the end of the content (wire type 2)
    start: I64  # where the field (its key) begins


@dataclass
class Walked:
    """Every field of a set of messages, as `walk` read them: one step's fields (a field of
    each message that had one left) after another."""

    steps: list[tuple[NDArray[np.int32], NDArray[np.int32], NDArray[np.int8], U64, I64, I64]]

    def select(self, number: int) -> Fields:
        """The fields of one number, by message and then in the order written."""
        chosen = [step[1] == number for step in self.steps]
        columns = [
            np.concatenate([step[k][pick] for step, pick in zip(self.steps, chosen, strict=True)])
            if self.steps
            else np.zeros(0, (np.int32, np.int32, np.int8, np.uint64, np.int64, np.int64)[k])
            for k in (0, 2, 3, 4, 5)
        ]
        message = columns[0].astype(np.int64)
        if len(message) > 1 and bool((message[1:] < message[:-1]).any()):
            order = np.argsort(message, kind="stable")  # fields in another order than usual
            message, columns = message[order], [column[order] for column in columns]
        wire, value, stop, start = columns[1:]
        return Fields(
            message,
            wire.astype(np.int64),
            value.astype(np.uint64, copy=False),
            stop.astype(np.int64, copy=False),
            start.astype(np.int64, copy=False),
        )


def walk(stream: Stream, starts: I64, stops: I64, owner: I64) -> Walked:
    """The fields of the messages at [starts, stops) of the stream; `owner` names each message
    in errors (its index in the stream's own list)."""
    buf = stream.buf
    pos = starts.copy()
    todo = np.flatnonzero(pos < stops)
    found = Walked([])
    while todo.size:
        limit, here = stops[todo], pos[todo]
        names = owner[todo]
        key, after = varints_at(buf, here, limit, names)
        number, wire = (key >> np.uint64(3)).astype(np.int64), (key & np.uint64(7)).astype(np.int64)
        bad = (number == 0) | (
            (wire != VARINT) & (wire != LENGTH) & (wire != FIXED64) & (wire != FIXED32)
        )
        if bad.any():
            first = int(np.argmax(bad))
            what = (
                "field number 0" if number[first] == 0 else f"unsupported wire type {wire[first]}"
            )
            raise Malformed(what, int(names[first]), int(here[first]))
        fixed = (wire == FIXED64) | (wire == FIXED32)
        if fixed.any():  # read by no field here: skipped
            value = np.zeros(len(todo), np.uint64)
            stop = after + np.where(wire == FIXED64, 8, np.where(wire == FIXED32, 4, 0))
            varint = ~fixed
            read, read_after = varints_at(buf, after[varint], limit[varint], names[varint])
            value[varint], stop[varint] = read, read_after
        else:
            value, stop = varints_at(buf, after, limit, names)
        length = wire == LENGTH
        if length.any():
            room = (limit[length] - stop[length]).astype(np.uint64)
            over = value[length] > room
            if over.any():
                first = int(np.flatnonzero(length)[np.argmax(over)])
                raise Malformed(
                    f"field {number[first]} runs past the end of its message",
                    int(names[first]),
                    int(here[first]),
                )
            content = stop[length]
            stop[length] = content + value[length].astype(np.int64)
            value[length] = content.astype(np.uint64)
        if (stop > limit).any():
            first = int(np.argmax(stop > limit))
            raise Malformed("truncated fixed-width field", int(names[first]), int(here[first]))
        found.steps.append(
            (
                todo.astype(np.int32),
                number.astype(np.int32),
                wire.astype(np.int8),
                value,
                stop,
                here,
            )
        )
        pos[todo] = stop
        todo = todo[stop < limit]
    return found


def _first(mask: NDArray[np.bool_]) -> int:
    return int(np.argmax(mask))


def _wrong(fields: Fields, wrong: NDArray[np.bool_], owner: I64, what: str, name: str) -> None:
    if wrong.any():
        first = _first(wrong)
        index = int(owner[fields.message[first]])
        raise Malformed(what, index, int(fields.start[first]), name)


def repeated(
    stream: Stream, fields: Fields, count: int, owner: I64, name: str, narrow: bool = False
) -> tuple[I64, UIDS]:
    """A repeated integer field (`fields` of one number, `name` in errors), packed or not: how
    many values each of the `count` messages has, and all the values in order. `narrow`: as
    uint32 while every value fits (a profile's location ids, its largest array: half of it)."""
    packed = fields.wire == LENGTH
    _wrong(fields, ~packed & (fields.wire != VARINT), owner, "expected a number", name)
    lo, hi = fields.value[packed].astype(np.int64), fields.stop[packed]
    # The runs a slice at a time, each slice about CHUNK bytes: counted first, then decoded
    # into their place in the one array of values (never a second copy of them all).
    cut = np.searchsorted(np.cumsum(hi - lo), np.arange(CHUNK, int((hi - lo).sum()), CHUNK))
    slices = [
        slice(a, b) for a, b in zip([0, *cut.tolist()], [*cut.tolist(), len(lo)], strict=True)
    ]
    run_owner = owner[fields.message[packed]]

    def decode_runs(part: slice, into: U64 | None) -> I64:
        try:
            return _decode_runs(stream.buf, lo[part], hi[part], into)
        except Malformed as exc:
            index = int(run_owner[part.start + exc.index])
            raise Malformed(exc.message, index, exc.at, name) from exc

    sizes = np.ones(len(fields.message), np.int64)
    runs = np.zeros(len(lo), np.int64)
    for part in slices:
        runs[part] = decode_runs(part, None)
    sizes[packed] = runs
    at = np.cumsum(sizes) - sizes
    total = int(sizes.sum())
    out: UIDS = np.empty(total, np.uint32) if narrow else np.empty(total, np.uint64)
    out = _put(out, at[~packed], fields.value[~packed])
    first_value = at[packed]
    for part in slices:
        if part.start < part.stop:
            begin = int(first_value[part.start])
            end = int(first_value[part.stop - 1] + runs[part.stop - 1])
            together = end - begin == int(runs[part].sum())  # the slice's values lie together
            if together and out.dtype == np.uint64:
                decode_runs(part, out[begin:end])  # type: ignore[arg-type]
                continue
            decoded = np.empty(int(runs[part].sum()), np.uint64)
            decode_runs(part, decoded)
            into = concat_ranges(first_value[part], first_value[part] + runs[part])
            out = _put(out, slice(begin, end) if together else into, decoded)
    per_message = np.bincount(fields.message, weights=sizes, minlength=count).astype(np.int64)
    return per_message, out


def _put(out: UIDS, where: slice | I64, values: U64) -> UIDS:
    """`values` into `out` at `where`, `out` made uint64 first if they do not fit it."""
    if out.dtype == np.uint32 and len(values) and int(values.max()) > 0xFFFFFFFF:
        out = out.astype(np.uint64)
    out[where] = values
    return out


def _decode_runs(buf: NDArray[np.uint8], lo: I64, hi: I64, into: U64 | None) -> I64:
    """How many varints each run [lo, hi) of buf (packed repeated integers) holds; their
    values go into `into` when given. Malformed's index is the run's, its position absolute."""
    where = concat_ranges(lo, hi)
    if not len(where):
        return np.zeros(len(lo), np.int64)
    part = buf[where]
    last = part < 0x80  # the last byte of a varint
    before = np.zeros(len(part) + 1, np.int64)
    np.cumsum(last, out=before[1:])
    start, stop = np.cumsum(hi - lo) - (hi - lo), np.cumsum(hi - lo)
    # A run holds whole varints: it ends on the last byte of one.
    unended = (stop > start) & ~last[np.maximum(stop - 1, 0)]
    if unended.any():
        run = int(np.argmax(unended))
        ends_in_run = np.flatnonzero(last[start[run] : stop[run]])
        offset = int(ends_in_run[-1]) + 1 if len(ends_in_run) else 0
        raise Malformed("truncated varint", run, int(lo[run]) + offset)
    counts: I64 = before[stop] - before[start]
    if into is None:
        return counts
    ends = np.flatnonzero(last)
    firsts = np.zeros(len(ends), np.int64)
    firsts[1:] = ends[:-1] + 1
    length = ends - firsts + 1
    longest = int(length.max()) if len(length) else 0
    if longest > 10:
        first = int(np.argmax(length > 10))
        run = int(np.searchsorted(stop, ends[first], side="right"))
        raise Malformed("varint longer than 10 bytes", run, int(where[firsts[first]]))
    into[:] = part[firsts] & 0x7F
    top = len(part) - 1
    for shift in range(1, longest):
        more = (part[np.minimum(firsts + shift, top)] & 0x7F).astype(np.uint64)
        more <<= np.uint64(7 * shift)
        more[length <= shift] = 0
        into |= more
    return counts


def singular(fields: Fields, count: int, owner: I64, name: str) -> U64:
    """A singular integer field (`fields` of one number, `name` in errors) of each of `count`
    messages: 0 when absent, the last one written when repeated (as protobuf reads it)."""
    _wrong(fields, fields.wire != VARINT, owner, "expected a number", name)
    out = np.zeros(count, np.uint64)
    message = fields.message
    last = np.ones(len(message), np.bool_)
    last[:-1] = message[1:] != message[:-1]
    out[message[last]] = fields.value[last]
    return out


def submessages(stream: Stream, fields: Fields, owner: I64, name: str) -> tuple[I64, Walked]:
    """The messages held by a repeated message field: whose each is (its parent's index among
    the walked messages), and their own fields."""
    _wrong(fields, fields.wire != LENGTH, owner, "expected a message", name)
    parents = fields.message
    return parents, walk(stream, fields.value.astype(np.int64), fields.stop, owner[parents])


@dataclass
class Columns:
    """A decoded profile: the small parts as Python values, the large ones as arrays."""

    strings: list[str]
    sample_types: list[tuple[int, int]]  # (type, unit) string indices
    mappings: list[Mapping]
    time_nanos: int
    duration_nanos: int
    comments: list[int]  # string indices
    sample_count: int
    value_counts: I64  # per sample
    values: I64  # every sample's values, end to end
    location_counts: I64  # per sample
    location_ids: UIDS  # every sample's location ids (leaf first), end to end
    label_sample: I64  # per label, in order: its sample
    label_key: U64
    label_str: U64
    label_num: I64
    location_id: U64  # per location
    location_mapping: U64
    location_address: U64
    line_counts: I64  # per location
    line_function: U64  # every location's lines (innermost function first), end to end
    line_number: I64
    function_id: U64  # per function
    function_name: U64
    function_filename: U64

    def string(self, index: int, path: str) -> str:
        if not 0 <= index < len(self.strings):
            raise ProtoError(
                f"string index {index} is outside string_table ({len(self.strings)} strings)", path
            )
        return self.strings[index]


def _parse(data: bytes) -> pprof_lazy_pb2.LazyProfile:
    lazy = pprof_lazy_pb2.LazyProfile()
    try:
        lazy.ParseFromString(data)
    except DecodeError as exc:
        if len(data) <= DIAGNOSE_LIMIT:
            decode_profile(data)  # raises a ProtoError naming the place
        raise ProtoError(f"not a valid profile.proto message ({exc})", "content") from exc
    return lazy


def decode(data: bytes) -> Columns:
    """Decode a serialized perftools.profiles.Profile (already decompressed)."""
    lazy = _parse(data)
    strings = [text.decode("utf-8", errors="replace") for text in lazy.string_table]
    if not strings or strings[0] != "":
        raise ProtoError("string_table must start with the empty string", "string_table[0]")
    samples, locations, functions = streams(data, (lazy.sample, lazy.location, lazy.function))
    header: dict[str, Any] = {
        "strings": strings,
        "sample_types": [(t.type, t.unit) for t in lazy.sample_type],
        "mappings": [  # plain values: nothing keeps the parsed message (and its copies) alive
            Mapping(m.id, m.memory_start, m.memory_limit, m.file_offset, m.filename, m.build_id)
            for m in lazy.mapping
        ],
        "time_nanos": lazy.time_nanos,
        "duration_nanos": lazy.duration_nanos,
        "comments": list(lazy.comment),
    }
    del lazy
    try:
        sample_columns = _samples(samples)
    except Malformed as exc:
        raise samples.error(exc, "sample") from exc
    try:
        location_columns = _locations(locations)
    except Malformed as exc:
        raise locations.error(exc, "location") from exc
    try:
        function_columns = _functions(functions)
    except Malformed as exc:
        raise functions.error(exc, "function") from exc
    return Columns(**header, **sample_columns, **location_columns, **function_columns)


def _all(stream: Stream) -> tuple[int, Walked, I64]:
    count = len(stream.starts)
    owner = np.arange(count, dtype=np.int64)
    return count, walk(stream, stream.starts, stream.stops, owner), owner


def _samples(stream: Stream) -> dict[str, Any]:
    count, fields, owner = _all(stream)
    location_fields, value_fields, label_fields = (fields.select(n) for n in (1, 2, 3))
    del fields  # every field of every sample: not kept while the location ids are decoded
    location_counts, location_ids = repeated(
        stream, location_fields, count, owner, "location_id", narrow=True
    )
    del location_fields
    value_counts, values = repeated(stream, value_fields, count, owner, "value")
    del value_fields
    label_sample, labels = submessages(stream, label_fields, owner, "label")
    n = len(label_sample)
    return {
        "sample_count": count,
        "location_counts": location_counts,
        "location_ids": location_ids,
        "value_counts": value_counts,
        "values": values.view(np.int64),
        "label_sample": label_sample,
        "label_key": singular(labels.select(1), n, label_sample, "label.key"),
        "label_str": singular(labels.select(2), n, label_sample, "label.str"),
        "label_num": singular(labels.select(3), n, label_sample, "label.num").view(np.int64),
    }


def _locations(stream: Stream) -> dict[str, Any]:
    count, fields, owner = _all(stream)
    line_location, lines = submessages(stream, fields.select(4), owner, "line")
    n = len(line_location)
    return {
        "location_id": singular(fields.select(1), count, owner, "id"),
        "location_mapping": singular(fields.select(2), count, owner, "mapping_id"),
        "location_address": singular(fields.select(3), count, owner, "address"),
        "line_counts": np.bincount(line_location, minlength=count).astype(np.int64),
        "line_function": singular(lines.select(1), n, line_location, "line.function_id"),
        "line_number": singular(lines.select(2), n, line_location, "line.line").view(np.int64),
    }


def _functions(stream: Stream) -> dict[str, Any]:
    count, fields, owner = _all(stream)
    return {
        "function_id": singular(fields.select(1), count, owner, "id"),
        "function_name": singular(fields.select(2), count, owner, "name"),
        "function_filename": singular(fields.select(4), count, owner, "filename"),
    }
