"""Documents more than one importer test uses."""

from __future__ import annotations

# What -[FBAllocationTrackerManager currentSummaryForGenerations] gives: alive counts by generation
FBAT_GENERATIONS = [
    [
        {
            "className": "ChatViewController",
            "allocations": 0,
            "deallocations": 0,
            "aliveObjects": 1,
            "instanceSize": 1024,
        },
        {
            "className": "MessageCell",
            "allocations": 0,
            "deallocations": 0,
            "aliveObjects": 12,
            "instanceSize": 96,
        },
    ],
    [],
    [
        {
            "className": "MessageCell",
            "allocations": 0,
            "deallocations": 0,
            "aliveObjects": 28,
            "instanceSize": 96,
        }
    ],
]
