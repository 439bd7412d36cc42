"""Reads of a snapshot's generations, as Instruments lists them: the allocations made before the
first mark (the baseline), then one row per mark with its Growth (persistent bytes created in
it) and # Persistent. Read from Generation rows and, for the baseline, GenerationCategoryTotal."""

from __future__ import annotations

import string
from dataclasses import asdict, dataclass

from django.db.models import Sum

from memdash.allocations.models import GenerationCategoryTotal, Snapshot
from memdash.allocations.selectors import BASELINE

BASELINE_NAME = "Before first mark"


@dataclass(frozen=True)
class GenerationRow:
    index: int | None  # None: the baseline, before the first mark
    name: str
    at_ms: int | None
    growth_bytes: int
    persistent: int

    @property
    def query_value(self) -> str:
        """The `generation=` value that selects it in the statistics and call-tree views."""
        return BASELINE if self.index is None else str(self.index)

    def as_json(self) -> dict:
        return asdict(self)


def generation_name(index: int, name: str) -> str:
    """The mark's own name, else Instruments' `Generation A`, `Generation B`, … `AA`, …"""
    if name:
        return name
    letters = ""
    n = index
    while True:
        letters = string.ascii_uppercase[n % 26] + letters
        n = n // 26 - 1
        if n < 0:
            break
    return f"Generation {letters}"


def snapshot_generations(snapshot: Snapshot) -> list[GenerationRow]:
    baseline = GenerationCategoryTotal.objects.filter(
        snapshot_id=snapshot.pk, generation__isnull=True
    ).aggregate(growth=Sum("persistent_bytes"), persistent=Sum("persistent"))
    rows = [
        GenerationRow(
            None, BASELINE_NAME, None, baseline["growth"] or 0, baseline["persistent"] or 0
        )
    ]
    for g in snapshot.generations.order_by("index"):
        rows.append(
            GenerationRow(g.index, generation_name(g.index, g.name), g.at_ms, g.growth_bytes,
                          g.persistent)
        )  # fmt: skip
    return rows
