"""FBAllocationTracker summaries converted to memdash snapshot documents (pure, no DB)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime

import pytest

from memdash.core.logic.errors import InvalidUpload
from memdash.ingest.writes.parsers import fbat
from tests.importers.helpers import FBAT_GENERATIONS as GENERATIONS

META = {
    "app_id": "com.example.chat",
    "platform": "ios",
    "build_version": "8.0.4",
    "build_number": "104",
    "device_id": "A1B2",
    "received_at": datetime(2026, 11, 20, 10, 12, 3, tzinfo=UTC),
}

# What -[FBAllocationTrackerManager currentAllocationSummary] gives, as an app serializes it.
SUMMARY = [
    {
        "className": "ChatViewController",
        "allocations": 3,
        "deallocations": 2,
        "aliveObjects": 1,
        "instanceSize": 1024,
    },
    {
        "className": "MessageCell",
        "allocations": 120,
        "deallocations": 80,
        "aliveObjects": 40,
        "instanceSize": 96,
    },
    # Timers created before tracking began and freed during it: alive = 5 - 7 = -2.
    {
        "className": "__NSCFTimer",
        "allocations": 5,
        "deallocations": 7,
        "aliveObjects": -2,
        "instanceSize": 48,
    },
]


def convert(doc, **meta):
    return fbat.to_snapshot_document(json.dumps(doc).encode(), doc, {**META, **meta})


def by_category(doc):
    return {row["category"]: row for row in doc["allocations"]}


def test_detects_summaries_and_generation_lists():
    assert fbat.detect(b"", SUMMARY)
    assert fbat.detect(b"", GENERATIONS)
    assert fbat.detect(b"", [[], GENERATIONS[2]])
    assert not fbat.detect(b"", [])
    assert not fbat.detect(b"", [[], []])
    assert not fbat.detect(b"", [1, 2])
    assert not fbat.detect(b"", {"head": {}, "items": []})


def test_summary_counts_and_bytes():
    doc = convert(SUMMARY)
    rows = by_category(doc)
    # ChatViewController: 1 alive × 1024 B; 2 freed × 1024 B
    assert rows["ChatViewController"] == {
        "category": "ChatViewController",
        "stack": None,
        "persistent": 1,
        "persistent_bytes": 1024,
        "transient": 2,
        "transient_bytes": 2048,
    }
    # MessageCell: 40 × 96 = 3840 B alive; 80 × 96 = 7680 B freed
    assert (rows["MessageCell"]["persistent_bytes"], rows["MessageCell"]["transient_bytes"]) == (
        3840,
        7680,
    )
    assert "generations" not in doc
    assert doc["build"] == {"version": "8.0.4", "number": "104"}
    assert doc["device"] == {"id": "A1B2"}
    assert doc["captured_at"] == "2026-11-20T10:12:03+00:00"


def test_negative_alive_counts_are_clamped_to_zero():
    timers = by_category(convert(SUMMARY))["__NSCFTimer"]
    # alive -2 → 0 persistent; the 7 deallocations (7 × 48 = 336 B) stay transient
    assert (timers["persistent"], timers["persistent_bytes"]) == (0, 0)
    assert (timers["transient"], timers["transient_bytes"]) == (7, 336)


def test_generation_lists_become_generations_from_the_first_mark():
    doc = convert(GENERATIONS)
    # The tracker tracks nothing before the first mark: list i is generation i ("Generation i+1").
    assert doc["generations"] == [
        {"name": "Generation A", "at_ms": 0},
        {"name": "Generation B", "at_ms": 0},
        {"name": "Generation C", "at_ms": 0},
    ]
    rows = sorted(
        (r["generation"], r["category"], r["persistent"], r["persistent_bytes"])
        for r in doc["allocations"]
    )
    # 12 × 96 = 1152; 28 × 96 = 2688
    assert rows == [
        (0, "ChatViewController", 1, 1024),
        (0, "MessageCell", 12, 1152),
        (2, "MessageCell", 28, 2688),
    ]
    assert all("generation" in r for r in doc["allocations"])


def test_no_build_is_refused():
    with pytest.raises(InvalidUpload) as refused:
        convert(SUMMARY, build_version="")
    assert refused.value.path == "build_version"


@pytest.mark.parametrize(
    ("doc", "path"),
    [
        (
            lambda: [*SUMMARY[:1], {k: v for k, v in SUMMARY[1].items() if k != "instanceSize"}],
            "[1].instanceSize",
        ),
        (lambda: [SUMMARY[0], {**SUMMARY[1], "className": 7}], "[1].className"),
        (lambda: [SUMMARY[0], {**SUMMARY[1], "deallocations": -1}], "[1].deallocations"),
        (lambda: [SUMMARY[0], {**SUMMARY[1], "aliveObjects": "40"}], "[1].aliveObjects"),
        (lambda: [SUMMARY[0], "MessageCell"], "[1]"),
        (lambda: [GENERATIONS[0], {"className": "X"}], "[1]"),
        (lambda: [GENERATIONS[0], [{**SUMMARY[0], "instanceSize": 1.5}]], "[1][0].instanceSize"),
    ],
)
def test_malformed_summaries_are_refused_with_a_path(doc, path):
    with pytest.raises(InvalidUpload) as refused:
        convert(copy.deepcopy(doc()))
    assert refused.value.path == path
