"""`bulk.upsert_add`: rows inserted, or their counters added to the stored row of their key;
two rows of one key in one call are summed first (PostgreSQL's ON CONFLICT DO UPDATE refuses a
key twice in one statement). Expected sums worked out by hand."""

from __future__ import annotations

import pytest

from memdash.allocations.models import BuildCategoryTotal, Category
from memdash.core.writes import apps as core_services
from memdash.core.writes import bulk

pytestmark = pytest.mark.django_db
KEYS = ["build_id", "category_id", "app_id"]
ADDED = ["persistent", "persistent_bytes", "transient", "transient_bytes", "snapshots"]


def totals() -> dict[tuple[int, str], tuple[int, ...]]:
    return {
        (t.build_id, t.category.name): (
            t.persistent, t.persistent_bytes, t.transient, t.transient_bytes, t.snapshots,
        )
        for t in BuildCategoryTotal.objects.select_related("category")
    }  # fmt: skip


def test_rows_are_added_to_their_key_and_a_key_twice_is_summed(app):
    build = core_services.get_or_create_build(app, "1.0")
    a, b = (
        Category.objects.create(app=app, name=name, name_hash=i, kind="heap")
        for i, name in enumerate(["A", "B"])
    )
    bulk.upsert_add(BuildCategoryTotal, KEYS, ADDED, [(build.pk, a.pk, app.pk, 1, 16, 2, 64, 1)])
    bulk.upsert_add(
        BuildCategoryTotal,
        KEYS,
        ADDED,
        [
            (build.pk, b.pk, app.pk, 5, 500, 0, 0, 1),
            (build.pk, a.pk, app.pk, 3, 48, 0, 0, 1),
            (build.pk, a.pk, app.pk, 0, 0, 7, 700, 1),
        ],
    )
    assert totals() == {
        (build.pk, "A"): (1 + 3, 16 + 48, 2 + 7, 64 + 700, 3),
        (build.pk, "B"): (5, 500, 0, 0, 1),
    }
