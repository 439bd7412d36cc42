"""A heaptrack file's timeline: when its blocks were made and released, cut into the time buckets
memdash keeps a snapshot's timeline by (`allocations.logic.timeline`), as the events shape's is.

heaptrack writes a timestamp (`c <ms>`, ms since the program started) every few milliseconds;
an allocation (`+`) or a release (`-`) happened at the last timestamp before it (0 before the
first); the run is from 0 to the last timestamp. A release names the allocation info (size and
trace) of the block, not the block: the block it ends is the info's most recent one still
allocated (last in, first out, as a temporary allocation is freed right after it was made), so
a block made early and never released stays persistent in the bucket it was made in. Releases
of blocks allocated before heaptrack attached (`heaptrack_data.HeaptrackData.untracked`) end
nothing, as an unmatched free of the events shape.

Pure: numpy over the reader's events, no loop over them in Python.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from memdash.allocations.logic.timeline import Buckets
from memdash.ingest.logic.heaptrack_data import HeaptrackData

Ints = NDArray[np.int64]


@dataclass
class HeaptrackTimeline:
    """The rows by the bucket their blocks were made in: per row its allocation info, its bucket
    and its (persistent, persistent bytes, transient, transient bytes); what ended in each
    bucket ([blocks, bytes]); and every block (each `+`), in the order they were made: its
    allocation info, when it was made and released (ms; NaN: never)."""

    buckets: Buckets
    info: Ints
    bucket: Ints
    counts: Ints
    ended: Ints
    block_info: Ints
    block_made: NDArray[np.float64]
    block_freed: NDArray[np.float64]


def event_times(count: int, clock: list[tuple[int, int]]) -> NDArray[np.float64]:
    """Each event's time in ms: the last timestamp before it (0 before the first)."""
    if not clock:
        return np.zeros(count, dtype=np.float64)
    starts = np.array([start for start, _ in clock], dtype=np.int64)
    stamps = np.array([ms for _, ms in clock], dtype=np.float64)
    last = np.searchsorted(starts, np.arange(count), side="right") - 1
    return np.where(last >= 0, stamps[np.maximum(last, 0)], 0.0)


def paired_releases(info: Ints, made: NDArray[np.bool_]) -> tuple[Ints, Ints, Ints]:
    """Each release matched to the info's most recent block still allocated before it: the
    indexes (among the events) of the allocations released, of their releases, and of the
    allocations never released. Every release must have a block (no untracked ones)."""
    n = len(info)
    order = np.argsort(info, kind="stable")  # each info's events, in the order they happened
    grouped, step = info[order], np.where(made[order], 1, -1)
    first = np.r_[True, grouped[1:] != grouped[:-1]] if n else np.zeros(0, dtype=bool)
    running = np.cumsum(step)
    group = np.cumsum(first) - 1
    before = (running - step)[first][group]  # the running sum where the info's events start
    depth = running - before  # blocks of the info allocated after the event
    level = np.where(step > 0, depth, depth + 1)  # the block an event makes or ends
    # By info, then level, then time: each release right after the allocation it ends.
    ranked = order[np.lexsort((np.arange(n), level, grouped))]
    is_made = made[ranked]
    ends = ~is_made
    released = np.zeros(n, dtype=bool)
    released[:-1] = is_made[:-1] & ends[1:]
    releases = ranked[np.flatnonzero(ends)]
    allocations = ranked[np.flatnonzero(ends) - 1]
    kept = ranked[is_made & ~released]
    return allocations, releases, kept


def heaptrack_timeline(data: HeaptrackData) -> HeaptrackTimeline:
    """The file's rows by the bucket their blocks were made in, and what ended in each."""
    events = np.array(data.events, dtype=np.int64)
    times = event_times(len(events), data.clock)
    tracked = np.ones(len(events), dtype=bool)
    tracked[np.array(data.untracked, dtype=np.int64)] = False
    events, times = events[tracked], times[tracked]
    made = events >= 0
    info = np.where(made, events, ~events)
    sizes = np.array([size for size, _trace in data.infos], dtype=np.int64)
    # The run as heaptrack times it: from the program's start to its last timestamp (its total
    # runtime, heaptrack_print's, is that and 1 ms)
    buckets = Buckets.of_run(np.r_[times, 0.0, data.clock[-1][1] if data.clock else 0.0])
    bucket = buckets.of(times)
    allocations, releases, kept = paired_releases(info, made)
    ended = np.zeros((buckets.count, 2), dtype=np.int64)
    np.add.at(ended[:, 0], bucket[releases], 1)
    np.add.at(ended[:, 1], bucket[releases], sizes[info[releases]])
    # One row per (info, bucket made in): its persistent and its transient blocks.
    key = np.concatenate([info[kept], info[allocations]]) * buckets.count + np.concatenate(
        [bucket[kept], bucket[allocations]]
    )
    persistent = np.r_[np.ones(len(kept), dtype=np.int64), np.zeros(len(allocations), np.int64)]
    rows, of_row = np.unique(key, return_inverse=True)
    blocks = np.zeros((len(rows), 2), dtype=np.int64)
    np.add.at(blocks[:, 0], of_row, persistent)
    np.add.at(blocks[:, 1], of_row, 1 - persistent)
    row_info = rows // buckets.count
    size = sizes[row_info] if len(rows) else np.zeros(0, dtype=np.int64)
    counts = np.stack([blocks[:, 0], blocks[:, 0] * size, blocks[:, 1], blocks[:, 1] * size], 1)
    # Every block: its allocation, paired with its release (or none), in the order made.
    made_at = np.concatenate([allocations, kept])
    freed = np.concatenate([times[releases], np.full(len(kept), np.nan)])
    order = np.argsort(made_at, kind="stable")
    made_at = made_at[order]
    return HeaptrackTimeline(
        buckets, row_info, rows % buckets.count, counts, ended,
        info[made_at], times[made_at], freed[order],
    )  # fmt: skip
