"""The `events` shape of bench/generate.py: malloc/calloc/realloc/free/vm_allocate/
vm_deallocate with addresses that are really live when freed (plus a few frees of blocks
allocated before recording began)."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Any

from generate_names import VM_TAGS
from generate_sizes import CategorySpec, Sizes, generation_marks, malloc_sizes, zipf_cum_weights


@dataclass
class LiveSet:
    """Live blocks with O(1) random pick and removal."""

    addresses: list[int]
    position: dict[int, int]

    @classmethod
    def empty(cls) -> LiveSet:
        return cls([], {})

    def add(self, address: int) -> None:
        self.position[address] = len(self.addresses)
        self.addresses.append(address)

    def pop_random(self, rng: random.Random) -> int:
        i = rng.randrange(len(self.addresses))
        address = self.addresses[i]
        last = self.addresses.pop()
        if last != address:
            self.addresses[i] = last
            self.position[last] = i
        del self.position[address]
        return address

    def __len__(self) -> int:
        return len(self.addresses)


EVENT_MIX = [  # (fn, weight): frees trail allocations so the heap grows during the run
    ("malloc", 44),
    ("calloc", 6),
    ("realloc", 6),
    ("free", 38),
    ("vm_allocate", 3),
    ("vm_deallocate", 2),
    ("free_unmatched", 1),
]


def make_events(
    rng: random.Random,
    sizes: Sizes,
    categories: list[CategorySpec],
    sites: list[int],
) -> list[dict[str, Any]]:
    heap_cats = [c for c in categories if not c.is_vm]
    class_cats = [c for c in heap_cats if not c.name.startswith("Malloc ")]
    small_sizes = malloc_sizes()[:64] + [1536, 2048, 4096, 8192, 16384]
    size_weights = zipf_cum_weights(len(small_sizes), 0.9)
    class_weights = zipf_cum_weights(len(class_cats))
    site_weights = zipf_cum_weights(len(sites), 0.6)
    thread_weights = zipf_cum_weights(sizes.threads, 1.3)
    fns = [fn for fn, _ in EVENT_MIX]
    fn_weights = list(itertools.accumulate(w for _, w in EVENT_MIX))
    vm_tags = [*VM_TAGS, None, None]

    n = sizes.events
    fn_draw = rng.choices(fns, cum_weights=fn_weights, k=n)
    site_draw = rng.choices(sites, cum_weights=site_weights, k=n)
    thread_draw = rng.choices(range(sizes.threads), cum_weights=thread_weights, k=n)

    heap, vm = LiveSet.empty(), LiveSet.empty()
    reusable: list[int] = []  # freed heap addresses, reused LIFO like a real allocator
    next_heap, next_vm = 0x280000000, 0x300000000
    t_ms = 0.0
    duration_ms = generation_marks(sizes.generations)[-1]["at_ms"] + 4000
    step = duration_ms / max(1, n)
    events: list[dict[str, Any]] = []

    def new_heap_address() -> int:
        nonlocal next_heap
        while reusable and rng.random() < 0.5:
            address = reusable.pop()
            if address not in heap.position:
                return address
        next_heap += 16 * rng.randint(1, 64)
        return next_heap

    for fn, site, thread in zip(fn_draw, site_draw, thread_draw, strict=True):
        t_ms += rng.expovariate(1.0 / step)
        event: dict[str, Any] = {"t_ms": round(t_ms, 3), "fn": fn}
        if fn in ("free", "vm_deallocate", "realloc") and not (
            heap if fn != "vm_deallocate" else vm
        ):
            fn = event["fn"] = "malloc"  # nothing live yet to free
        if fn in ("malloc", "calloc"):
            address = new_heap_address()
            heap.add(address)
            event["address"] = address
            if rng.random() < 0.5:  # an object allocation: the monitor names its class
                cat = class_cats[rng.choices(range(len(class_cats)), cum_weights=class_weights)[0]]
                event["size"] = cat.unit_size
                event["category"] = cat.name
            else:  # a raw malloc: memdash names it `Malloc <size>`
                event["size"] = small_sizes[
                    rng.choices(range(len(small_sizes)), cum_weights=size_weights)[0]
                ]
        elif fn == "realloc":
            old = heap.pop_random(rng)
            reusable.append(old)
            address = new_heap_address()
            heap.add(address)
            event["old_address"] = old
            event["address"] = address
            event["size"] = small_sizes[rng.randrange(len(small_sizes))]
        elif fn == "free":
            address = heap.pop_random(rng)
            reusable.append(address)
            event["address"] = address
        elif fn == "free_unmatched":  # a block allocated before recording began
            event["fn"] = "free"
            event["address"] = 0x200000000 + 16 * rng.randrange(1 << 20)
            events.append(event)
            continue
        elif fn == "vm_allocate":
            next_vm += 16384 * rng.randint(1, 256)
            vm.add(next_vm)
            event["address"] = next_vm
            event["size"] = 16384 * rng.choice([1, 1, 2, 4, 8, 16, 64])
            tag = rng.choice(vm_tags)
            if tag is not None:
                event["vm_tag"] = tag
        elif fn == "vm_deallocate":
            event["address"] = vm.pop_random(rng)
        if fn in ("malloc", "calloc", "realloc", "vm_allocate"):
            event["stack"] = site
            event["thread"] = thread
        events.append(event)
    return events
