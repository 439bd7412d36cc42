"""Reads of a snapshot's generations, as Instruments lists them: the allocations made before the
first mark (the baseline), then one row per mark with its Growth (persistent bytes created in
it) and # Persistent. Read from Generation rows and, for the baseline, GenerationCategoryTotal."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from django.db.models import Sum

from memdash.allocations.logic.analysis import BASELINE, generation_name
from memdash.allocations.models import GenerationCategoryTotal, Snapshot

# A generations table as CSV (`GenerationRow.csv_cells`), on every page that lists one.
GENERATION_HEADERS = ["Generation", "Since launch (ms)", "Growth bytes", "# Persistent"]


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

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def csv_cells(self) -> list[str | int | None]:
        """The row under `GENERATION_HEADERS`: bytes in bytes, the time in milliseconds."""
        return [self.name, self.at_ms, self.growth_bytes, self.persistent]


def snapshot_generations(snapshot: Snapshot) -> list[GenerationRow]:
    baseline = GenerationCategoryTotal.objects.filter(
        app_id=snapshot.app_id, snapshot_id=snapshot.pk, generation__isnull=True
    ).aggregate(growth=Sum("persistent_bytes"), persistent=Sum("persistent"))
    rows = [
        GenerationRow(
            None, generation_name(None), None, baseline["growth"] or 0, baseline["persistent"] or 0
        )
    ]
    for g in snapshot.generations.order_by("index"):
        rows.append(
            GenerationRow(g.index, generation_name(g.index, g.name), g.at_ms, g.growth_bytes,
                          g.persistent)
        )  # fmt: skip
    return rows


def has_generation(snapshot: Snapshot, generation: int | str | None) -> bool:
    """Whether a parsed `generation=` value names a part of the snapshot: all of it (None), the
    baseline, or one of its marks; an index past its last mark names nothing."""
    if not isinstance(generation, int):
        return True
    return snapshot.generations.filter(index=generation).exists()
