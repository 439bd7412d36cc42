"""The build page's filters (trigger, device model, OS) reach its call tree, flame graph and Top
Functions: a filtered build tree sums only the snapshots the filters keep.

Three snapshots of build 1.0 (1), stacks of tests/compare/helpers (2 ends in -[Cache store],
3 in -[Cell init], both under main > -[Feed load]); bytes are persistent + transient:

    #0 periodic, iPhone14,5, iOS 17.4: Cache@2 200 + 100, Cell@3 640, VM: Pool@3 4096
    #1 periodic, iPhone14,5, iOS 17.4: Cache@2 400,       Cell@3 128
    #2 foom,     iPhone12,1, iOS 16.7: Cache@2 3000,      Cell@3 64,  VM: Pool@3 8192
"""

from __future__ import annotations

import pytest
from django.core.cache import cache

from memdash.allocations.models import category_hash
from memdash.core.models import Build
from memdash.core.writes import apps as core_services
from tests.compare.helpers import document, row, store

pytestmark = pytest.mark.django_db

SNAPSHOTS = [
    ("periodic", "iPhone14,5", "iOS 17.4",
     [row("Cache", 2, None, 2, 200, 1, 100), row("Cell", 3, None, 10, 640),
      row("VM: Pool", 3, None, 1, 4096)]),
    ("periodic", "iPhone14,5", "iOS 17.4",
     [row("Cache", 2, None, 4, 400), row("Cell", 3, None, 2, 128)]),
    ("foom", "iPhone12,1", "iOS 16.7",
     [row("Cache", 2, None, 30, 3000), row("Cell", 3, None, 1, 64),
      row("VM: Pool", 3, None, 2, 8192)]),
]  # fmt: skip

# Per stack, over the snapshots chosen (bytes, count):
#   periodic (#0, #1): Cache store 300 + 400 = 700 (3 + 4 = 7); Cell init 640 + 4096 + 128
#     = 4864 (10 + 1 + 2 = 13); main 5564 (20)
#   foom / iPhone12,1 / iOS 16.7 (#2): Cache store 3000 (30); Cell init 64 + 8192 = 8256 (3);
#     main 11256 (33)
#   all three: main 5564 + 11256 = 16820 (53)
PERIODIC = {"main": (5564, 20), "-[Cache store]": (700, 7), "-[Cell init]": (4864, 13)}
FOOM = {"main": (11256, 33), "-[Cache store]": (3000, 30), "-[Cell init]": (8256, 3)}


@pytest.fixture(autouse=True)
def _empty_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def build(upload) -> Build:
    for i, (trigger, model, os, rows) in enumerate(SNAPSHOTS):
        doc = document(rows, device=f"D-{i}", model=model, os=os, trigger=trigger,
                       generations=[], captured_at=f"2026-11-2{i}T10:00:00Z")  # fmt: skip
        store(upload, doc)
    return Build.objects.get(version="1.0")


def tree_figures(api_client, app, build, **params) -> dict[str, tuple[int, int]]:
    """(bytes, count) of main, -[Cache store] and -[Cell init] in the build's tree."""
    url = f"/api/v1/apps/{app.pk}/builds/{build.pk}/calltree"
    found: dict[str, tuple[int, int]] = {}
    params = {"aggregate": "sum", **params}
    data = api_client.get(url, {**params, "expand": "heaviest"}).json()
    (main,) = data["children"]
    found["main"] = (main["bytes"], main["count"])
    (feed,) = api_client.get(url, {**params, "node": main["id"]}).json()["children"]
    for child in api_client.get(url, {**params, "node": feed["id"]}).json()["children"]:
        found[child["symbol"]] = (child["bytes"], child["count"])
    return found


def test_filtered_build_tree_sums_only_the_chosen_snapshots(api_client, app, build):
    assert tree_figures(api_client, app, build, trigger="periodic") == PERIODIC
    assert tree_figures(api_client, app, build, trigger="foom") == FOOM
    assert tree_figures(api_client, app, build, model="iPhone12,1") == FOOM
    assert tree_figures(api_client, app, build, os="iOS 16.7") == FOOM
    assert tree_figures(api_client, app, build)["main"] == (16820, 53)
    # the filters together: periodic snapshots of iOS 16.7, none
    empty = api_client.get(
        f"/api/v1/apps/{app.pk}/builds/{build.pk}/calltree",
        {"trigger": "periodic", "os": "iOS 16.7", "aggregate": "sum"},
    ).json()
    assert (empty["children"], empty["total_bytes"]) == ([], 0)
    # a category under a filter: Cache of the periodic ones, 700 bytes
    cache_tree = api_client.get(
        f"/api/v1/apps/{app.pk}/builds/{build.pk}/calltree",
        {"trigger": "periodic", "category": "Cache", "aggregate": "sum"},
    ).json()
    assert cache_tree["total_bytes"] == 700


def test_flame_graph_and_top_functions_follow_the_filters(api_client, member_client, app, build):
    base = f"/api/v1/apps/{app.pk}/builds/{build.pk}/calltree"
    flame = api_client.get(f"{base}/flame", {"trigger": "periodic", "aggregate": "sum"}).json()
    # All allocations, main, -[Feed load]: 5564 each
    assert flame["values"][:3] == [5564, 5564, 5564]
    functions = api_client.get(
        f"{base}/functions", {"model": "iPhone12,1", "aggregate": "sum"}
    ).json()["functions"]
    self_bytes = {f["symbol"]: f["self_bytes"] for f in functions}
    assert (self_bytes["-[Cell init]"], self_bytes["-[Cache store]"]) == (8256, 3000)
    csv = member_client.get(
        f"/apps/{app.pk}/builds/{build.pk}/calltree/functions.csv",
        {"trigger": "periodic", "aggregate": "sum"},
    )
    text = b"".join(csv.streaming_content).decode()
    assert "-[Cell init]" in text and ",4864,13," in text  # self bytes and count of Cell init


def test_build_page_links_carry_the_filters(member_client, app, build):
    page = member_client.get(f"/apps/{app.pk}/builds/{build.pk}/", {"trigger": "periodic"})
    html = page.content.decode()
    tree_url = f"/apps/{app.pk}/builds/{build.pk}/calltree/"
    assert f'href="{tree_url}?trigger=periodic" id="build-calltree-link"' in html
    cache = category_hash("Cache")  # links name a category by its hash
    assert f'href="{tree_url}?category_hash={cache}&amp;lifespan=all&amp;trigger=periodic"' in html
    tree_page = member_client.get(tree_url, {"trigger": "periodic", "category": "Cache"})
    assert tree_page.status_code == 200
    tree_html = tree_page.content.decode()
    assert 'data-fixed="trigger=periodic"' in tree_html
    assert "over 2 snapshots that match the build page's filters" in tree_html


def test_build_page_compares_with_the_previous_build_with_snapshots(upload, member_client, app):
    # builds 0.9 (a snapshot), 0.10 (none), 1.0 (a snapshot); in release order 0.9 < 0.10 < 1.0
    store(upload, document([row("Cache", 2, None, 1, 100)], version="0.9", number="9",
                           generations=[]))  # fmt: skip
    store(upload, document([row("Cache", 2, None, 2, 200)], version="1.0", number="10",
                           generations=[]))  # fmt: skip
    core_services.get_or_create_build(app, "0.10", "9a")
    older, newer = Build.objects.get(version="0.9"), Build.objects.get(version="1.0")
    html = member_client.get(newer.get_absolute_url()).content.decode()
    compare = f"/apps/{app.pk}/compare/?base={older.pk}&amp;target={newer.pk}"
    assert f'<a id="compare-previous" href="{compare}">Compare with the previous build' in html
    # the first build has nothing before it to compare with
    assert (
        'id="compare-previous"' not in member_client.get(older.get_absolute_url()).content.decode()
    )
