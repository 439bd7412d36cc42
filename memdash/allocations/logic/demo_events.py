"""A demo run recorded as allocator events (the events shape), so the demo has a snapshot with a
timeline: 24 s of build 8.0.2 in the lab, its four generation marks, cells, strings and layers
made and freed as the user scrolls, and ChatImageCache's 256 KiB images, the oldest evicted past
eight (as every build but 8.0.4 does). Not of the leaking build: the demo's comparisons of 8.0.3,
8.0.4 and 8.0.5 are of its four devices' snapshots."""

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
    ("VM: CoreAnimation", 15, 0, 2 * 1024 * 1024, 1, 6),
]
IMAGES_PER_MARK = 6  # images decoded in the first generation; 12 in the second, …
CACHED_IMAGES = 8  # what the cache keeps (before 8.0.4's leak): the oldest is evicted


def image_times(marks: Sequence[tuple[str, int]]) -> list[float]:
    """When the cache stores an image: 6 in the first generation, 12 in the second, …, each
    generation's spread evenly over it (the last one ends with the run)."""
    times: list[float] = []
    ends = [at for _name, at in marks[1:]] + [RUN_MS]
    for g, ((_name, start), end) in enumerate(zip(marks, ends, strict=True)):
        count = IMAGES_PER_MARK * (g + 1)
        times += [start + (k + 0.5) * (end - start) / count for k in range(count)]
    return times


def recorded_events(
    rng: random.Random, marks: Sequence[tuple[str, int]], image_stack: int, image_bytes: int
) -> list[dict[str, Any]]:
    """The run's events in time order: churn that stays bounded per category (more of it kept
    while the history scrolls, the third mark to the fourth), and the cache's images
    (`image_bytes` each, made at `image_stack`), the oldest evicted past CACHED_IMAGES. The
    stacks are the demo's (`demo.STACKS`)."""
    events: list[dict[str, Any]] = []
    live: dict[str, list[int]] = {name: [] for name, *_ in CHURN}
    weights = [weight for *_, weight, _cap in CHURN]
    address = 0x280000000
    images = image_times(marks)
    cached: list[int] = []
    t = 0.0
    while t < RUN_MS:
        t += rng.uniform(0.5, 1.5) * STEP_MS
        while images and images[0] <= t:
            at = round(images.pop(0), 3)
            address += 0x1000
            cached.append(address)
            events.append(
                {"t_ms": at, "fn": "malloc", "address": address, "size": image_bytes,
                 "category": "ChatImageCache", "stack": image_stack, "thread": 0}
            )  # fmt: skip
            if len(cached) > CACHED_IMAGES:
                events.append({"t_ms": at, "fn": "free", "address": cached.pop(0)})
        name, stack, thread, size, _weight, cap = rng.choices(CHURN, weights)[0]
        blocks = live[name]
        limit = cap * (2 if marks[2][1] <= t < marks[3][1] else 1)
        if len(blocks) >= limit or (blocks and rng.random() < 0.35):
            events.append({"t_ms": round(t, 3), "fn": "free", "address": blocks.pop(0)})
            continue
        address += 0x1000
        blocks.append(address)
        fn = "vm_allocate" if name.startswith("VM: ") else "malloc"
        events.append(
            {"t_ms": round(t, 3), "fn": fn, "address": address, "size": size,
             "category": name, "stack": stack, "thread": thread}
        )  # fmt: skip
    return events
