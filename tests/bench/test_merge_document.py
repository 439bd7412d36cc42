"""bench/run.py writes its sections into docs/performance.md without dropping those other
benchmarks wrote (common.merge_document)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from common import merge_document  # noqa: E402

EXISTING = """# Performance

Run: old.

## Targets

old targets

## Ingest

old ingest

### The `events` shape

old events

### heaptrack's blocks

written by hand

## Timeline ranges

written by bench/timeline.py

## How to run

run it
"""

RENDERED = """# Performance

Run: new.

## Targets

new targets

## Ingest

new ingest

### The `events` shape

new events

## Concurrent uploads

new load

## How to run

run it
"""


def test_rendered_sections_replace_their_own_and_the_others_stay():
    assert (
        merge_document(EXISTING, RENDERED)
        == """# Performance

Run: new.

## Targets

new targets

## Ingest

new ingest

### The `events` shape

new events

### heaptrack's blocks

written by hand

## Timeline ranges

written by bench/timeline.py

## Concurrent uploads

new load

## How to run

run it
"""
    )


def test_a_first_document_is_the_rendered_one():
    assert merge_document("", RENDERED) == RENDERED
