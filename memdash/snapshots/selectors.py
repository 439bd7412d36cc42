"""Reads of the snapshots domain. Every statistics read comes from pre-aggregated tables
(CategoryTotal, GenerationCategoryTotal, BuildCategoryTotal), never from allocation rows."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import BigIntegerField, Count, Max, QuerySet, Value

from memdash.core.models import App, Build
from memdash.snapshots.analysis import (
    SUMMARY_ALL,
    SUMMARY_HEAP,
    SUMMARY_VM,
    frame_label,
    lifespan_counts,
)
from memdash.snapshots.models import (
    BuildCategoryTotal,
    Category,
    CategoryTotal,
    GenerationCategoryTotal,
    Snapshot,
)

SORT_KEYS = {
    "category": lambda r: r.category.lower(),
    "persistent_bytes": lambda r: r.persistent_bytes,
    "persistent": lambda r: r.persistent,
    "transient": lambda r: r.transient,
    "total_bytes": lambda r: r.total_bytes,
    "total": lambda r: r.total,
    "transient_bytes": lambda r: r.transient_bytes,
}
BASELINE = "baseline"  # the generation= value for allocations made before the first mark


@dataclass(slots=True)
class StatRow:
    category: str
    kind: str
    persistent: int
    persistent_bytes: int
    transient: int
    transient_bytes: int
    responsible_caller: str = ""
    category_id: int | None = None

    @property
    def total(self) -> int:
        return self.persistent + self.transient

    @property
    def total_bytes(self) -> int:
        return self.persistent_bytes + self.transient_bytes

    @property
    def transient_share(self) -> float:
        """Transient / Total Bytes, for the bar Instruments draws."""
        return self.transient_bytes / self.total_bytes if self.total_bytes else 0.0

    def as_json(self) -> dict:
        return {
            "category": self.category,
            "kind": self.kind,
            "persistent": self.persistent,
            "persistent_bytes": self.persistent_bytes,
            "transient": self.transient,
            "transient_bytes": self.transient_bytes,
            "total": self.persistent + self.transient,
            "total_bytes": self.persistent_bytes + self.transient_bytes,
            "responsible_caller": self.responsible_caller,
        }


@dataclass
class Statistics:
    summary: list[StatRow]
    rows: list[StatRow]

    def as_json(self) -> dict:
        return {
            "summary": [r.as_json() for r in self.summary],
            "rows": [r.as_json() for r in self.rows],
        }


def summarise(rows: list[StatRow]) -> list[StatRow]:
    """The three summary rows of Instruments' statistics table, in one pass."""
    sums = {"heap": [0, 0, 0, 0], "vm": [0, 0, 0, 0]}
    for r in rows:
        acc = sums[r.kind]
        acc[0] += r.persistent
        acc[1] += r.persistent_bytes
        acc[2] += r.transient
        acc[3] += r.transient_bytes
    heap, vm = sums["heap"], sums["vm"]
    both = [h + v for h, v in zip(heap, vm, strict=True)]
    return [
        StatRow(SUMMARY_ALL, "summary", *both),
        StatRow(SUMMARY_HEAP, "summary", *heap),
        StatRow(SUMMARY_VM, "summary", *vm),
    ]


def _stat_rows(values: QuerySet, lifespan: str) -> list[StatRow]:
    """Rows from (category id, name, kind, p, pb, t, tb, *caller frame) tuples, the caller
    frame being (symbol, image, offset, address), all None where there is none."""
    rows = []
    for category_id, name, kind, p, pb, t, tb, *caller in values:
        p, pb, t, tb = lifespan_counts((p, pb, t, tb), lifespan)
        if p == pb == t == tb == 0:
            continue  # nothing kept under this lifespan filter
        label = frame_label(*caller) if any(v is not None for v in caller) else ""
        rows.append(StatRow(name, kind, p, pb, t, tb, label, category_id))
    rows.sort(key=lambda r: (-r.total_bytes, r.category))
    return rows


COUNTER_FIELDS = ("persistent", "persistent_bytes", "transient", "transient_bytes")
CATEGORY_FIELDS = ("category_id", "category__name", "category__kind")
CALLER_FIELDS = tuple(
    f"responsible_frame__{name}" for name in ("symbol", "image", "offset", "address")
)
# Tables without a responsible caller answer four nulls in its place.
NO_CALLER = [Value(None, output_field=BigIntegerField()) for _ in CALLER_FIELDS]


def snapshot_statistics(
    snapshot: Snapshot, lifespan: str = "all", generation: int | str | None = None
) -> Statistics:
    """The statistics table of a snapshot; `generation` an index, BASELINE, or None for all."""
    if generation is None:
        values = CategoryTotal.objects.filter(snapshot_id=snapshot.pk).values_list(
            *CATEGORY_FIELDS, *COUNTER_FIELDS, *CALLER_FIELDS
        )
    else:
        values = GenerationCategoryTotal.objects.filter(snapshot_id=snapshot.pk)
        if generation == BASELINE:
            values = values.filter(generation__isnull=True)
        else:
            values = values.filter(generation=int(generation))
        values = values.values_list(*CATEGORY_FIELDS, *COUNTER_FIELDS, *NO_CALLER)
    rows = _stat_rows(values, lifespan)
    return Statistics(summarise(rows), rows)


def build_statistics(build: Build, lifespan: str = "all") -> Statistics:
    """Sums over the build's snapshots (divide by `build_snapshot_count` for averages)."""
    values = BuildCategoryTotal.objects.filter(build=build).values_list(
        *CATEGORY_FIELDS, *COUNTER_FIELDS, *NO_CALLER
    )
    rows = _stat_rows(values, lifespan)
    return Statistics(summarise(rows), rows)


def filter_and_sort(
    rows: list[StatRow], query: str = "", sort: str = "total_bytes", descending: bool = True
) -> list[StatRow]:
    if query:
        needle = query.lower()
        rows = [r for r in rows if needle in r.category.lower()]
    key = SORT_KEYS.get(sort, SORT_KEYS["total_bytes"])
    return sorted(rows, key=key, reverse=descending)


def snapshots_for_user(user) -> QuerySet[Snapshot]:
    from memdash.core.selectors import apps_for_user

    return Snapshot.objects.filter(app__in=apps_for_user(user))


def snapshot_for_user(user, snapshot_id: int) -> Snapshot:
    from django.http import Http404

    try:
        return snapshots_for_user(user).select_related("app", "build", "device").get(pk=snapshot_id)
    except Snapshot.DoesNotExist:
        raise Http404("No such snapshot") from None


def build_rows(app: App) -> list[dict]:
    """The builds of an app in release order with snapshot count, last upload and the median
    persistent bytes of their snapshots (read from the one-row-per-snapshot totals)."""
    builds = (
        Build.objects.filter(app=app)
        .annotate(snapshot_count=Count("snapshots"), last_upload=Max("snapshots__created_at"))
        .order_by("pk")
    )
    per_build: dict[int, list[int]] = {}
    for build_id, pb in Snapshot.objects.filter(app=app).values_list(
        "build_id", "persistent_bytes"
    ):
        per_build.setdefault(build_id, []).append(pb)
    out = []
    for build in sorted(builds, key=lambda b: b.release_key):
        values = sorted(per_build.get(build.pk, []))
        median = values[len(values) // 2] if values else 0
        out.append({"build": build, "median_persistent_bytes": median})
    return out


def build_snapshots(build: Build, trigger: str = "", model: str = "", os: str = "") -> QuerySet:
    snapshots = Snapshot.objects.filter(build=build).select_related("device")
    if trigger:
        snapshots = snapshots.filter(trigger=trigger)
    if model:
        snapshots = snapshots.filter(device_model=model)
    if os:
        snapshots = snapshots.filter(os=os)
    return snapshots


def category_by_name(app: App, name: str) -> Category | None:
    return Category.objects.filter(app=app, name=name).first()
