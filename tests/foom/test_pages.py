"""FOOM pages and JSON: what they show, the memory context of a FOOM, and who may see them."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from memdash.foom.logic.classify import RULES_VERSION, class_label
from memdash.foom.models import Session
from tests.foom.helpers import ago, ended, run, sessions_doc

pytestmark = pytest.mark.django_db


def snapshot_doc(session: str, captured_at) -> dict:
    """A snapshot taken by the monitor at the last memory warning of run `session`."""
    return {
        "format": "memdash.snapshot",
        "version": 1,
        "app": {"id": "com.example.chat", "platform": "ios"},
        "build": {"version": "8.0.51", "number": "2741"},
        "device": {"id": "D1", "model": "iPhone14,5"},
        "session": session,
        "captured_at": captured_at.isoformat(),
        "trigger": "foom",
        "allocations": [
            # 600 images of 256 KiB = 157286400 bytes; 5000 strings of 64 bytes = 320000 bytes
            {"category": "ChatImageCache", "persistent": 600, "persistent_bytes": 157_286_400},
            {"category": "NSString", "persistent": 5000, "persistent_bytes": 320_000},
        ],
    }


@pytest.fixture
def foom_world(upload):
    """Build 8.0.51: a FOOM on D1 (with a snapshot), a FOOM on D2 (an odd model name), a quit."""
    t = ago(days=3)
    doc = sessions_doc(
        run("foom-1", t, end=ended(memory_warnings=5, footprint_bytes=2_936_012_800)),
        run("next-1", ago(days=2)),
        run(
            "foom-2",
            t,
            device="D2",
            model="<b>Phone</b>",
            end=ended(memory_warnings=2, footprint_bytes=1_400_000_000),
        ),
        run("next-2", ago(days=2), device="D2", model="<b>Phone</b>"),
        run("quit-3", t, device="D3", end=ended(user_quit=True)),
        run("next-3", ago(days=2), device="D3"),
    )
    assert upload(doc).status_code == 202
    response = upload(snapshot_doc("foom-1", t))
    assert response.status_code == 202, response.json()
    return {"foom": Session.objects.get(session_id="foom-1")}


def test_app_page_shows_the_trend(member_client, app, foom_world):
    response = member_client.get(reverse("foom:app_foom", args=[app.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    for chart_id in ("foom-build-trend", "foom-class-breakdown", "foom-day-trend"):
        assert f'id="{chart_id}"' in html
    assert "8.0.51 (2741)" in html
    # 2 FOOMs of 3 classified foreground runs: 66.67%
    assert "66.67%" in html
    assert RULES_VERSION in html


def test_build_page_lists_fooms_with_their_memory(member_client, app, foom_world):
    session = foom_world["foom"]
    url = reverse("foom:build_foom", args=[app.pk, session.build_id])
    response = member_client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="foom-footprint-by-model"' in html
    assert "iPhone14,5" in html
    # user data is escaped
    assert "<b>Phone</b>" not in html.split("<script")[0]
    assert "&lt;b&gt;Phone&lt;/b&gt;" in html
    # the FOOM run links to its snapshot, and the category that filled memory leads
    snapshot_url = reverse("snapshots:snapshot_detail", args=[_snapshot_id("foom-1")])
    assert snapshot_url in html
    assert html.index("ChatImageCache") < html.index("NSString")
    # ChatImageCache share: 157286400 / (157286400 + 320000) = 0.99797 -> 99.8%
    assert "99.8%" in html
    assert reverse("foom:session_detail", args=[app.pk, session.pk]) in html


def test_session_page_links_to_the_snapshot(member_client, app, foom_world):
    session = foom_world["foom"]
    response = member_client.get(reverse("foom:session_detail", args=[app.pk, session.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert reverse("snapshots:snapshot_detail", args=[_snapshot_id("foom-1")]) in html
    assert "rule 15" in html


def test_session_json(api_client, foom_world):
    response = api_client.get("/api/v1/sessions/foom-1")
    assert response.status_code == 200
    body = response.json()
    assert (body["id"], body["class"], body["rule"]) == ("foom-1", "foom", 15)
    assert body["rules_version"] == RULES_VERSION
    assert body["build"] == {"version": "8.0.51", "number": "2741"}
    assert body["end"]["memory_warnings"] == 5
    assert body["end"]["footprint_bytes"] == 2_936_012_800
    assert [s["id"] for s in body["snapshots"]] == [_snapshot_id("foom-1")]
    # by memdash's own number too
    by_pk = api_client.get(f"/api/v1/sessions/{foom_world['foom'].pk}")
    assert by_pk.json()["id"] == "foom-1"
    pending = api_client.get("/api/v1/sessions/next-1").json()
    assert (pending["class"], pending["rule"], pending["rules_version"]) == ("pending", None, None)
    assert api_client.get("/api/v1/sessions/no-such-run").status_code == 404


def test_app_foom_json(api_client, app, foom_world):
    (build,) = api_client.get(f"/api/v1/apps/{app.pk}/foom").json()
    # 6 runs; classified: foom-1, foom-2, quit-3 (all foreground); devices D1, D2, D3
    assert (build["sessions"], build["classified"], build["foom"]) == (6, 3, 2)
    assert build["foom_rate"] == pytest.approx(2 / 3)
    assert (build["devices"], build["foom_devices"]) == (3, 2)
    assert build["user_rate"] == pytest.approx(2 / 3)
    assert build["classes"] == {"foom": 2, "user_quit": 1, "pending": 3}


def test_empty_app_page(member_client, app):
    response = member_client.get(reverse("foom:app_foom", args=[app.pk]))
    assert response.status_code == 200
    assert "No sessions yet" in response.content.decode()


def test_outsiders_get_404(outsider, outsider_client, app, foom_world):
    session = foom_world["foom"]
    pages = [
        reverse("foom:app_foom", args=[app.pk]),
        reverse("foom:build_foom", args=[app.pk, session.build_id]),
        reverse("foom:session_detail", args=[app.pk, session.pk]),
    ]
    for url in pages:
        assert outsider_client.get(url).status_code == 404, url
    api = APIClient()
    api.force_authenticate(outsider)
    assert api.get(f"/api/v1/apps/{app.pk}/foom").status_code == 404
    assert api.get("/api/v1/sessions/foom-1").status_code == 404
    assert api.get(f"/api/v1/sessions/{session.pk}").status_code == 404


def test_a_build_of_another_app_is_404(member_client, app, foom_world):
    from memdash.core.writes import apps as services

    other = services.get_or_create_app("com.example.other", "ios")
    build = services.get_or_create_build(other, "1.0", "1")
    url = reverse("foom:build_foom", args=[app.pk, build.pk])
    assert member_client.get(url).status_code == 404


def test_anonymous_is_sent_to_login(client, app):
    response = client.get(reverse("foom:app_foom", args=[app.pk]))
    assert response.status_code == 302
    assert "/login/" in response["Location"]
    assert client.get(f"/api/v1/apps/{app.pk}/foom").status_code in (401, 403)


def _snapshot_id(session_id: str) -> int:
    from memdash.allocations.models import Snapshot

    return Snapshot.objects.get(session_id=session_id).pk


def test_a_session_id_two_apps_share_needs_the_app(api_client, app, member, foom_world):
    from memdash.core.writes import apps as services
    from memdash.foom.logic.reports import SessionReport
    from memdash.foom.writes.sessions import store_sessions

    other = services.get_or_create_app("com.example.other", "ios")
    services.add_member(other, member)
    report = SessionReport(
        id="foom-1", device_id="Z", device_model="", build_version="1.0", build_number="",
        build_commit="", binary_uuid="", os="", boot_time=None, started_at=ago(days=1),
        last_seen_at=None, end=None, bot=False,
    )  # fmt: skip
    store_sessions(other, [report])
    assert api_client.get("/api/v1/sessions/foom-1").status_code == 400
    mine = api_client.get(f"/api/v1/sessions/foom-1?app={app.pk}").json()
    theirs = api_client.get(f"/api/v1/sessions/foom-1?app={other.pk}").json()
    assert (mine["app"], mine["class"]) == (app.pk, "foom")
    assert (theirs["app"], theirs["class"]) == (other.pk, "pending")


def test_app_page_shows_the_rate_denominator(member_client, app, upload):
    """FOOMs / foreground ends = the rate, on one row: a run that ended in the background is
    classified but not in the denominator, a run still pending is neither."""
    t = ago(days=3)
    doc = sessions_doc(
        run("foom-1", t, end=ended(memory_warnings=5)),
        run("next-1", ago(days=2)),  # pending: no successor yet, grace not over
        run("quit-2", t, device="D2", end=ended(user_quit=True)),
        run("next-2", ago(days=2), device="D2"),
        run("bg-3", t, device="D3", end={"state": "background", "active_for_ms": 60_000}),
        run("next-3", ago(days=2), device="D3"),
    )
    assert upload(doc).status_code == 202
    html = member_client.get(reverse("foom:app_foom", args=[app.pk])).content.decode()
    table = html[html.index('id="foom-builds"') :].split("</table>")[0]
    assert "<th" in table and "Foreground ends</th>" in table
    row = table[table.index("8.0.51 (2741)") :].split("</tr>")[0]
    cells = [c.split("</td>")[0] for c in row.split('<td class="num">')[1:]]
    # runs 6; classified 3 (foom-1 FOOM, quit-2 user quit, bg-3 background OOM); foreground
    # ends 2 (bg-3 ended in the background); FOOMs 1; rate 1 / 2 = 50.00%
    assert cells[:5] == ["6", "3", "2", "1", "50.00%"]


def test_classes_are_named_in_words_on_pages_and_legends(member_client, app, foom_world):
    assert [class_label(c) for c in ("background_oom", "user_quit", "app_hang", "os_kill")] == [
        "background OOM", "user quit", "app hang", "OS kill",
    ]  # fmt: skip
    assert class_label("foom") == "FOOM" and class_label("thermal_kill") == "thermal kill"
    session = foom_world["foom"]
    build_page = member_client.get(reverse("foom:build_foom", args=[app.pk, session.build_id]))
    cells = re.findall(r"<tr><td>([^<]*)</td><td class=\"num\">", build_page.content.decode())
    assert "user quit" in cells and "FOOM" in cells and "user_quit" not in cells
    app_page = member_client.get(reverse("foom:app_foom", args=[app.pk])).content.decode()
    data = app_page.split('id="foom-class-breakdown-data" type="application/json">')[1]
    legend = json.loads(data.split("</script>")[0])
    assert {trace["name"] for trace in legend["data"]} == {"FOOM", "user quit", "pending"}
