"""The build's call tree (over its snapshots) and the pages: call tree, build call tree,
generations; access and escaping."""

from __future__ import annotations

import pytest

from memdash.allocations.models import category_hash
from memdash.core.models import Build
from tests.calltree.conftest import tree_doc

pytestmark = pytest.mark.django_db


def second_doc() -> dict:
    """Same build, another run: only r1 and r5, and its threads listed the other way round, so
    r1 (thread index 0) ran on "worker" there."""
    doc = tree_doc()
    doc["captured_at"] = "2026-11-21T08:00:00+00:00"
    doc["threads"] = ["worker", "main"]
    doc["allocations"] = [doc["allocations"][0], doc["allocations"][4]]
    return doc


@pytest.fixture
def build_ids(upload, tree_snapshot_id):
    response = upload(second_doc())
    assert response.json()["status"] == "done", response.json()
    build = Build.objects.get(version="8.1.0", number="300")
    return build.app_id, build.pk


def build_tree(api_client, build_ids, **params):
    app_id, build_id = build_ids
    response = api_client.get(f"/api/v1/apps/{app_id}/builds/{build_id}/calltree", params)
    assert response.status_code == 200, response.json()
    return response.json()


def summary(data):
    return [(c["symbol"], c["bytes"], c["count"]) for c in data["children"]]


def test_build_tree_is_each_nodes_median_per_snapshot_by_default(api_client, build_ids):
    data = build_tree(api_client, build_ids)
    # two snapshots: the median is their mean, a half rounded up. Totals: 54256 B / 160 and
    # 48640 B / 43 -> 51448 B / 101.5 -> 102
    assert (data["total_bytes"], data["total_count"]) == (51448, 102)
    # main 37872/159 and 32256/42 -> 35064/100.5 -> 101; no stack (r5) 16384/1 in each
    assert summary(data) == [("main", 35064, 101), ("(no stack)", 16384, 1)]
    assert data["children"][0]["percent"] == 68.15  # 35064 / 51448
    assert build_tree(api_client, build_ids, aggregate="median") == data
    inverted = build_tree(api_client, build_ids, inverted="1")
    assert summary(inverted) == [
        ("-[MessageCell init]", 32256, 42),  # 32256 / 42 in each snapshot
        ("(no stack)", 16384, 1),
        ("malloc", 2760, 58),  # 5520 / 115 in the first only: (5520 + 0) / 2, 57.5 -> 58
        ("Chat + 0x1a2b", 48, 1),  # 96 / 2 in the first only
    ]


def test_build_tree_aggregate_is_strict(api_client, build_ids):
    app_id, build_id = build_ids
    for path in ("calltree", "calltree/flame", "calltree/functions"):
        url = f"/api/v1/apps/{app_id}/builds/{build_id}/{path}"
        for bad in ("mean", "SUM", "median "):
            response = api_client.get(url, {"aggregate": bad})
            assert response.status_code == 400, (path, bad)
            assert "aggregate" in response.json()["fields"]


def test_build_flame_and_functions_per_snapshot(api_client, build_ids):
    app_id, build_id = build_ids
    base = f"/api/v1/apps/{app_id}/builds/{build_id}/calltree"
    flame = api_client.get(f"{base}/flame").json()
    # the top node and main as in the tree (medians); drawn as remainders
    assert flame["sizes"][:2] == [51448, 35064] and flame["branchvalues"] == "remainder"
    summed = api_client.get(f"{base}/flame", {"aggregate": "sum"}).json()
    assert summed["values"][:2] == [102896, 37872 + 32256] and "sizes" not in summed
    rows = api_client.get(f"{base}/functions").json()["functions"]
    # self bytes per snapshot: MessageCell init 32256 in each; malloc 5520 and 0 -> 2760
    # (no stack): 16384 in each
    assert [(r["symbol"], r["self_bytes"]) for r in rows][:3] == [
        ("-[MessageCell init]", 32256),
        ("(no stack)", 16384),
        ("malloc", 2760),
    ]
    rows = api_client.get(f"{base}/functions", {"aggregate": "sum"}).json()["functions"]
    assert [(r["symbol"], r["self_bytes"]) for r in rows][:3] == [
        ("-[MessageCell init]", 64512),
        ("(no stack)", 32768),
        ("malloc", 5520),
    ]


def test_build_functions_csv_says_what_its_figures_are(member_client, build_ids):
    app_id, build_id = build_ids
    url = f"/apps/{app_id}/builds/{build_id}/calltree/functions.csv"
    median = member_client.get(url)
    text = b"".join(median.streaming_content).decode()
    assert "Self bytes (median per snapshot)" in text.splitlines()[0]
    assert "per-snapshot" in median["Content-Disposition"]
    assert "-[MessageCell init],,32256,42," in text
    summed = member_client.get(url, {"aggregate": "sum"})
    text = b"".join(summed.streaming_content).decode()
    assert "Self bytes (sum over the snapshots)" in text.splitlines()[0]
    assert "-[MessageCell init],,64512,84," in text


def test_build_tree_adds_up_its_snapshots(api_client, build_ids):
    data = build_tree(api_client, build_ids, aggregate="sum")
    # first snapshot 54256 B / 160; second r1 32256/42 + r5 16384/1 = 48640/43
    assert (data["total_bytes"], data["total_count"]) == (102896, 203)
    assert summary(data) == [
        ("main", 37872 + 32256, 159 + 42),
        ("(no stack)", 32768, 2),
    ]
    inverted = build_tree(api_client, build_ids, inverted="1", aggregate="sum")
    assert summary(inverted) == [
        ("-[MessageCell init]", 64512, 84),  # 32256 in each snapshot
        ("(no stack)", 32768, 2),
        ("malloc", 5520, 115),
        ("Chat + 0x1a2b", 96, 2),
    ]


def test_build_tree_separates_threads_by_name(api_client, build_ids):
    data = build_tree(api_client, build_ids, thread="1", aggregate="sum")
    assert summary(data) == [
        ("main", 37056, 142),  # first snapshot's r1+r2 only
        ("worker", 816 + 32256, 17 + 42),  # first's r3+r4 and the second's r1 (index 0 there)
        ("(unknown thread)", 32768, 2),
    ]


def test_build_tree_category_and_lifespan(api_client, build_ids):
    data = build_tree(
        api_client, build_ids, category="MessageCell", lifespan="persistent", aggregate="sum"
    )
    assert summary(data) == [("main", 2 * 9216, 2 * 12)]
    # per snapshot: 9216 B / 12 in each
    data = build_tree(api_client, build_ids, category="MessageCell", lifespan="persistent")
    assert summary(data) == [("main", 9216, 12)]


def test_build_tree_is_for_members_only(client, outsider, build_ids):
    client.force_login(outsider)
    app_id, build_id = build_ids
    assert client.get(f"/api/v1/apps/{app_id}/builds/{build_id}/calltree").status_code == 404
    assert client.get(f"/apps/{app_id}/builds/{build_id}/calltree/").status_code == 404


def test_calltree_page(member_client, tree_snapshot_id):
    response = member_client.get(
        f"/snapshots/{tree_snapshot_id}/calltree/?category=Malloc+48+Bytes&inverted=1"
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert f'data-api="/api/v1/snapshots/{tree_snapshot_id}/calltree"' in page
    # the widget asks its API for the category by its hash (a name may be of any length)
    assert f'data-category-hash="{category_hash("Malloc 48 Bytes")}"' in page
    assert 'name="inverted" value="1" checked' in page
    assert 'name="hide_system" value="1">' in page
    assert "js/calltree_page.js" in page and "css/calltree.css" in page
    assert "Open chat" in page  # the generation links
    assert member_client.get(f"/snapshots/{tree_snapshot_id}/calltree/?thread=2").status_code == 404
    # a generation the snapshot has (or the baseline) opens; one it lacks is 404
    for generation, code in (("1", 200), ("baseline", 200), ("2", 404), ("7", 404)):
        url = f"/snapshots/{tree_snapshot_id}/calltree/?generation={generation}"
        assert member_client.get(url).status_code == code, generation


def test_calltree_page_escapes_the_category(member_client, tree_snapshot_id):
    response = member_client.get(
        f"/snapshots/{tree_snapshot_id}/calltree/", {"category": '<script>alert("x")</script>'}
    )
    page = response.content.decode()
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page


def test_statistics_table_links_categories_to_the_call_tree(member_client, tree_snapshot_id):
    page = member_client.get(f"/snapshots/{tree_snapshot_id}/").content.decode()
    wanted = category_hash("Malloc 48 Bytes")  # by its hash: a name may be of any length
    assert f"/snapshots/{tree_snapshot_id}/calltree/?category_hash={wanted}&amp;" in page


def test_build_calltree_page(member_client, build_ids):
    app_id, build_id = build_ids
    response = member_client.get(f"/apps/{app_id}/builds/{build_id}/calltree/")
    assert response.status_code == 200
    page = response.content.decode()
    assert f'data-api="/api/v1/apps/{app_id}/builds/{build_id}/calltree"' in page
    assert "over 2 snapshots" in page
    # it says what its figures are, and offers the other
    assert "median per snapshot</strong> over the 2 snapshots" in page
    assert 'data-fixed=""' in page and "?aggregate=sum" in page
    page = member_client.get(
        f"/apps/{app_id}/builds/{build_id}/calltree/", {"aggregate": "sum", "os": "iOS 17.4.1"}
    ).content.decode()
    assert "sum over the 2 snapshots</strong>" in page
    assert 'data-fixed="os=iOS+17.4.1&amp;aggregate=sum"' in page


def test_generations_page(member_client, tree_snapshot_id):
    response = member_client.get(f"/snapshots/{tree_snapshot_id}/generations/")
    assert response.status_code == 200
    page = response.content.decode()
    names = ["Before first mark", "Launch", "Open chat"]
    assert all(name in page for name in names)
    assert page.index("Before first mark") < page.index("Launch") < page.index("Open chat")
    assert "00:05.320" in page  # Open chat at 5320 ms
    assert "25.47 KiB" in page  # its growth: 26080 bytes
    assert "4.69 KiB" in page  # Launch: 4800 bytes
    assert f"/snapshots/{tree_snapshot_id}/calltree/?generation=1" in page
    assert f"/snapshots/{tree_snapshot_id}/calltree/?generation=baseline" in page
    assert 'data-generation="baseline"' in page


def test_pages_are_for_members_only(client, outsider, tree_snapshot_id):
    for url in (f"/snapshots/{tree_snapshot_id}/calltree/",
                f"/snapshots/{tree_snapshot_id}/generations/"):  # fmt: skip
        assert client.get(url).status_code == 302  # to the login page
        client.force_login(outsider)
        assert client.get(url).status_code == 404
        client.logout()
