"""The investigation path through the compare pages: every diff row opens its category's diff
call tree, the generations page links to its diffs, each table exports as CSV the rows it
shows, build compare sorts by any column, and the snapshot picker groups snapshots by build."""

from __future__ import annotations

import json
import re

import pytest

from memdash.allocations.models import category_hash
from tests.compare.helpers import SNAPSHOT_A_ROWS, SNAPSHOT_B_ROWS, document, store
from tests.compare.test_build_compare import BUILD_1, BUILD_2, store_two_builds
from tests.core.test_exports import csv_rows, page_rows

pytestmark = pytest.mark.django_db


@pytest.fixture
def snapshots(upload):
    a = store(upload, document(SNAPSHOT_A_ROWS))
    b = store(upload, document(SNAPSHOT_B_ROWS, version="2.0", number="2", device="D-2",
                               generations=[]))  # fmt: skip
    return a, b


def tree_config(html: str) -> dict:
    found = re.search(r'<script id="difftree-config" type="application/json">(.*?)</script>', html)
    assert found, "no diff call tree on the page"
    return json.loads(found.group(1))


def test_snapshot_diff_rows_open_their_category_tree(member_client, app, snapshots):
    a, b = snapshots
    url = f"/apps/{app.pk}/snapshot-diff/"
    html = member_client.get(url, {"base": a, "target": b}).content.decode()
    cache = category_hash("Cache")  # links name a category by its hash
    link = f'href="?base={a}&amp;target={b}&amp;category_hash={cache}#difftree"'
    assert link in html  # the category's name is the link
    assert tree_config(html)["filters"]["category_hash"] == ""
    response = member_client.get(url, {"base": a, "target": b, "category": "Cache"})
    html = response.content.decode()
    config = tree_config(html)
    assert (config["filters"]["category_hash"], config["lifespan"]) == (str(cache), "persistent")
    assert '<tr class="status-grown current">' in html  # the row whose tree is shown
    assert "all categories</a>" in html  # and the way back to the whole tree
    # Invert Call Tree and Hide System Libraries go to the tree
    options = member_client.get(url, {"base": a, "target": b, "inverted": "1", "hide_system": "1"})
    assert tree_config(options.content.decode())["filters"]["inverted"] == "1"
    assert tree_config(options.content.decode())["filters"]["hide_system"] == "1"
    assert member_client.get(url, {"base": a, "target": b, "inverted": "maybe"}).status_code == 404


def test_generations_page_links_each_generation_to_its_diff(member_client, app, snapshots):
    a, _ = snapshots
    html = member_client.get(f"/snapshots/{a}/generations/").content.decode()
    diff = f"/apps/{app.pk}/snapshots/{a}/generation-diff/"
    # Launch, Open and Idle (indexes 0-2), each against the generation before it; the
    # baseline has none before it
    for index in (0, 1, 2):
        assert f'href="{diff}?target={index}">Diff with the previous generation</a>' in html
    assert html.count("Diff with the previous generation") == 3
    page = member_client.get(f"{diff}?target=1")
    assert page.context["base"].ref == f"generation:{a}:0"  # Open against Launch
    rows = page.content.decode()
    assert f'href="?target=1&amp;category_hash={category_hash("Cache")}#difftree"' in rows


def test_diff_tables_export_the_rows_they_show(member_client, app, snapshots):
    a, b = snapshots
    url = f"/apps/{app.pk}/snapshot-diff/?base={a}&target={b}&q=c"
    shown = page_rows(member_client, url, "diff-table")
    exported = csv_rows(member_client, url + "&format=csv")
    # the search keeps Cache (+1000 B), Cell (896 B both) and NoStack (-16 B): the same rows
    # in the same order, the biggest growth first
    assert [r[0] for r in exported] == [r[0] for r in shown] == ["Cache", "Cell", "NoStack"]
    # A: Cache 1000 B of 10, B: 2000 B of 20 (helpers.py), bytes as numbers
    assert exported[0] == ["Cache", "grown", "1000", "2000", "1000", "10", "20", "10"]
    assert 'class="csv-link"' in member_client.get(url).content.decode()

    diff = f"/apps/{app.pk}/snapshots/{a}/generation-diff/?target=1"
    shown = page_rows(member_client, diff, "diff-table")
    exported = csv_rows(member_client, diff + "&format=csv")
    assert [r[0] for r in exported] == [r[0] for r in shown]
    # Launch -> Open (helpers.py): Cell 640 -> 256, Cache 300 -> 500, Old 32 -> 0, NoStack new
    assert {r[0]: r[4] for r in exported} == {
        "Cell": "-384", "Cache": "200", "Old": "-32", "NoStack": "16",
    }  # fmt: skip


def test_trends_export_and_link_each_series(member_client, app, snapshots):
    url = f"/apps/{app.pk}/trends/?category=Cache"
    shown = page_rows(member_client, url, "trends-table")
    exported = csv_rows(member_client, url + "&format=csv")
    # per build the whole heap, then Cache: 1.0 (1) 1944 and 1000 bytes, 2.0 (2) 3896 and 2000
    assert [(r[0], r[2], r[3]) for r in exported] == [
        ("1.0 (1)", "All Heap & Anonymous VM", "1944.0"), ("1.0 (1)", "Cache", "1000.0"),
        ("2.0 (2)", "All Heap & Anonymous VM", "3896.0"), ("2.0 (2)", "Cache", "2000.0"),
    ]  # fmt: skip
    assert [r[2] for r in shown] == [r[2] for r in exported]
    html = member_client.get(url).content.decode()
    # a category of a build opens build compare of it with the build before, on that category
    cache = category_hash("Cache")
    assert re.search(
        rf'/compare/\?base=\d+&amp;target=\d+&amp;category_hash={cache}#difftree"', html
    )


@pytest.fixture
def builds(upload):
    store_two_builds(upload, BUILD_1, BUILD_2)


def test_build_compare_sorts_every_column_and_exports_it(member_client, app, builds):
    url = f"/apps/{app.pk}/compare/"
    response = member_client.get(url)
    html = response.content.decode()
    header = html[html.index('<table class="diff compare"') : html.index("</thead>")]
    # nine columns, each a sort link
    assert len(re.findall(r"<th[ >]", header)) == 9 and header.count("?sort=") == 9
    # default: significance, then the size of the change: Leak (+500, p = 0.1) before Steady
    assert [r.category for r in response.context["rows"]] == ["Leak", "Steady"]
    by_name = member_client.get(url, {"sort": "category", "dir": "desc"})
    assert [r.category for r in by_name.context["rows"]] == ["Steady", "Leak"]
    exported = csv_rows(member_client, url, sort="category", dir="desc")
    assert [r[0] for r in exported] == ["Steady", "Leak"]
    # Leak: base 100, 0, 200 -> median 100, mean 100; target 500, 600, 700 -> 600; p = 0.1
    leak = exported[1]
    assert leak[:6] == ["Leak", "changed, not significant", "100.0", "100.0", "600.0", "600.0"]
    assert float(leak[10]) == pytest.approx(0.1) and leak[11] == "no"
    shown = page_rows(member_client, url + "?sort=category&dir=desc", "compare-table")
    assert [r[0] for r in shown] == [r[0] for r in exported]
    # an unknown sort falls back to the default order on the page
    assert member_client.get(url, {"sort": "size"}).status_code == 200


def test_build_compare_alpha_and_category_tree(member_client, app, builds):
    url = f"/apps/{app.pk}/compare/"
    lenient = member_client.get(url, {"alpha": "0.2", "max_growth": "5%"})
    html = lenient.content.decode()
    # at alpha 0.2, p = 0.1 is significant: Leak has grown and fails the gate
    assert lenient.context["rows"][0].status == "grown"
    assert "Fails" in html and "significantly (p &lt; 0.2)" in html
    assert 'name="alpha" value="0.2"' in html
    bad = member_client.get(url, {"alpha": "2"})
    assert "between 0 and 1" in bad.content.decode() and bad.context["alpha"] == 0.05
    # a category's name opens its row and its diff call tree
    leak = category_hash("Leak")
    assert f'href="?category_hash={leak}#difftree"' in member_client.get(url).content.decode()
    one = member_client.get(url, {"category": "Leak", "lifespan": "all", "hide_system": "1"})
    assert [r.category for r in one.context["rows"]] == ["Leak"]
    config = tree_config(one.content.decode())
    assert config["filters"]["category_hash"] == str(leak)
    assert config["filters"]["hide_system"] == "1"
    assert config["lifespan"] == "all"


def test_snapshot_picker_groups_by_build(member_client, app, snapshots):
    a, b = snapshots
    html = member_client.get(f"/apps/{app.pk}/snapshot-diff/").content.decode()
    # the newest build first, each snapshot under its build
    groups = re.findall(r'<optgroup label="([^"]+)">', html)
    assert groups == ["2.0 (2)", "1.0 (1)"] * 2  # base and target
    assert html.count("<select name=") == 2 and html.count("data-picker") == 2
    assert "compare/picker.js" in html
    # no inline script: only the external files and JSON data
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", html, re.S)
    assert all("src=" in attrs or not body.strip() for attrs, body in scripts)
