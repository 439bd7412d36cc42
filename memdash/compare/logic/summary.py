"""What build compare needs of one build alone, and its stored form (pure: no Django).

Comparing two builds describes and ranks, per category, the persistent counts and bytes of each
snapshot of both builds (0 in a snapshot without the category). Everything but the deltas and
the rank test depends on one build only: the spreads of its samples, and their runs (distinct
values with their numbers, `stats.sorted_runs`), which are all the rank test needs of a sample.
A BuildSummary holds those for every category of a build; it is worked out once from the
per-snapshot totals and stored, so a comparison reads one row per build instead of grouping
half a million (snapshot, category) totals again.

It is columnar, so that reading a stored one makes no object per category until a comparison
looks at it: one record per category and long columns of runs. Stored, it is two compressed
parts: the header (the snapshots it was made from, the category names, the column lengths;
JSON), the records and the runs of bytes; and the runs of counts, which only a rank test on
counts needs (nothing shows one), read only then. Numbers are little-endian.
"""

from __future__ import annotations

import struct
import sys
import zlib
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson
import zstandard

from memdash.compare.logic.run_merge import IntColumn
from memdash.compare.logic.stats import Spread, summarize_sorted
from memdash.core.logic.reading import ZSTD_MAGIC

# (counts, sizes) of a category in the snapshots where it is not empty, each in ascending order
PresentSamples = tuple[Sequence[int], Sequence[int]]
# (values, counts, sum of t^3) of a sample's runs, as stats.Runs
RunsLike = tuple[IntColumn, IntColumn, int]
# (values, counts, starts) of the runs of every category, one after the other
CountColumns = tuple[Sequence[int], Sequence[int], Sequence[int]]
# A category's record: the fields of RECORD (integers and floats)
Record = tuple[Any, ...]

# Bumped when the stored layout changes: summaries of another format are made again when read.
# 2: compressed by zstd (a build of 10,000 snapshots: 12 MB of runs read back in half zlib's time)
FORMAT = 2
# A category's record: present, then the count spread and the bytes spread (the fields of
# Spread: n, mean, median, q1, q3, minimum, maximum; the quantiles and mean are always floats,
# the rest integers), then the sums of t^3 over the count runs and over the bytes runs.
RECORD = struct.Struct("<q" + "qddddqq" * 2 + "qq")
COUNT_SPREAD = slice(1, 8)
BYTES_SPREAD = slice(8, 15)
COUNT_CUBES = 15  # the bytes runs' sum of t^3 is the last field
_HEADER_LENGTH = struct.Struct("<I")
# Run values are any 64-bit integers; run lengths and starts are below 2^31 (a build has fewer
# snapshots, a summary fewer runs), so half the size to store and to decompress.
_VALUES = "q"
_LENGTHS = next(code for code in "iIl" if array(code).itemsize == 4)


@dataclass(slots=True)
class BuildSummary:
    """Per category of one build over some of its snapshots: `records[i]` (RECORD) of the
    category `names[i]`, and the runs of its bytes: values
    `bytes_values[bytes_starts[i]:bytes_starts[i + 1]]` with their numbers in `bytes_counts`.
    The runs of counts likewise in `count_columns` (values, counts, starts), or, stored, from
    `count_source` when first needed."""

    snapshot_ids: list[int]
    names: list[str]
    records: list[Record]
    bytes_values: IntColumn
    bytes_counts: IntColumn
    bytes_starts: IntColumn
    count_columns: CountColumns | None = None
    count_source: Callable[[], CountColumns] | None = field(default=None, repr=False)
    index: dict[str, int] = field(init=False, repr=False)
    # (record, bytes runs, count runs) of a category the build does not have; runs as tuples
    absent: tuple[Record, tuple[Any, ...], tuple[Any, ...]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.index = {name: i for i, name in enumerate(self.names)}
        count_spread, count_runs = summarize_sorted((), self.snapshots)
        bytes_spread, bytes_runs = summarize_sorted((), self.snapshots)
        record = (0, *count_spread, *bytes_spread, count_runs.cubes, bytes_runs.cubes)
        self.absent = (record, tuple(bytes_runs), tuple(count_runs))

    @property
    def snapshots(self) -> int:
        return len(self.snapshot_ids)

    def category(self, name: str) -> tuple[Record, RunsLike]:
        """(record, bytes runs) of a category (`absent` for one the build does not have)."""
        i = self.index.get(name)
        if i is None:
            return self.absent[:2]
        start, end = self.bytes_starts[i], self.bytes_starts[i + 1]
        record = self.records[i]
        return record, (self.bytes_values[start:end], self.bytes_counts[start:end], record[-1])

    def count_runs(self, name: str) -> RunsLike:
        """The runs of a category's counts."""
        i = self.index.get(name)
        if i is None:
            return self.absent[2]
        if self.count_columns is None and self.count_source is not None:
            self.count_columns = self.count_source()
        assert self.count_columns is not None  # made with its count runs, or where to read them
        values, counts, starts = self.count_columns
        start, end = starts[i], starts[i + 1]
        return values[start:end], counts[start:end], self.records[i][COUNT_CUBES]


def summarize_build(
    snapshot_ids: Sequence[int], present: Mapping[str, PresentSamples]
) -> BuildSummary:
    """The summary of a build over these snapshots, from each category's sorted values in the
    snapshots that have it (`present`); categories in name order."""
    return summarize_samples(snapshot_ids, ((name, *present[name]) for name in sorted(present)))


def summarize_samples(
    snapshot_ids: Sequence[int], samples: Iterable[tuple[str, Sequence[int], Sequence[int]]]
) -> BuildSummary:
    """The summary of a build over these snapshots, from (name, counts, sizes) of each category,
    its values in ascending order in the snapshots that have it; categories in the order given.
    One category at a time: its values can be dropped as soon as it is summarized."""
    maker = SummaryMaker(snapshot_ids)
    for name, counts, sizes in samples:
        maker.add(name, counts, sizes)
    return maker.finish()


class SummaryMaker:
    """`summarize_samples` one category at a time, for summaries of several selections of a
    build's snapshots made in one pass over its totals (each category given to each)."""

    def __init__(self, snapshot_ids: Sequence[int]) -> None:
        self.snapshot_ids = list(snapshot_ids)
        self.names: list[str] = []
        self.records: list[Record] = []
        self.count_values: list[int] = []
        self.count_counts: list[int] = []
        self.count_starts = [0]
        self.bytes_values: list[int] = []
        self.bytes_counts: list[int] = []
        self.bytes_starts = [0]

    def add(self, name: str, counts: Sequence[int], sizes: Sequence[int]) -> None:
        """A category's values (ascending) in the snapshots that have it."""
        zeros = len(self.snapshot_ids) - len(sizes)
        count_spread, count_runs = summarize_sorted(counts, zeros)
        bytes_spread, bytes_runs = summarize_sorted(sizes, zeros)
        self.names.append(name)
        self.records.append(
            (len(sizes), *count_spread, *bytes_spread, count_runs.cubes, bytes_runs.cubes)
        )
        self.count_values += count_runs.values
        self.count_counts += count_runs.counts
        self.count_starts.append(len(self.count_values))
        self.bytes_values += bytes_runs.values
        self.bytes_counts += bytes_runs.counts
        self.bytes_starts.append(len(self.bytes_values))

    def finish(self) -> BuildSummary:
        return BuildSummary(
            self.snapshot_ids,
            self.names,
            self.records,
            self.bytes_values,
            self.bytes_counts,
            self.bytes_starts,
            count_columns=(self.count_values, self.count_counts, self.count_starts),
        )


def category_spreads(record: Record) -> tuple[Spread, Spread]:
    """(count spread, bytes spread) of a record, made as tuples are (no __init__ to run)."""
    return tuple.__new__(Spread, record[COUNT_SPREAD]), tuple.__new__(Spread, record[BYTES_SPREAD])


# ---- stored form --------------------------------------------------------------------------------


def _packed(columns: Sequence[IntColumn]) -> list[bytes]:
    packed = []
    for code, values in zip((_VALUES, _LENGTHS, _LENGTHS), columns, strict=True):
        column = array(code, values)
        if sys.byteorder == "big":
            column.byteswap()
        packed.append(column.tobytes())
    return packed


def _arrays(body: memoryview, lengths: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three columns (values, counts, starts) at the start of `body`, as arrays over its
    bytes (no copy: a build of 10,000 snapshots has a million runs of bytes)."""
    columns = []
    start = 0
    for dtype, length in zip(("<i8", "<i4", "<i4"), lengths, strict=True):
        columns.append(np.frombuffer(body, dtype, length, start))
        start += columns[-1].nbytes
    return columns[0], columns[1], columns[2]


def _unpacked(body: memoryview, lengths: Sequence[int]) -> tuple[list[int], list[int], list[int]]:
    """The three columns as lists (faster to slice and loop over than arrays)."""
    values, counts, starts = _arrays(body, lengths)
    return values.tolist(), counts.tolist(), starts.tolist()


def _with_header(header: dict[str, Any], parts: Sequence[bytes]) -> bytes:
    encoded = orjson.dumps(header)
    whole = b"".join([_HEADER_LENGTH.pack(len(encoded)), encoded, *parts])
    return zstandard.ZstdCompressor(level=1).compress(whole)


def _header_and_rest(data: bytes | memoryview) -> tuple[dict[str, Any], memoryview]:
    """The header and the rest of a stored part (format 1's by zlib: its header says so)."""
    raw = bytes(data)
    if raw.startswith(ZSTD_MAGIC):
        body = memoryview(zstandard.ZstdDecompressor().decompress(raw))
    else:
        body = memoryview(zlib.decompress(raw))
    (length,) = _HEADER_LENGTH.unpack_from(body)
    return orjson.loads(body[4 : 4 + length]), body[4 + length :]


def pack_summary(summary: BuildSummary) -> tuple[bytes, bytes]:
    """The stored form, two parts, each compressed (runs of zeros and small numbers shrink to
    a fifth) after a header naming the snapshots it was made from: the records and the runs of
    bytes; the runs of counts. Raises OverflowError or struct.error for a number that does not
    fit."""
    bytes_columns = (summary.bytes_values, summary.bytes_counts, summary.bytes_starts)
    count_columns = summary.count_columns
    if count_columns is None:
        raise ValueError("a summary read without its count runs is not stored again")
    main = _with_header(
        {
            "format": FORMAT,
            "snapshots": summary.snapshot_ids,
            "names": summary.names,
            "columns": [len(c) for c in bytes_columns],
        },
        [b"".join(RECORD.pack(*r) for r in summary.records), *_packed(bytes_columns)],
    )
    counts = _with_header(
        {
            "format": FORMAT,
            "snapshots": summary.snapshot_ids,
            "columns": [len(c) for c in count_columns],
        },
        _packed(count_columns),
    )
    return main, counts


def unpack_summary(data: bytes | memoryview, snapshot_ids: Sequence[int]) -> BuildSummary | None:
    """The summary stored as `data` (the main part of `pack_summary`) if it was made from these
    snapshots in this format, else None. Its count runs are not there: set `count_source`."""
    header, body = _header_and_rest(data)
    if header.get("format") != FORMAT or header.get("snapshots") != list(snapshot_ids):
        return None
    end = RECORD.size * len(header["names"])
    return BuildSummary(
        header["snapshots"],
        header["names"],
        list(RECORD.iter_unpack(body[:end])),
        *_arrays(body[end:], header["columns"]),
    )


def unpack_count_columns(
    data: bytes | memoryview, snapshot_ids: Sequence[int]
) -> CountColumns | None:
    """The count columns stored as `data` (the second part of `pack_summary`) if they were
    made from these snapshots in this format, else None."""
    header, body = _header_and_rest(data)
    if header.get("format") != FORMAT or header.get("snapshots") != list(snapshot_ids):
        return None
    values, counts, starts = _unpacked(body, header["columns"])
    return values, counts, starts
