"""The compare pages render what the API computes, and show names as text."""

from __future__ import annotations

import pytest

from tests.compare.helpers import SNAPSHOT_A_ROWS, SNAPSHOT_B_ROWS, document, row, store

pytestmark = pytest.mark.django_db

HOSTILE = "<script>alert('x')</script>"


@pytest.fixture
def snapshots(upload):
    a = store(upload, document(SNAPSHOT_A_ROWS))
    b_rows = [*SNAPSHOT_B_ROWS, row(HOSTILE, 3, None, 1, 48)]
    b = store(upload, document(b_rows, version="2.0", number="2", device="D-2", generations=[]))
    return a, b


def test_generation_diff_page_defaults_to_the_last_two_generations(member_client, app, snapshots):
    a, _ = snapshots
    response = member_client.get(f"/apps/{app.pk}/snapshots/{a}/generation-diff/")
    assert response.status_code == 200
    # the last mark (Idle, empty) against the one before it (Open): everything of Open is gone
    assert response.context["base"].ref == f"generation:{a}:1"
    assert response.context["target"].ref == f"generation:{a}:2"
    assert [r.status for r in response.context["rows"]] == ["gone", "gone", "gone"]
    html = response.content.decode()
    assert 'id="difftree"' in html and "js/difftree.js" in html
    assert 'id="difftree-config"' in html
    # the first generation against the baseline before it
    response = member_client.get(f"/apps/{app.pk}/snapshots/{a}/generation-diff/?target=0")
    assert response.context["base"].ref == f"generation:{a}:baseline"
    # a missing generation is a 404, not a 500
    bad = member_client.get(f"/apps/{app.pk}/snapshots/{a}/generation-diff/?target=9")
    assert bad.status_code == 404


def test_snapshot_diff_page(member_client, app, snapshots):
    a, b = snapshots
    picker = member_client.get(f"/apps/{app.pk}/snapshot-diff/")
    assert picker.status_code == 200 and picker.context["pick"]
    response = member_client.get(f"/apps/{app.pk}/snapshot-diff/?base={a}&target={b}")
    assert response.status_code == 200
    assert [r.category for r in response.context["rows"]][:2] == ["Cache", "New"]
    html = response.content.decode()
    assert HOSTILE not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    filtered = member_client.get(f"/apps/{app.pk}/snapshot-diff/?base={a}&target={b}&q=cac")
    assert [r.category for r in filtered.context["rows"]] == ["Cache"]


def test_build_compare_page(member_client, app, snapshots):
    response = member_client.get(f"/apps/{app.pk}/compare/?max_growth=5%25")
    assert response.status_code == 200
    context = response.context
    # defaults: the last two builds with snapshots, in release order
    assert (str(context["base"]), str(context["target"])) == ("1.0 (1)", "2.0 (2)")
    assert context["chart"] is not None
    assert context["failures"]  # 1944 B -> 3944 B per snapshot is well past 5%
    html = response.content.decode()
    assert 'id="compare-table"' in html and 'id="compare-chart"' in html
    assert 'id="gate"' in html and "Fails" in html
    assert HOSTILE not in html


def test_trends_page(member_client, app, snapshots):
    response = member_client.get(f"/apps/{app.pk}/trends/?category=Cache&category=Nope")
    assert response.status_code == 200
    assert response.context["categories"] == ["Cache"]  # unknown names are dropped
    points = response.context["points"]
    assert [str(p.build) for p in points] == ["1.0 (1)", "2.0 (2)"]
    # whole heap per snapshot: A 1944 B (persistent), B 3944 B; Cache 1000 -> 2000
    assert [p.total.median for p in points] == [1944, 3944]
    assert [p.categories["Cache"].median for p in points] == [1000, 2000]
    chart = response.context["chart"]
    assert [trace["name"] for trace in chart["data"]] == ["All Heap & Anonymous VM", "Cache"]
    # clicking a point opens its build
    assert chart["data"][0]["customdata"] == [p.build.get_absolute_url() for p in points]
    assert HOSTILE not in response.content.decode()


def test_empty_app_pages(member_client, app):
    assert member_client.get(f"/apps/{app.pk}/compare/").status_code == 200
    assert member_client.get(f"/apps/{app.pk}/trends/").status_code == 200
    assert member_client.get(f"/apps/{app.pk}/snapshot-diff/").status_code == 200
