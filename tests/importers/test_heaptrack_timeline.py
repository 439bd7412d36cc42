"""When a heaptrack file's blocks were made and released (`heaptrack_timeline`), on hand-written
records worked out by hand; the recorded files' timelines are in tests/snapshots."""

from __future__ import annotations

import numpy as np

from memdash.allocations.logic.timeline import Buckets, live_series, made_per_bucket
from memdash.ingest.logic import heaptrack_data
from memdash.ingest.logic.heaptrack_timeline import event_times, heaptrack_timeline
from memdash.ingest.writes.parsers import heaptrack
from tests.importers.test_heaptrack import META

# Format 2 (strings unsized). Info 0: 16 bytes, info 1: 32 bytes, both at main.
# The run is from 0 to the last clock, 300 ms: buckets of 3 ms.
#   t=0   + 0  block A (16)                 bucket 0
#   t=100 + 0  block B (16), + 1 block C    bucket 33
#   t=200 - 0  ends info 0's latest block: B, not A (last in, first out)    bucket 66
RECORDS = (
    b"v 10400 2\ns main\ni 1000 0 1\nt 1 0\na 10 1\na 20 1\n+ 0\nc 64\n+ 0\n+ 1\nc c8\n- 0\nc 12c\n"
)


def test_each_event_at_the_last_clock_before_it():
    # clock 100 after 1 event, 200 after 3: events 0 | 1 2 | 3 4
    assert event_times(5, [(1, 100), (3, 200)]).tolist() == [0, 100, 100, 200, 200]
    assert event_times(2, []).tolist() == [0, 0]


def test_a_release_ends_the_infos_latest_block():
    timeline = heaptrack_timeline(heaptrack_data.read(RECORDS))
    assert timeline.buckets == Buckets(0.0, 3.0, 100)
    rows = sorted(
        zip(timeline.info.tolist(), timeline.bucket.tolist(), timeline.counts.tolist(), strict=True)
    )
    assert rows == [
        (0, 0, [1, 16, 0, 0]),  # A, made first, still allocated
        (0, 33, [0, 0, 1, 16]),  # B, released
        (1, 33, [1, 32, 0, 0]),  # C
    ]
    assert timeline.ended[66].tolist() == [1, 16] and int(timeline.ended.sum()) == 17
    made = made_per_bucket(timeline.bucket, timeline.counts, 100)
    count, size = live_series(made, timeline.ended)
    assert (count[0], count[32], count[33], count[65], count[66], count[99]) == (1, 1, 3, 3, 2, 2)
    assert (size[0], size[33], size[99]) == (16, 64, 48)


def test_untracked_releases_end_nothing():
    # released twice, allocated once: the second release is of a block made before tracking
    data = heaptrack_data.read(b"v 10400 2\ns main\ni 1000 0 1\nt 1 0\na 10 1\n+ 0\n- 0\n- 0\n")
    assert data.untracked == [2]
    timeline = heaptrack_timeline(data)
    assert timeline.counts.tolist() == [[0, 0, 1, 16]]
    assert int(timeline.ended[:, 0].sum()) == 1


def test_the_snapshot_as_stored_has_its_rows_by_bucket():
    parsed, counts = heaptrack.convert_timed(RECORDS, None, META)
    assert counts["heaptrack_allocations"] == 3
    assert parsed.timeline is not None and parsed.timeline.buckets.count == 100
    columns = parsed.columns
    assert columns is not None and columns.bucket is not None
    by_row = sorted(
        (columns.names[c], b, tuple(k))
        for c, b, k in zip(
            columns.category.tolist(), columns.bucket.tolist(), columns.counts.tolist(),
            strict=True,
        )
    )  # fmt: skip
    assert by_row == [
        ("Malloc 16 Bytes", 0, (1, 16, 0, 0)),
        ("Malloc 16 Bytes", 33, (0, 0, 1, 16)),
        ("Malloc 32 Bytes", 33, (1, 32, 0, 0)),
    ]
    assert set(columns.stack.tolist()) == {0}  # main
    # summed over the buckets: the document's rows
    untimed = columns.untimed()
    assert sorted(untimed.counts.tolist()) == [[1, 16, 1, 16], [1, 32, 0, 0]]
    assert np.array_equal(parsed.timeline.ended[66], [1, 16])
