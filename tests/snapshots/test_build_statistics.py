"""A build's statistics per snapshot: the median (and mean) over the snapshots its page's filters
keep, worked out by hand; the page, its CSV and the API agree."""

from __future__ import annotations

import pytest

from memdash.allocations.logic.per_snapshot import figures, responsible, sort_rows
from memdash.core.models import Build
from tests.compare.helpers import document, row, store
from tests.core.test_exports import csv_rows, page_rows

pytestmark = pytest.mark.django_db

# Three snapshots of build 1.0 (1): (category, stack, generation, persistent, persistent bytes,
# transient, transient bytes). Stack 2 ends in -[Cache store], 3 in -[Cell init].
SNAPSHOTS = [
    ("periodic", [row("Cache", 2, None, 2, 200, 1, 100), row("Cell", 3, None, 10, 640),
                  row("VM: Pool", 3, None, 1, 4096)]),
    ("periodic", [row("Cache", 2, None, 4, 400), row("Cell", 3, None, 2, 128)]),
    ("foom", [row("Cache", 2, None, 30, 3000), row("Cell", 3, None, 1, 64),
              row("VM: Pool", 3, None, 2, 8192)]),
]  # fmt: skip


@pytest.fixture
def build(upload) -> Build:
    for i, (trigger, rows) in enumerate(SNAPSHOTS):
        doc = document(rows, device=f"D-{i}", trigger=trigger, generations=[],
                       captured_at=f"2026-11-2{i}T10:00:00Z")  # fmt: skip
        store(upload, doc)
    return Build.objects.get(version="1.0")


def by_name(rows: list[dict]) -> dict[str, dict]:
    return {r["category"]: r for r in rows}


def test_figures_per_snapshot_by_hand():
    # Cache in two snapshots of three: (p, pb, t, tb) = (2, 200, 1, 100) and (4, 400, 0, 0);
    # the third counts 0. Persistent bytes 0, 200, 400: median 200, mean 200; total bytes
    # 0, 300, 400: median 300, mean 700 / 3
    medians, means = figures([(2, 200, 1, 100), (4, 400, 0, 0)], 3)
    assert (medians["persistent_bytes"], means["persistent_bytes"]) == (200, 200)
    assert medians["total_bytes"] == 300 and means["total_bytes"] == pytest.approx(700 / 3)
    assert (medians["total"], means["total"]) == (3, 7 / 3)  # counts 0, 3, 4
    assert figures([], 0) == ({k: 0.0 for k in medians}, {k: 0.0 for k in means})
    # the responsible caller: the one of most snapshots, then of most bytes, then by name
    assert responsible([("a", 1, 10), ("b", 2, 500), ("a", 1, 10)]) == ("a", 1)
    assert responsible([("a", 1, 10), ("b", 2, 500)]) == ("b", 2)
    assert responsible([("", None, 99)]) == ("", None)
    rows = [
        {"category": "b", "median": {"total_bytes": 5}, "mean": {"total_bytes": 9}},
        {"category": "A", "median": {"total_bytes": 5}, "mean": {"total_bytes": 7}},
        {"category": "c", "median": {"total_bytes": 8}, "mean": {"total_bytes": 1}},
    ]
    # by the median, then the mean: c 8; b 5 (mean 9); A 5 (mean 7)
    assert [r["category"] for r in sort_rows(rows, "total_bytes", True)] == ["c", "b", "A"]
    assert [r["category"] for r in sort_rows(rows, "category", False)] == ["A", "b", "c"]


def test_build_statistics_per_snapshot(api_client, app, build):
    url = f"/api/v1/apps/{app.pk}/builds/{build.pk}/statistics"
    body = api_client.get(url).json()
    assert body["snapshots"] == 3
    rows = by_name(body["rows"])
    cache = rows["Cache"]
    # persistent bytes 200, 400, 3000: median 400, mean 3600 / 3 = 1200; summed 3600, as before
    assert (cache["median"]["persistent_bytes"], cache["mean"]["persistent_bytes"]) == (400, 1200)
    assert (cache["persistent_bytes"], cache["snapshots"]) == (3600, 3)
    # total bytes 300, 400, 3000: median 400
    assert cache["median"]["total_bytes"] == 400
    assert cache["responsible_caller"] == "-[Cache store]"
    # VM: Pool in two snapshots of three: 4096, 0, 8192 -> median 4096, mean 4096
    pool = rows["VM: Pool"]
    assert (pool["median"]["persistent_bytes"], pool["snapshots"]) == (4096, 2)
    # largest median total bytes first: VM: Pool 4096, Cache 400, Cell 640/128/64 -> 128
    assert [r["category"] for r in body["rows"]] == ["VM: Pool", "Cache", "Cell"]
    # the summary per snapshot: whole heap 300+640+4096 = 5036, 400+128 = 528,
    # 3000+64+8192 = 11256 -> median 5036, mean 16820 / 3
    whole = body["summary"][0]
    assert whole["category"] == "All Heap & Anonymous VM"
    assert whole["median"]["total_bytes"] == 5036
    assert whole["mean"]["total_bytes"] == pytest.approx(16820 / 3)
    assert whole["total_bytes"] == 16820  # summed, as the answer's fields always were

    # the filters choose the snapshots: the two periodic ones
    periodic = api_client.get(url, {"trigger": "periodic"}).json()
    assert (periodic["snapshots"], periodic["filters"]["trigger"]) == (2, "periodic")
    cache = by_name(periodic["rows"])["Cache"]
    # 200, 400: median 300 (between them), mean 300; summed 600
    assert (cache["median"]["persistent_bytes"], cache["persistent_bytes"]) == (300, 600)
    pool = by_name(periodic["rows"])["VM: Pool"]
    assert (pool["median"]["persistent_bytes"], pool["snapshots"]) == (2048, 1)  # 4096, 0
    assert periodic["summary"][0]["median"]["total_bytes"] == (5036 + 528) / 2

    # a search sums only what matches, and says so: Cache alone, 300, 400, 3000 -> 400
    searched = api_client.get(url, {"q": "ca"}).json()
    assert [r["category"] for r in searched["rows"]] == ["Cache"]
    assert searched["summary"][0]["category"] == "All Heap & Anonymous VM (matching “ca”)"
    assert searched["summary"][0]["median"]["total_bytes"] == 400
    assert searched["summary"][2]["total_bytes"] == 0  # no anonymous VM matches


def test_build_page_filters_apply_to_everything(member_client, app, build):
    url = f"/apps/{app.pk}/builds/{build.pk}/"
    response = member_client.get(url, {"trigger": "periodic"})
    html = response.content.decode()
    # the snapshot list and the statistics: the same two snapshots
    assert len(response.context["snapshots"].object_list) == 2
    assert response.context["chosen_count"] == 2 and response.context["snapshot_count"] == 3
    assert "the median over 2 snapshots that match the filters (of 3)" in html
    shown = page_rows(member_client, url + "?trigger=periodic", "statistics")
    # summary rows, then by the median total bytes: VM: Pool (4096, 0 -> 2048), Cell (640, 128
    # -> 384), Cache (300, 400 -> 350); in each figure's cell the median then the mean, then
    # the snapshots with the category and the responsible caller
    assert [r[0] for r in shown] == [
        "All Heap & Anonymous VM", "All Heap Allocations", "All Anonymous VM",
        "VM: Pool", "Cell", "Cache",
    ]  # fmt: skip
    cache = shown[-1]
    assert cache[1] == "300 Bytes 300 Bytes" and cache[6:] == ["2/2", "-[Cache store]"]
    # the CSV: the same rows in the same order, with the figures as numbers
    exported = csv_rows(member_client, url, trigger="periodic")
    assert [r[0] for r in exported] == [r[0] for r in shown]
    assert exported[-1][:4] == ["Cache", "2", "300.0", "300.0"]
    assert exported[-1][-1] == "'-[Cache store]"  # a leading "-" goes out as text
