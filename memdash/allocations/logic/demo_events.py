"""A demo run recorded as allocator events (the events shape), so the demo has a snapshot with a
timeline: 24 s of the leaking build on one device, its four generation marks, cells and strings
made and freed as the user scrolls, and ChatImageCache's 256 KiB images kept from "Open chat" on
(the leak, growing on the chart)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

RUN_MS = 24_000
STEP_MS = 8  # one allocator call every 8 ms or so: about 3,000 events
# category, stack, thread, bytes, weight, live blocks kept at most (older ones are freed)
CHURN = [
    ("MessageCell", 7, 0, 768, 6, 120),
    ("ChatMessage", 14, 0, 112, 10, 400),
    ("NSString", 13, 0, 64, 14, 600),
    ("UIImage", 9, 0, 160, 3, 60),
    ("Malloc 1.00 KiB", 18, 1, 1024, 4, 150),
    ("Malloc 16.00 KiB", 18, 1, 16384, 2, 40),
]
LEAKED_PER_MARK = 6  # the demo's story: each generation keeps 6 more images than the last


def leak_times(marks: Sequence[tuple[str, int]]) -> list[float]:
    """When the cache keeps an image: 6 in the first generation, 12 in the second, …, each
    generation's spread evenly over it (the last one ends with the run)."""
    times: list[float] = []
    ends = [at for _name, at in marks[1:]] + [RUN_MS]
    for g, ((_name, start), end) in enumerate(zip(marks, ends, strict=True)):
        count = LEAKED_PER_MARK * (g + 1)
        times += [start + (k + 0.5) * (end - start) / count for k in range(count)]
    return times


def recorded_events(
    rng: random.Random, marks: Sequence[tuple[str, int]], leak_stack: int, leak_bytes: int
) -> list[dict[str, Any]]:
    """The run's events in time order: churn that stays bounded per category (more of it kept
    while the history scrolls, the third mark to the fourth), and the cache's images
    (`leak_bytes` each, made at `leak_stack`), never freed. The stacks are the demo's
    (`demo.STACKS`)."""
    events: list[dict[str, Any]] = []
    live: dict[str, list[int]] = {name: [] for name, *_ in CHURN}
    weights = [weight for *_, weight, _cap in CHURN]
    address = 0x280000000
    leaks = leak_times(marks)
    t = 0.0
    while t < RUN_MS:
        t += rng.uniform(0.5, 1.5) * STEP_MS
        while leaks and leaks[0] <= t:
            address += 0x1000
            events.append(
                {"t_ms": round(leaks.pop(0), 3), "fn": "malloc", "address": address,
                 "size": leak_bytes, "category": "ChatImageCache", "stack": leak_stack,
                 "thread": 0}
            )  # fmt: skip
        name, stack, thread, size, _weight, cap = rng.choices(CHURN, weights)[0]
        blocks = live[name]
        limit = cap * (2 if marks[2][1] <= t < marks[3][1] else 1)
        if len(blocks) >= limit or (blocks and rng.random() < 0.35):
            events.append({"t_ms": round(t, 3), "fn": "free", "address": blocks.pop(0)})
            continue
        address += 0x1000
        blocks.append(address)
        events.append(
            {"t_ms": round(t, 3), "fn": "malloc", "address": address, "size": size,
             "category": name, "stack": stack, "thread": thread}
        )  # fmt: skip
    return events
