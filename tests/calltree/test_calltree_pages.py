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


def test_build_tree_adds_up_its_snapshots(api_client, build_ids):
    data = build_tree(api_client, build_ids)
    # first snapshot 54256 B / 160; second r1 32256/42 + r5 16384/1 = 48640/43
    assert (data["total_bytes"], data["total_count"]) == (102896, 203)
    assert summary(data) == [
        ("main", 37872 + 32256, 159 + 42),
        ("(no stack)", 32768, 2),
    ]
    inverted = build_tree(api_client, build_ids, inverted="1")
    assert summary(inverted) == [
        ("-[MessageCell init]", 64512, 84),  # 32256 in each snapshot
        ("(no stack)", 32768, 2),
        ("malloc", 5520, 115),
        ("Chat + 0x1a2b", 96, 2),
    ]


def test_build_tree_separates_threads_by_name(api_client, build_ids):
    data = build_tree(api_client, build_ids, thread="1")
    assert summary(data) == [
        ("main", 37056, 142),  # first snapshot's r1+r2 only
        ("worker", 816 + 32256, 17 + 42),  # first's r3+r4 and the second's r1 (index 0 there)
        ("(unknown thread)", 32768, 2),
    ]


def test_build_tree_category_and_lifespan(api_client, build_ids):
    data = build_tree(api_client, build_ids, category="MessageCell", lifespan="persistent")
    assert summary(data) == [("main", 2 * 9216, 2 * 12)]


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
