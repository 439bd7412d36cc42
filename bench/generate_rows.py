"""The `allocations` shape of bench/generate.py: aggregated rows, unique by
(category, stack, thread, generation), with heavy-tailed persistent and transient counts."""

from __future__ import annotations

import itertools
import random
from typing import Any

from generate_sizes import CategorySpec, Sizes, zipf_cum_weights


def heavy_tail_count(rng: random.Random, alpha: float, cap: int) -> int:
    return min(cap, int(rng.paretovariate(alpha)))


def make_rows(
    rng: random.Random,
    sizes: Sizes,
    categories: list[CategorySpec],
    sites: list[int],
) -> list[dict[str, Any]]:
    """`sizes.rows` rows, each unique by (category, stack, thread, generation)."""
    n = sizes.rows
    cat_weights = zipf_cum_weights(len(categories))
    site_weights = zipf_cum_weights(len(sites), 0.4)
    thread_weights = zipf_cum_weights(sizes.threads, 1.3)
    gen_values: list[int | None] = [None, *range(sizes.generations)]
    gen_weights = list(itertools.accumulate([3.0] + [1.0] * sizes.generations))
    # An allocation site mostly allocates one type; mallocs of several sizes happen too.
    primary = rng.choices(range(len(categories)), cum_weights=cat_weights, k=len(sites))
    site_primary = dict(zip(sites, primary, strict=True))

    rows: list[dict[str, Any]] = []
    seen: set[int] = set()
    n_cat, n_thread, n_gen = len(categories), sizes.threads, len(gen_values)
    while len(rows) < n:
        batch = n - len(rows) + 16
        site_draw = rng.choices(sites, cum_weights=site_weights, k=batch)
        cat_draw = rng.choices(range(n_cat), cum_weights=cat_weights, k=batch)
        thread_draw = rng.choices(range(n_thread), cum_weights=thread_weights, k=batch)
        gen_draw = rng.choices(range(n_gen), cum_weights=gen_weights, k=batch)
        for site, cat, thread, gen in zip(site_draw, cat_draw, thread_draw, gen_draw, strict=True):
            if rng.random() < 0.6:
                cat = site_primary[site]
            key = ((site * n_thread + thread) * n_gen + gen) * n_cat + cat
            if key in seen:
                continue
            seen.add(key)
            rows.append(allocation_row(rng, categories[cat], site, thread, gen_values[gen]))
            if len(rows) == n:
                break
    return rows


def allocation_row(
    rng: random.Random, cat: CategorySpec, site: int, thread: int, generation: int | None
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "category": cat.name,
        "stack": site,
        "thread": thread,
        "generation": generation,
    }
    unit = cat.unit_size
    if cat.is_vm:
        persistent = heavy_tail_count(rng, 2.5, 64)
        transient = heavy_tail_count(rng, 2.0, 64) - 1
    else:
        persistent = heavy_tail_count(rng, 1.6, 5_000) - (1 if rng.random() < 0.3 else 0)
        transient = heavy_tail_count(rng, 1.3, 100_000) - 1
    if persistent == 0 and transient <= 0:
        persistent = 1
    # Devices leave out zero counters (they default to 0 in the format).
    if persistent:
        row["persistent"] = persistent
        row["persistent_bytes"] = persistent * unit
    if transient > 0:
        row["transient"] = transient
        row["transient_bytes"] = transient * unit
    return row
