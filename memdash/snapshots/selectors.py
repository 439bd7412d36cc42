"""Reads of the snapshots domain. Every statistics read comes from pre-aggregated tables
(CategoryTotal, GenerationCategoryTotal, BuildCategoryTotal), never from allocation rows."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from django.db.models import Count, Max, QuerySet

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
    Frame,
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


@dataclass
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
        data = asdict(self)
        data.pop("category_id")
        data["total"], data["total_bytes"] = self.total, self.total_bytes
        return data


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
    """The three summary rows of Instruments' statistics table."""
    out = []
    for name, kinds in (
        (SUMMARY_ALL, {"heap", "vm"}),
        (SUMMARY_HEAP, {"heap"}),
        (SUMMARY_VM, {"vm"}),
    ):
        picked = [r for r in rows if r.kind in kinds]
        out.append(
            StatRow(
                category=name,
                kind="summary",
                persistent=sum(r.persistent for r in picked),
                persistent_bytes=sum(r.persistent_bytes for r in picked),
                transient=sum(r.transient for r in picked),
                transient_bytes=sum(r.transient_bytes for r in picked),
            )
        )
    return out


def _stat_rows(values: QuerySet, lifespan: str, with_callers: bool = False) -> list[StatRow]:
    rows = []
    caller_ids = set()
    for v in values:
        p, pb, t, tb = lifespan_counts(
            (v["persistent"], v["persistent_bytes"], v["transient"], v["transient_bytes"]),
            lifespan,
        )
        if p == pb == t == tb == 0:
            continue  # nothing kept under this lifespan filter
        row = StatRow(v["category__name"], v["category__kind"], p, pb, t, tb)
        row.category_id = v["category_id"]
        if with_callers and v.get("responsible_frame_id"):
            row.responsible_caller = v["responsible_frame_id"]
            caller_ids.add(v["responsible_frame_id"])
        rows.append(row)
    if caller_ids:
        labels = {
            f.id: frame_label(f.symbol, f.image, f.offset, f.address)
            for f in Frame.objects.filter(id__in=caller_ids)
        }
        for row in rows:
            if row.responsible_caller:
                row.responsible_caller = labels.get(row.responsible_caller, "")
    rows.sort(key=lambda r: (-r.total_bytes, r.category))
    return rows


COUNTER_FIELDS = ("persistent", "persistent_bytes", "transient", "transient_bytes")


def snapshot_statistics(
    snapshot: Snapshot, lifespan: str = "all", generation: int | str | None = None
) -> Statistics:
    """The statistics table of a snapshot; `generation` an index, BASELINE, or None for all."""
    if generation is None:
        values = CategoryTotal.objects.filter(snapshot_id=snapshot.pk).values(
            "category_id", "category__name", "category__kind", "responsible_frame_id",
            *COUNTER_FIELDS,
        )  # fmt: skip
        rows = _stat_rows(values, lifespan, with_callers=True)
    else:
        values = GenerationCategoryTotal.objects.filter(snapshot_id=snapshot.pk)
        if generation == BASELINE:
            values = values.filter(generation__isnull=True)
        else:
            values = values.filter(generation=int(generation))
        rows = _stat_rows(
            values.values("category_id", "category__name", "category__kind", *COUNTER_FIELDS),
            lifespan,
        )
    return Statistics(summarise(rows), rows)


def build_statistics(build: Build, lifespan: str = "all") -> Statistics:
    """Sums over the build's snapshots (divide by `build_snapshot_count` for averages)."""
    values = BuildCategoryTotal.objects.filter(build=build).values(
        "category_id", "category__name", "category__kind", *COUNTER_FIELDS
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
