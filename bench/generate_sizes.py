"""Sizes, Zipf weights, allocation categories and the timeline of bench/generate.py.

The lowest floor of the generator besides the name pools: everything the stacks, the rows and
the events share lives here, so those modules import down and never from each other.
"""

from __future__ import annotations

import itertools
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generate_names import (
    CLASS_PREFIXES,
    CLASS_WORDS_1,
    CLASS_WORDS_2,
    GENERATION_NAMES,
    SYSTEM_CLASSES,
    THREAD_NAMES,
    VM_CATEGORY_NAMES,
)

# memdash's own category names (memdash.core.logic.units is pure: no Django, no settings).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from memdash.core.logic.units import malloc_category  # noqa: E402

# ---------------------------------------------------------------------------------------------
# Sizes


@dataclass(frozen=True)
class Sizes:
    rows: int = 1_000_000
    nodes: int = 200_000
    categories: int = 5_000
    events: int = 1_000_000
    threads: int = 24
    generations: int = 8
    seed: int = 8
    variant: int = 0  # another snapshot of the same app: same stacks and frames, other rows
    bundle_id: str = "com.example.chat"
    build_version: str = "9.0.0"
    build_number: str = "900"
    device_id: str = "BENCH-DEVICE-1"
    distinct_frames: int = 0  # 0: a fifth of the nodes

    @property
    def frames(self) -> int:
        # Real trees reuse a frame at many nodes (the same method called from many places).
        return self.distinct_frames or max(64, self.nodes // 5)


SMALL = Sizes(rows=10_000, nodes=4_000, categories=400, events=10_000)

# ---------------------------------------------------------------------------------------------
# Categories


@dataclass(frozen=True)
class CategorySpec:
    name: str
    unit_size: int  # bytes of one allocation of this category
    is_vm: bool


def malloc_sizes() -> list[int]:
    small = list(range(16, 1025, 16))  # tiny/nano quanta
    kib = [1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152, 65536, 131072]
    mib = [1 << 20, 2 << 20, 4 << 20]
    return small + kib + mib


def make_categories(rng: random.Random, count: int) -> list[CategorySpec]:
    """Categories in Zipf rank order: rank 0 is the most frequent."""
    mallocs = [CategorySpec(malloc_category(s), s, False) for s in malloc_sizes()]
    systems = [CategorySpec(n, 16 * rng.randint(1, 16), False) for n in SYSTEM_CLASSES]
    vms = [
        CategorySpec(n, 16384 * rng.choice([1, 1, 2, 4, 8, 16]), True) for n in VM_CATEGORY_NAMES
    ]
    app_names = (
        f"{prefix}{w1}{w2}"
        for prefix, w1, w2 in itertools.product(CLASS_PREFIXES, CLASS_WORDS_1, CLASS_WORDS_2)
    )
    fixed = len(mallocs) + len(systems) + len(vms)
    app_count = max(0, count - fixed)
    pool = list(itertools.islice(app_names, 0, None))
    rng.shuffle(pool)
    if app_count > len(pool):  # more than the word product: number the rest, still unique
        pool += [f"ChatGen{i}Model" for i in range(app_count - len(pool))]
    apps = [CategorySpec(name, 16 * rng.randint(2, 32), False) for name in pool[:app_count]]
    # The head of the distribution is what it is on a real device: small mallocs and the
    # Foundation containers; the long tail mixes everything else.
    head = mallocs[:12] + systems[:12]
    rng.shuffle(head)
    tail = mallocs[12:] + systems[12:] + vms + apps
    rng.shuffle(tail)
    return (head + tail)[:count]


def zipf_cum_weights(count: int, exponent: float = 1.1) -> list[float]:
    return list(itertools.accumulate(1.0 / (rank**exponent) for rank in range(1, count + 1)))


# ---------------------------------------------------------------------------------------------
# Threads and generation marks


def thread_names(count: int) -> list[str]:
    names = list(THREAD_NAMES[:count])
    names += [f"Thread {i}" for i in range(len(names), count)]
    return names


def generation_marks(count: int) -> list[dict[str, Any]]:
    marks = []
    at = 1200  # the first mark comes after launch began: rows before it have generation null
    for i in range(count):
        name = GENERATION_NAMES[i] if i < len(GENERATION_NAMES) else f"Mark {i}"
        marks.append({"name": name, "at_ms": at})
        at += 2500 + 1500 * i
    return marks
