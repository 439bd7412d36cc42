"""A category of any length is opened by a short link: links name it by its hash
(`category_hash`), which the pages and the API read back; the name is on the page, never in the
URL. A 5,000-character category's link was 7,371 characters, past gunicorn's 4 KiB request line."""

from __future__ import annotations

import re
from html import unescape

import pytest

from memdash.allocations.models import category_hash
from tests.calltree.conftest import tree_doc

pytestmark = pytest.mark.django_db
LONG = "VeryLongCategory" + "x" * 4984  # 5,000 characters


@pytest.fixture
def long_snapshot_id(upload) -> int:
    doc = tree_doc()
    doc["allocations"][0]["category"] = LONG  # MessageCell's row: 12 objects, 9,216 bytes
    answer = upload(doc)
    assert answer.json()["status"] == "done", answer.json()
    return answer.json()["snapshot"]["id"]


def test_the_statistics_tables_link_is_short_and_opens_the_categorys_tree(
    member_client, long_snapshot_id
):
    page = member_client.get(f"/snapshots/{long_snapshot_id}/").content.decode()
    links = [unescape(h) for h in re.findall(r'<a class="category" href="([^"]+)"', page)]
    [link] = [h for h in links if f"category_hash={category_hash(LONG)}" in h]
    assert len(link) < 120 and LONG not in link
    tree_page = member_client.get(link)
    assert tree_page.status_code == 200
    assert LONG in tree_page.content.decode()  # the name is shown, not carried
    api = member_client.get(
        f"/api/v1/snapshots/{long_snapshot_id}/calltree?category_hash={category_hash(LONG)}"
    )
    assert api.status_code == 200
    # The tree of that category alone: MessageCell's 12 persistent and 30 transient objects.
    assert api.json()["total_bytes"] == 9216 + 23040 and api.json()["total_count"] == 42


def test_an_unknown_hash_is_a_404(member_client, long_snapshot_id):
    url = f"/api/v1/snapshots/{long_snapshot_id}/calltree?category_hash=12345"
    assert member_client.get(url).status_code == 404
    assert (
        member_client.get(f"/snapshots/{long_snapshot_id}/calltree/?category_hash=x").status_code
        == 404
    )
