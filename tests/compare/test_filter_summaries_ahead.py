"""Build compare under one of the build page's filters reads the summaries made ahead for each
filter value (`writes.refresh_filter_summaries`), which give what the snapshots' totals give.

Six snapshots a build; base 1.0, target 2.0:
    #0-#2 periodic, iPhone14,5, iOS 17.4: Steady 1000 B (10); Cache 100 B (1) in base #0, #1
          and in every target one
    #3-#5 foom, iPhone12,1, iOS 16.7: Steady 1000 B; Cache 300 B (3) in base, 600 B (6) in
          target; Leak 50 B (1) in base #3 only

Under trigger=foom (or model iPhone12,1, or OS iOS 16.7): Cache base 300 x3 (median 300),
target 600 x3 (median 600); Leak base present in 1 of 3, gone from the target. Under
trigger=periodic: Cache base 0, 100, 100 (median 100, present 2), target 100 x3 (present 3).
"""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memdash.allocations.models import Snapshot
from memdash.allocations.reads.calltree.made import chosen_key
from memdash.compare import writes as services
from memdash.compare.models import BuildFilterSamples
from memdash.compare.reads.builds import made_summary
from memdash.compare.reads.filter_summaries import stored_filter_summary
from memdash.compare.reads.refs import SnapshotFilter, snapshot_ids
from memdash.compare.tasks import refresh_build_summary
from memdash.core.models import Build
from tests.compare.helpers import by_category, compare, document, row, store

pytestmark = pytest.mark.django_db

PERIODIC = ("periodic", "iPhone14,5", "iOS 17.4")
FOOM = ("foom", "iPhone12,1", "iOS 16.7")


def base_rows(i: int) -> list[dict]:
    cache = [row("Cache", 2, None, 1, 100)] if i < 2 else []
    if i >= 3:
        cache = [row("Cache", 2, None, 3, 300)]
    return [row("Steady", 1, None, 10, 1000), *cache,
            *([row("Leak", 3, None, 1, 50)] if i == 3 else [])]  # fmt: skip


def target_rows(i: int) -> list[dict]:
    return [row("Steady", 1, None, 10, 1000),
            row("Cache", 2, None, *((1, 100) if i < 3 else (6, 600)))]  # fmt: skip


def put(upload, rows, version: str, number: str, device: str, chosen: tuple[str, str, str]):
    trigger, model, os = chosen
    doc = document(rows, version=version, number=number, device=device, trigger=trigger,
                   model=model, os=os, generations=[])  # fmt: skip
    store(upload, doc)


@pytest.fixture
def builds(upload) -> tuple[Build, Build]:
    for i in range(6):
        put(upload, base_rows(i), "1.0", "1", f"A-{i}", PERIODIC if i < 3 else FOOM)
        put(upload, target_rows(i), "2.0", "2", f"B-{i}", PERIODIC if i < 3 else FOOM)
    return Build.objects.get(version="1.0"), Build.objects.get(version="2.0")


def test_one_pass_makes_each_filter_values_summary_as_its_totals_do(builds):
    base, _ = builds
    assert services.refresh_filter_summaries(base) == 6  # 2 triggers, 2 models, 2 OSes
    for filters in [SnapshotFilter(trigger="foom"), SnapshotFilter(trigger="periodic"),
                    SnapshotFilter(model="iPhone14,5"), SnapshotFilter(os="iOS 16.7")]:  # fmt: skip
        ids = snapshot_ids(base, filters)
        stored = stored_filter_summary(base, filters, ids)
        made = made_summary(base, ids)
        assert stored is not None, filters
        assert (stored.snapshot_ids, stored.names, stored.records) == (
            made.snapshot_ids, made.names, made.records,
        )  # fmt: skip
        assert list(stored.bytes_values) == list(made.bytes_values)
        assert list(stored.bytes_starts) == list(made.bytes_starts)
        assert [list(c) for c in stored.count_source()] == [list(c) for c in made.count_columns]
    # two filters at once are never made ahead
    both = SnapshotFilter(trigger="foom", os="iOS 16.7")
    assert stored_filter_summary(base, both, snapshot_ids(base, both)) is None


def test_compare_under_a_filter_reads_them_without_the_totals(api_client, app, builds):
    chosen = [{"trigger": "foom"}, {"trigger": "periodic"}, {"model": "iPhone12,1"}]
    from_totals = [compare(api_client, app, **filters) for filters in chosen]
    for build in builds:
        refresh_build_summary.call(build.pk)  # the task after a burst of uploads
    assert BuildFilterSamples.objects.count() == 12
    for filters, answer in zip(chosen, from_totals, strict=True):
        with CaptureQueriesContext(connection) as queries:
            made_ahead = compare(api_client, app, **filters)
        sql = " ".join(q["sql"] for q in queries.captured_queries)
        assert "categorytotal" not in sql, filters
        assert made_ahead == answer, filters
    foom = by_category(compare(api_client, app, trigger="foom"))
    cache, leak = foom["Cache"], foom["Leak"]
    assert (cache["base_bytes_median"], cache["target_bytes_median"]) == (300.0, 600.0)
    assert (cache["base_present"], cache["target_present"]) == (3, 3)
    assert (leak["status"], leak["base_present"], leak["target_present"]) == ("gone", 1, 0)
    periodic = by_category(compare(api_client, app, trigger="periodic"))["Cache"]
    assert (periodic["base_bytes_median"], periodic["base_present"]) == (100.0, 2)
    assert (periodic["target_bytes_median"], periodic["target_present"]) == (100.0, 3)


def test_an_upload_makes_it_out_of_date_and_the_next_refresh_current(
    api_client, app, builds, upload
):
    for build in builds:
        services.refresh_filter_summaries(build)
    # a fourth foom target snapshot with 1200 B of Cache: target 600 x3, 1200 -> median 600,
    # mean (3 * 600 + 1200) / 4 = 750
    put(upload, [row("Cache", 2, None, 12, 1200)], "2.0", "2", "B-6", FOOM)
    with CaptureQueriesContext(connection) as queries:
        cache = by_category(compare(api_client, app, trigger="foom"))["Cache"]
    assert (cache["target_snapshots"], cache["target_bytes_mean"]) == (4, 750.0)
    sql = " ".join(q["sql"] for q in queries.captured_queries)
    assert "categorytotal" in sql  # the target's made from its totals; the stored one is not read
    services.refresh_filter_summaries(Build.objects.get(version="2.0"))
    with CaptureQueriesContext(connection) as queries:
        again = by_category(compare(api_client, app, trigger="foom"))["Cache"]
    assert again == cache
    assert "categorytotal" not in " ".join(q["sql"] for q in queries.captured_queries)
    # a value no snapshot has any longer is dropped
    Snapshot.objects.filter(build__version="2.0", trigger="foom").update(trigger="periodic")
    services.refresh_filter_summaries(Build.objects.get(version="2.0"))
    target = Build.objects.get(version="2.0")
    assert not BuildFilterSamples.objects.filter(build=target, filter="trigger", value="foom")


def test_filter_values_are_user_text_hashed(api_client, app, upload):
    odd = "iPhone'); DROP TABLE x; -- ü " + "x" * 60
    put(upload, target_rows(5), "1.0", "1", "A-0", ("foom", odd, "iOS 16.7"))
    put(upload, target_rows(5), "2.0", "2", "B-0", ("foom", odd, "iOS 16.7"))
    for build in Build.objects.all():
        services.refresh_filter_summaries(build)
    stored = BuildFilterSamples.objects.filter(filter="model").first()
    assert stored is not None and stored.value == odd
    assert stored.chosen == chosen_key("model", odd) and re.fullmatch(
        r"[0-9a-f]{40}", stored.chosen
    )
    with CaptureQueriesContext(connection) as queries:
        cache = by_category(compare(api_client, app, model=odd))["Cache"]
    assert (cache["base_bytes_median"], cache["target_bytes_median"]) == (600.0, 600.0)
    assert "categorytotal" not in " ".join(q["sql"] for q in queries.captured_queries)
