"""Reads of the trends page: persistent bytes per snapshot, build after build or day after
day (selectors)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from typing import cast

from django.db.models import Sum
from django.utils import timezone

from memdash.allocations.models import BuildCategoryTotal, Category, CategoryTotal, Snapshot
from memdash.compare.logic.stats import Spread
from memdash.compare.logic.trends import DateRange, Sample, by_build, by_day, within
from memdash.compare.reads.refs import SnapshotFilter
from memdash.core.models import App, Build
from memdash.core.reads.apps import builds_in_release_order


@dataclass
class TrendPoint:
    """One x of the trends chart: a build (x by build) or a capture day (x by date)."""

    build: Build | None
    day: date | None
    snapshots: int
    total: Spread
    categories: dict[str, Spread]

    @property
    def label(self) -> str:
        return str(self.build) if self.build is not None else str(self.day)


def samples(
    app: App, categories: Iterable[str] = (), filters: SnapshotFilter | None = None
) -> list[Sample]:
    """Each matching snapshot's build, capture day (in the site's time zone), persistent bytes
    and those of the chosen categories it has."""
    filters = filters or SnapshotFilter()
    chosen = [c for c in categories if c]
    snapshots = filters.apply(Snapshot.objects.filter(app=app))
    per_category: dict[int, dict[str, int]] = defaultdict(dict)
    if chosen:
        # The app named on both tables joined (the totals and their categories): on Citus the
        # query then goes to the app's worker (a join by the category's id alone is refused).
        rows = CategoryTotal.objects.filter(
            app=app, snapshot_id__in=snapshots.values("pk"), category__app=app,
            category__name__in=chosen,
        )  # fmt: skip
        for sid, name, size in rows.values_list(
            "snapshot_id", "category__name", "persistent_bytes"
        ):
            per_category[sid][name] = size
    return [
        Sample(build_id, timezone.localtime(captured_at).date(), size, per_category.get(sid, {}))
        for sid, build_id, captured_at, size in snapshots.order_by("captured_at", "pk").values_list(
            "pk", "build_id", "captured_at", "persistent_bytes"
        )
    ]


def trends(
    app: App,
    categories: Iterable[str] = (),
    filters: SnapshotFilter | None = None,
    axis: str = "build",
    days: DateRange | None = None,
) -> list[TrendPoint]:
    """Per build in release order, or per capture day (`axis`), of the snapshots captured in
    `days`: persistent bytes per snapshot of the whole heap and of each chosen category (0 in
    a snapshot without it). Builds and days without snapshots are left out."""
    chosen = [c for c in categories if c]
    kept = within(samples(app, chosen, filters), days or DateRange())
    if axis == "date":
        return [
            TrendPoint(None, cast(date, p.key), p.snapshots, p.total, p.categories)
            for p in by_day(kept, chosen)
        ]
    builds = {b.pk: b for b in builds_in_release_order(app)}
    return [
        TrendPoint(builds[cast(int, p.key)], None, p.snapshots, p.total, p.categories)
        for p in by_build(kept, list(builds), chosen)
    ]


def top_categories(app: App, limit: int = 200) -> list[str]:
    """Category names by persistent bytes over all builds, for the trends picker."""
    sums = (
        BuildCategoryTotal.objects.filter(build__app=app)
        .values("category__name")
        .annotate(total=Sum("persistent_bytes"))
        .order_by("-total", "category__name")[:limit]
    )
    return [row["category__name"] for row in sums]


def known_categories(app: App, names: Iterable[str]) -> list[str]:
    """The names that are categories of the app, in the order given."""
    wanted = [n for n in names if n]
    found = set(Category.objects.filter(app=app).named(wanted).values_list("name", flat=True))
    return [n for n in wanted if n in found]
