"""Rows summed on the device with generation marks at their times (the allocations shape) have a
timeline of those marks: each generation's growth at its mark, the marks flagged; a range keeps
the generations marked in it. On `spec_example` (tests/samples.py), worked out by hand:

- Launch, at 0 ms: Malloc 48 Bytes, 100 persistent blocks of 4800 bytes
- Open chat, at 5320 ms: MessageCell 13 persistent (9216 + 768 = 9984 bytes) and 30 transient
  (23040 bytes); VM: CoreAnimation 2 persistent (4194304 bytes), 1 transient (2097152)
"""

from __future__ import annotations

import pytest

from memdash.allocations.models import Snapshot
from memdash.allocations.reads.timeline import timeline_chart_data
from tests.samples import spec_example
from tests.snapshots.test_timeline import uploaded

pytestmark = pytest.mark.django_db

OPEN_CHAT_PERSISTENT = 9984 + 4194304
OPEN_CHAT_TOTAL = 9984 + 23040 + 4194304 + 2097152


def test_the_marks_are_the_timeline(upload, api_client, member_client):
    sid = uploaded(upload, spec_example())
    data = timeline_chart_data(Snapshot.objects.get(pk=sid))
    assert data is not None and data["kind"] == "marks"
    assert data["times"] == [0, 5320]
    assert data["live_bytes"] == [4800, OPEN_CHAT_PERSISTENT]  # each generation's growth
    assert [(m["name"], m["at_ms"]) for m in data["marks"]] == [("Launch", 0), ("Open chat", 5320)]
    # a range around the second mark: the rows made after it
    answer = api_client.get(
        f"/api/v1/snapshots/{sid}/statistics", {"from_ms": 5000, "to_ms": 6000}
    ).json()
    assert answer["range"] == {"from_ms": 5320, "to_ms": 5320}
    every = {r["category"]: r for r in answer["summary"]}["All Heap & Anonymous VM"]
    assert (every["persistent_bytes"], every["total_bytes"]) == (
        OPEN_CHAT_PERSISTENT, OPEN_CHAT_TOTAL,
    )  # fmt: skip
    tree = api_client.get(f"/api/v1/snapshots/{sid}/calltree", {"from_ms": 5000, "to_ms": 6000})
    assert tree.json()["total_bytes"] == OPEN_CHAT_TOTAL
    # the page: the chart with its flags, the range in words
    html = member_client.get(f"/snapshots/{sid}/", {"from_ms": 5000, "to_ms": 6000}).content
    text = html.decode()
    assert 'id="timeline-chart"' in text and "data-points=" in text
    assert "Inspecting the generations marked from" in text
    assert "Open chat" in text  # its flag on the chart
    outside = api_client.get(f"/api/v1/snapshots/{sid}/statistics", {"from_ms": 6000})
    assert outside.status_code == 404


def test_marks_without_times_give_none(upload):
    # FBAllocationTracker's generations, all at 0: nothing says when
    doc = spec_example(generations=[{"name": "A", "at_ms": 0}, {"name": "B", "at_ms": 0}])
    sid = uploaded(upload, doc)
    assert timeline_chart_data(Snapshot.objects.get(pk=sid)) is None
