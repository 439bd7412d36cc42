"""Migration 0013: the build totals, updated in place by every upload of their build, lose their
index by build alone (the unique (build, category) index serves every read and starts with the
build) and, on PostgreSQL, leave half of each page free for those updates; undone, both come
back. Build totals already stored are kept either way."""

import pytest
from django.db import connection

from tests.migrations import latest, migrate, table_indexes

pytestmark = pytest.mark.slow  # migrations back and forth

BEFORE = [("allocations", "0012_totals_not_indexed_by_category")]
TABLE = "snapshots_buildcategorytotal"


def by_build_alone() -> list[str]:
    return [name for name, columns in table_indexes(TABLE).items() if columns == ["build_id"]]


def table_options() -> list[str]:
    """The table's storage parameters (PostgreSQL's reloptions)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = %s", [TABLE])
        return cursor.fetchone()[0] or []


def stored_totals(apps) -> list[tuple[int, int, int]]:
    total = apps.get_model("allocations", "BuildCategoryTotal")
    return list(total.objects.order_by("pk").values_list("build_id", "category_id", "persistent"))


@pytest.mark.django_db(transaction=True)
def test_the_index_by_build_alone_goes_and_the_pages_keep_room(back_to_latest):
    assert by_build_alone() == []
    old = migrate(BEFORE)
    assert len(by_build_alone()) == 1
    app = old.get_model("core", "App").objects.create(bundle_id="com.example.m13", platform="ios")
    build = old.get_model("core", "Build").objects.create(app=app, version="1.0")
    category = old.get_model("allocations", "Category").objects.create(
        app=app, name="NSString", name_hash=7, kind="heap"
    )
    old.get_model("allocations", "BuildCategoryTotal").objects.create(
        build=build, category=category, persistent=3, snapshots=1
    )
    if connection.vendor == "postgresql":
        assert "fillfactor=50" not in table_options()
    new = migrate(latest())
    assert by_build_alone() == []
    assert stored_totals(new) == [(build.pk, category.pk, 3)]
    if connection.vendor == "postgresql":
        assert "fillfactor=50" in table_options()
    old.get_model("core", "App").objects.filter(pk=app.pk).delete()
