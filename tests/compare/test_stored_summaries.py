"""Build compare over nine snapshots a build (the rank test's normal approximation), through
the API: the stored per-build summaries give what the per-snapshot totals give, and follow the
build's snapshots as they are stored and deleted."""

from __future__ import annotations

import pytest

from memdash.allocations.models import Snapshot
from memdash.allocations.writes.snapshots import delete_snapshot
from memdash.compare.models import BuildSamples
from tests.compare.helpers import by_category, compare, document, row, store

pytestmark = pytest.mark.django_db

# As in test_build_summaries: Cache 100 B in 4 of the 9 base snapshots; in the target 100 B in
# 4 and 200 B in 5. Gone only in 3 base snapshots. Steady 1000 B everywhere.
BASE = [
    [row("Steady", 1, None, 10, 1000)]
    + ([row("Cache", 2, None, 1, 100)] if i < 4 else [])
    + ([row("Gone", 3, None, 1, 50)] if i in (0, 4, 8) else [])
    for i in range(9)
]
TARGET = [
    [row("Steady", 1, None, 10, 1000), row("Cache", 2, None, *((1, 100) if i < 4 else (2, 200)))]
    for i in range(9)
]


@pytest.fixture
def builds(upload):
    for i, rows in enumerate(BASE):
        store(upload, document(rows, device=f"A-{i}", generations=[]))
    for i, rows in enumerate(TARGET):
        store(upload, document(rows, version="2.0", number="2", device=f"B-{i}", generations=[]))


def test_stored_summaries_answer_as_the_totals_do(api_client, app, builds):
    assert not BuildSamples.objects.exists()
    first = compare(api_client, app)
    assert BuildSamples.objects.count() == 2  # one per build, made by the first comparison
    # significant first (Cache), then by the change: Gone's mean -16.7, Steady's nothing
    assert [r["category"] for r in first["rows"]] == ["Cache", "Gone", "Steady"]
    cache = by_category(first)["Cache"]
    # U = 73 of 81 pairs (worked out in test_build_summaries), p = 0.00248
    assert (cache["u"], cache["test"], cache["significant"]) == (73.0, "asymptotic", True)
    assert cache["p_value"] == pytest.approx(0.002479, abs=1e-6)
    assert (cache["base_bytes_median"], cache["target_bytes_median"]) == (0.0, 200.0)
    assert (cache["base_present"], cache["target_present"]) == (4, 9)
    gone = by_category(first)["Gone"]
    assert (gone["status"], gone["u"], gone["target_present"]) == ("gone", 27.0, 0)
    # read back from the stored summaries: the same answer
    assert compare(api_client, app) == first
    # a filter that keeps every snapshot reads the per-snapshot totals: the same rows
    filtered = compare(api_client, app, trigger="periodic")
    assert filtered["rows"] == first["rows"]
    # the gate on one category reads the stored summaries too
    only = compare(api_client, app, category="Cache")
    assert only["rows"] == [cache] and only["pass"] is False


def test_stored_summaries_follow_the_snapshots(api_client, app, builds, upload):
    compare(api_client, app)
    # a tenth target snapshot with 200 B of Cache: mean (4 * 100 + 6 * 200) / 10 = 160
    rows = [row("Steady", 1, None, 10, 1000), row("Cache", 2, None, 2, 200)]
    store(upload, document(rows, version="2.0", number="2", device="B-9", generations=[]))
    cache = by_category(compare(api_client, app))["Cache"]
    assert (cache["target_snapshots"], cache["target_present"]) == (10, 10)
    assert cache["target_bytes_mean"] == 160.0
    # a base snapshot with Cache deleted: 300 B over 8 snapshots
    with_cache = Snapshot.objects.filter(build__version="1.0", device__device_key="A-0").get()
    delete_snapshot(with_cache)
    cache = by_category(compare(api_client, app))["Cache"]
    assert (cache["base_snapshots"], cache["base_present"]) == (8, 3)
    assert cache["base_bytes_mean"] == 37.5
    assert BuildSamples.objects.count() == 2


def test_compare_page_reads_the_stored_summaries(member_client, app, builds):
    from memdash.core.models import Build

    base, target = Build.objects.get(version="1.0"), Build.objects.get(version="2.0")
    response = member_client.get(f"/apps/{app.pk}/compare/?base={base.pk}&target={target.pk}")
    assert response.status_code == 200
    rows = response.context["rows"]
    assert [r.category for r in rows] == ["Cache", "Gone", "Steady"]
    assert rows[0].bytes.test.u == 73.0 and rows[0].bytes.base.median == 0.0
    # the rank test on counts, shown nowhere, is there when asked for: base 0 x5, 1 x4 against
    # target 1 x4, 2 x5 (the bytes over again, in objects)
    assert rows[0].count.test.u == 73.0
    assert BuildSamples.objects.count() == 2


def test_reads_store_nothing_the_service_stores(app, builds):
    from memdash.compare import writes as services
    from memdash.compare.reads import builds as build_compare
    from memdash.compare.reads.refs import SnapshotFilter
    from memdash.core.models import Build

    base, target = Build.objects.get(version="1.0"), Build.objects.get(version="2.0")
    made = build_compare.compare_builds(base, target)
    assert not BuildSamples.objects.exists()  # a comparison only reads
    summaries = services.build_summaries(base, target)
    assert set(summaries) == {base.pk, target.pk} and BuildSamples.objects.count() == 2
    given = build_compare.compare_builds(base, target, summaries=summaries)
    stored = build_compare.compare_builds(base, target)
    assert given.values == stored.values == made.values
    # storing again replaces the build's summary (one upsert), it never adds a row
    services.store_build_summary(base, summaries[base.pk])
    assert BuildSamples.objects.count() == 2
    # a comparison of some snapshots is made from their totals: nothing to store
    assert services.build_summaries(base, target, SnapshotFilter(trigger="periodic")) == {}
