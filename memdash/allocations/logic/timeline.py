"""A snapshot's timeline: live bytes and count over time, and the time buckets a range of it is
made of. Pure: no Django.

An events upload says when each block was made and ended (`t_ms`). The run, from its first event
to its last, is cut into BUCKETS equal buckets; every block is counted in the bucket it was made
in (its rows are kept by bucket: `TimedAllocationRow`), every end in the bucket it happened in,
so the live bytes at the end of bucket i are everything made up to it less everything ended up
to it. A range dragged on the chart is the buckets it overlaps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

BUCKETS = 100  # of a run: a range is chosen to 1% of it


@dataclass(frozen=True)
class Buckets:
    start_ms: float
    width_ms: float
    count: int

    @classmethod
    def of_run(cls, times: NDArray[np.float64]) -> Buckets:
        """BUCKETS buckets from the first time to the last (one, 1 ms wide, when they are all
        the same or there are none)."""
        if not len(times):
            return cls(0.0, 1.0, 1)
        first, last = float(times.min()), float(times.max())
        if not last > first or not math.isfinite(last - first):
            return cls(first, 1.0, 1)
        return cls(first, (last - first) / BUCKETS, BUCKETS)

    def of(self, times: NDArray[np.float64]) -> NDArray[np.int64]:
        """Each time's bucket (the last one holds the end of the run)."""
        index = np.floor((times - self.start_ms) / self.width_ms).astype(np.int64)
        return np.clip(index, 0, self.count - 1)

    def end_ms(self, bucket: int) -> float:
        return self.start_ms + (bucket + 1) * self.width_ms

    def span(self, from_ms: float, to_ms: float) -> tuple[int, int] | None:
        """The first and last bucket that [from_ms, to_ms] overlaps (bucket i is [start + i·w,
        start + (i+1)·w)); None when the range is outside the run."""
        if to_ms < from_ms or to_ms < self.start_ms or from_ms > self.end_ms(self.count - 1):
            return None
        first = min(self.count - 1, max(0, math.floor((from_ms - self.start_ms) / self.width_ms)))
        last = min(self.count - 1, math.ceil((to_ms - self.start_ms) / self.width_ms) - 1)
        return first, max(first, last)


def made_per_bucket(
    bucket: NDArray[np.int64], counts: NDArray[np.int64], count: int
) -> NDArray[np.int64]:
    """[blocks, bytes] made in each bucket, from rows (their bucket and their (p, pb, t, tb))."""
    made = np.zeros((count, 2), dtype=np.int64)
    if len(bucket):
        np.add.at(made[:, 0], bucket, counts[:, 0] + counts[:, 2])
        np.add.at(made[:, 1], bucket, counts[:, 1] + counts[:, 3])
    return made


def live_series(made: NDArray[np.int64], ended: NDArray[np.int64]) -> tuple[list[int], list[int]]:
    """(live blocks, live bytes) at the end of each bucket: made up to it less ended up to it."""
    live = np.cumsum(made - ended, axis=0)
    return live[:, 0].tolist(), live[:, 1].tolist()
