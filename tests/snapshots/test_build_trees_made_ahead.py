"""A build's call tree, flame graph and Top Functions made ahead (`writes.build_trees`) for the
whole build and for each filter value, and read by the build's pages without its snapshots' rows.

The snapshots of tests/snapshots/test_build_tree_filters (stacks of tests/compare/helpers: 2 ends
in -[Cache store], 3 in -[Cell init], both under main > -[Feed load]); per snapshot and stack,
(bytes, count), persistent + transient:

    #0 periodic, iPhone14,5, iOS 17.4: Cache 200 + 100 = 300 (3); Cell 640 + 4096 = 4736 (11);
       main 5036 (14); persistent only: Cache 200 (2), main 4936 (13)
    #1 periodic, iPhone14,5, iOS 17.4: Cache 400 (4); Cell 128 (2); main 528 (6)
    #2 foom,     iPhone12,1, iOS 16.7: Cache 3000 (30); Cell 64 + 8192 = 8256 (3); main 11256 (33)

The default tree is each node's median per snapshot, rounded up:
    whole build: main median(5036, 528, 11256) = 5036, count median(14, 6, 33) = 14;
      Cache median(300, 400, 3000) = 400 (4); Cell median(4736, 128, 8256) = 4736 (3)
    periodic (#0, #1): main (5036 + 528) / 2 = 2782, (14 + 6) / 2 = 10; Cache 350, 3.5 -> 4;
      Cell (4736 + 128) / 2 = 2432, 6.5 -> 7
    foom = iPhone12,1 = iOS 16.7 (#2 alone): main 11256 (33), Cache 3000 (30), Cell 8256 (3)
    persistent, whole build: main median(4936, 528, 11256) = 4936, median(13, 6, 33) = 13
"""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memdash.allocations.logic.calltree.flame import TOP_ORDERS
from memdash.allocations.logic.calltree.products import make_product
from memdash.allocations.models import BuildTree, Snapshot
from memdash.allocations.reads.calltree.made import MADE_PRODUCTS, chosen_key
from memdash.allocations.reads.calltree.pages import call_tree_page
from memdash.allocations.reads.calltree.query import CallTreeQuery
from memdash.allocations.reads.calltree.trees import _compute_tree, made_build_tree
from memdash.allocations.tasks import refresh_build_tables
from memdash.allocations.writes.build_trees import refresh_build_trees
from memdash.core.models import Build
from tests.compare.helpers import document, row, store
from tests.snapshots.test_build_tree_filters import FOOM, SNAPSHOTS

pytestmark = pytest.mark.django_db

WHOLE = {"main": (5036, 14), "-[Cache store]": (400, 4), "-[Cell init]": (4736, 3)}
PERIODIC = {"main": (2782, 10), "-[Cache store]": (350, 4), "-[Cell init]": (2432, 7)}
# the keys: the whole build, 2 triggers, 2 models, 2 OSes; 3 lifespans; the tree and 3 products
MADE_ROWS = 7 * 3 * 4


@pytest.fixture(autouse=True)
def _empty_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def large(settings):
    """Every build is one whose trees are made ahead (and built on demand by a task)."""
    settings.MEMDASH_TREE_INLINE_ROWS = 0


@pytest.fixture
def build(upload) -> Build:
    for i, (trigger, model, os, rows) in enumerate(SNAPSHOTS):
        doc = document(rows, device=f"D-{i}", model=model, os=os, trigger=trigger,
                       generations=[], captured_at=f"2026-11-2{i}T10:00:00Z")  # fmt: skip
        store(upload, doc)
    return Build.objects.get(version="1.0")


def tree_url(app, build) -> str:
    return f"/api/v1/apps/{app.pk}/builds/{build.pk}/calltree"


def figures(api_client, app, build, **params) -> tuple[dict[str, tuple[int, int]], dict]:
    """(bytes, count) of main, -[Cache store] and -[Cell init] in the build's tree, and the
    first answer's `made_ahead`."""
    url = tree_url(app, build)
    first = api_client.get(url, params).json()
    (main,) = first["children"]
    found = {"main": (main["bytes"], main["count"])}
    (feed,) = api_client.get(url, {**params, "node": main["id"]}).json()["children"]
    for child in api_client.get(url, {**params, "node": feed["id"]}).json()["children"]:
        found[child["symbol"]] = (child["bytes"], child["count"])
    return found, first.get("made_ahead")


def test_made_ahead_trees_read_by_the_api_by_hand(large, api_client, app, build):
    assert refresh_build_trees(build) == MADE_ROWS
    for params, expected in [({}, WHOLE), ({"trigger": "periodic"}, PERIODIC),
                             ({"trigger": "foom"}, FOOM), ({"model": "iPhone12,1"}, FOOM),
                             ({"os": "iOS 16.7"}, FOOM)]:  # fmt: skip
        found, made = figures(api_client, app, build, **params)
        assert found == expected, params
        assert made["current"] is True
    found, made = figures(api_client, app, build)
    assert (made["snapshots"], made["kept"]) == (3, 3)
    persistent, _ = figures(api_client, app, build, lifespan="persistent")
    assert persistent["main"] == (4936, 13)
    # two filters at once are not made ahead: built on demand (periodic of iOS 17.4: #0, #1)
    found, made = figures(api_client, app, build, trigger="periodic", os="iOS 17.4")
    assert (found, made) == (PERIODIC, None)


def _on_demand(build: Build, query: CallTreeQuery, **chosen: str):
    snapshots = Snapshot.objects.filter(build=build, **chosen).order_by("pk")
    return _compute_tree(build.app_id, list(snapshots), query)


@pytest.mark.parametrize("lifespan", ["all", "persistent", "transient"])
def test_made_ahead_equals_on_demand_whole_and_per_filter(large, build, lifespan):
    refresh_build_trees(build)
    query = CallTreeQuery(lifespan=lifespan)
    cases = [({}, {}), ({"trigger": "periodic"}, {"trigger": "periodic"}),
             ({"trigger": "foom"}, {"trigger": "foom"}),
             ({"model": "iPhone14,5"}, {"device_model": "iPhone14,5"}),
             ({"os": "iOS 16.7"}, {"os": "iOS 16.7"})]  # fmt: skip
    for filters, chosen in cases:
        made = made_build_tree(build, query, filters.get("trigger", ""),
                               filters.get("model", ""), filters.get("os", ""))  # fmt: skip
        assert made is not None, filters
        built = _on_demand(build, query, **chosen)
        assert (made.total_bytes, made.total_count) == (built.total_bytes, built.total_count)
        assert call_tree_page(made, None, 0, 100, True) == call_tree_page(built, None, 0, 100, True)
        for product in MADE_PRODUCTS:
            assert make_product(made, product) == make_product(built, product), (filters, product)


def test_flame_graph_and_top_functions_read_made_ahead(large, api_client, app, build):
    refresh_build_trees(build)
    flame = api_client.get(f"{tree_url(app, build)}/flame", {"trigger": "periodic"}).json()
    # All allocations, main, -[Feed load]: the median 2782 of main each (medians: drawn as
    # "remainder" branch values, their own figures in `sizes`)
    assert flame["sizes"][:3] == [2782, 2782, 2782]
    for order in TOP_ORDERS:
        functions = api_client.get(
            f"{tree_url(app, build)}/functions", {"model": "iPhone12,1", "order": order}
        ).json()["functions"]
        self_bytes = {f["symbol"]: f["self_bytes"] for f in functions}
        assert (self_bytes["-[Cell init]"], self_bytes["-[Cache store]"]) == (8256, 3000)
    # a flame graph of another limit: made of the tree made ahead
    small = api_client.get(f"{tree_url(app, build)}/flame", {"limit": 50}).json()
    assert small["sizes"][:3] == [5036, 5036, 5036]


def test_pages_read_it_without_the_snapshots_rows(
    large, api_client, app, build, django_assert_max_num_queries
):
    refresh_build_trees(build)
    api_client.get(tree_url(app, build))  # the session, the app: read once
    for suffix, params in [("", {}), ("", {"os": "iOS 17.4"}), ("/flame", {}),
                           ("/functions", {"trigger": "foom"})]:  # fmt: skip
        with CaptureQueriesContext(connection) as queries:
            answer = api_client.get(tree_url(app, build) + suffix, params)
        assert answer.status_code == 200
        sql = [q["sql"] for q in queries.captured_queries]
        assert not [s for s in sql if "allocationrow" in s or "stacknode" in s], sql
        snapshot_reads = [s for s in sql if re.search(r'FROM "snapshots_snapshot"', s)]
        assert all("COUNT(" in s for s in snapshot_reads), snapshot_reads  # one aggregate
        assert len(sql) <= 12, sql


def test_an_upload_makes_it_stale_and_the_next_refresh_current(
    settings, large, api_client, member_client, app, build, upload
):
    refresh_build_trees(build)
    # a fourth snapshot, periodic: Cache 1000 (10), main 1000 (10)
    doc = document([row("Cache", 2, None, 10, 1000)], device="D-3", trigger="periodic",
                   generations=[], captured_at="2026-11-24T10:00:00Z")  # fmt: skip
    store(upload, doc)
    # past the request's budget: the tree made of 3 snapshots, said to be out of date
    found, made = figures(api_client, app, build)
    assert found == WHOLE
    assert (made["current"], made["snapshots"]) == (False, 3)
    page = member_client.get(f"/apps/{app.pk}/builds/{build.pk}/calltree/").content.decode()
    assert "As of 3 snapshots" in page
    # within the budget: built on demand over the four (medians of 4: main (1000 + 5036) / 2)
    settings.MEMDASH_TREE_INLINE_ROWS = 200_000
    found, made = figures(api_client, app, build)
    assert (found["main"], made) == ((3018, 12), None)
    # the task that runs after a burst of uploads makes it again: current, over the four
    settings.MEMDASH_TREE_INLINE_ROWS = 0
    refresh_build_tables.call(build.pk)
    found, made = figures(api_client, app, build)
    assert found["main"] == (3018, 12)
    assert (made["current"], made["snapshots"], made["kept"]) == (True, 4, 4)
    page = member_client.get(f"/apps/{app.pk}/builds/{build.pk}/calltree/").content.decode()
    assert "Made ahead" in page and "As of" not in page
    # just made: "now" or seconds ago (naturaltime), not "0 minutes ago"
    assert re.search(r"Made ahead (now|\d+\xa0seconds? ago)", page), page


def test_pruned_rows_leave_the_tree_of_the_kept_snapshots(large, api_client, app, build):
    Snapshot.objects.filter(build=build, trigger="foom").update(rows_pruned_at="2026-11-27T00:00Z")
    refresh_build_trees(build)
    found, made = figures(api_client, app, build)
    assert found == PERIODIC  # the medians of #0 and #1, whose rows are kept
    assert (made["snapshots"], made["kept"], made["current"]) == (3, 2, True)


def test_filter_values_are_user_text_hashed(large, api_client, app, upload):
    odd = "iPhone'); DROP TABLE x; -- ü " + "x" * 60
    doc = document([row("Cache", 2, None, 4, 400)], model=odd, generations=[],
                   captured_at="2026-11-20T10:00:00Z")  # fmt: skip
    store(upload, doc)
    build = Build.objects.get(version="1.0")
    refresh_build_trees(build)
    stored = BuildTree.objects.get(build=build, filter="model", kind="tree", lifespan="all")
    assert stored.value == odd and stored.chosen == chosen_key("model", odd)
    assert re.fullmatch(r"[0-9a-f]{40}", stored.chosen)
    found, made = figures(api_client, app, build, model=odd)
    assert found["main"] == (400, 4) and made["current"] is True


def test_a_small_build_has_none_made(api_client, app, build):
    assert refresh_build_trees(build) == 0
    assert not BuildTree.objects.exists()
    found, made = figures(api_client, app, build)
    assert (found, made) == (WHOLE, None)
