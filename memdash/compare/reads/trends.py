"""Reads of the trends page: persistent bytes per snapshot, build after build (selectors)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Sum

from memdash.allocations.models import BuildCategoryTotal, Category, CategoryTotal, Snapshot
from memdash.compare.logic.stats import Spread, describe
from memdash.compare.reads.refs import SnapshotFilter
from memdash.core.models import App, Build
from memdash.core.reads.apps import builds_in_release_order


@dataclass
class TrendPoint:
    build: Build
    snapshots: int
    total: Spread
    categories: dict[str, Spread]


def trends(
    app: App, categories: Iterable[str] = (), filters: SnapshotFilter | None = None
) -> list[TrendPoint]:
    """Per build in release order (builds without snapshots left out): persistent bytes per
    snapshot of the whole heap and of each chosen category (0 in a snapshot without it)."""
    filters = filters or SnapshotFilter()
    chosen = [c for c in categories if c]
    snapshots = filters.apply(Snapshot.objects.filter(app=app))
    per_build: dict[int, dict[int, int]] = defaultdict(dict)
    for sid, build_id, size in snapshots.values_list("pk", "build_id", "persistent_bytes"):
        per_build[build_id][sid] = size
    per_category: dict[tuple[int, str], int] = {}
    if chosen:
        rows = CategoryTotal.objects.filter(
            snapshot_id__in=snapshots.values("pk"), category__name__in=chosen
        )
        for sid, name, size in rows.values_list(
            "snapshot_id", "category__name", "persistent_bytes"
        ):
            per_category[(sid, name)] = size
    points = []
    for build in builds_in_release_order(app):
        sizes = per_build.get(build.pk)
        if not sizes:
            continue
        points.append(
            TrendPoint(
                build=build,
                snapshots=len(sizes),
                total=describe(list(sizes.values())),
                categories={
                    name: describe([per_category.get((sid, name), 0) for sid in sizes])
                    for name in chosen
                },
            )
        )
    return points


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
