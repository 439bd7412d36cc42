"""The path between snapshots and runs: a snapshot's session id opens its run (by kind, through
the uploaded id), a run's build opens the build, and "What filled memory" opens each category's
call tree in the snapshot that holds most of it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memdash.allocations.models import Snapshot, category_hash
from memdash.foom.models import Session
from tests.foom.helpers import ago, ended, run, sessions_doc
from tests.foom.test_pages import snapshot_doc

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs(upload) -> dict[str, Snapshot]:
    """Two FOOMs of 8.0.51, each with a snapshot: foom-1's holds ChatImageCache 157286400 and
    NSString 320000 bytes, foom-2's NSString 1000000 bytes only."""
    t = ago(days=3)
    doc = sessions_doc(
        run("foom-1", t, end=ended(memory_warnings=5, footprint_bytes=2_936_012_800)),
        run("next-1", ago(days=2)),
        run("foom-2", t, device="D2", end=ended(memory_warnings=2, footprint_bytes=1_400_000_000)),
        run("next-2", ago(days=2), device="D2"),
    )
    assert upload(doc).status_code == 202
    assert upload(snapshot_doc("foom-1", t)).status_code == 202
    second = snapshot_doc("foom-2", t)
    second["device"] = {"id": "D2", "model": "iPhone12,1"}
    second["allocations"] = [
        {"category": "NSString", "persistent": 15625, "persistent_bytes": 1_000_000}
    ]
    assert upload(second).status_code == 202
    return {s.session_id: s for s in Snapshot.objects.all()}


def test_snapshot_session_opens_its_run(member_client, app, runs):
    snapshot = runs["foom-1"]
    html = member_client.get(snapshot.get_absolute_url()).content.decode()
    by_id = reverse("foom:session_by_id", args=[app.pk, "foom-1"])
    assert f'id="session-link" href="{by_id}"' in html
    session = Session.objects.get(session_id="foom-1")
    response = member_client.get(by_id)
    assert (response.status_code, response["Location"]) == (302, session.get_absolute_url())
    # a snapshot may name a run that was never reported: that run's page is not found
    assert (
        member_client.get(reverse("foom:session_by_id", args=[app.pk, "no-such-run"])).status_code
        == 404
    )


def test_session_id_of_another_app_is_not_found(outsider_client, app, runs):
    by_id = reverse("foom:session_by_id", args=[app.pk, "foom-1"])
    assert outsider_client.get(by_id).status_code == 404


def test_run_build_is_a_link(member_client, app, runs):
    session = Session.objects.get(session_id="foom-1")
    html = member_client.get(session.get_absolute_url()).content.decode()
    build_url = session.build.get_absolute_url()
    assert (
        f'<tr><th>Build</th><td><a href="{build_url}" class="build-link">8.0.51 (2741)</a>' in html
    )


def test_what_filled_memory_opens_the_category_tree_of_the_largest_snapshot(
    member_client, app, runs
):
    session = Session.objects.get(session_id="foom-1")
    html = member_client.get(reverse("foom:build_foom", args=[app.pk, session.build_id])).content
    table = html.decode().split('id="foom-categories"')[1].split("</table>")[0]
    # NSString: 320000 in foom-1's snapshot, 1000000 in foom-2's -> foom-2's; ChatImageCache is
    # only in foom-1's
    nsstring = (
        reverse("snapshots:calltree", args=[runs["foom-2"].pk])
        + f"?category_hash={category_hash('NSString')}"
    )
    cache = (
        reverse("snapshots:calltree", args=[runs["foom-1"].pk])
        + f"?category_hash={category_hash('ChatImageCache')}"
    )
    assert f'<a href="{nsstring}"' in table and f'<a href="{cache}"' in table
    assert member_client.get(cache).status_code == 200
