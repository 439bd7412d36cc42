"""The leak pages and JSON endpoints: content, triage through the panel and PATCH, access."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from rest_framework.test import APIClient

from memdash.leaks.models import LeakGroup, LeakReport
from memdash.triage.models import Status, TriageEvent

pytestmark = pytest.mark.django_db

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "leaks"

HOSTILE = b"""==9==ERROR: LeakSanitizer: detected memory leaks

Direct leak of 8 byte(s) in 1 object(s) allocated from:
    #0 0x1 in malloc
    #1 0x2 in <script>alert(1)</script> /src/x.cc:1

SUMMARY: AddressSanitizer: 8 byte(s) leaked in 1 allocation(s).
"""


@pytest.fixture
def leaks(upload, app):
    for name, build in [("libmemunreachable_chrome.txt", "1.0"), ("lsan_direct_leak.txt", "1.1")]:
        response = upload(
            (SAMPLES / name).read_bytes(),
            content_type="text/plain",
            query=f"build_version={build}&device_id=D-1",
        )
        assert response.status_code == 202 and response.json()["status"] == "done"


def test_group_list(leaks, app, member_client):
    response = member_client.get(f"/apps/{app.pk}/leaks/")
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="leaks-per-build"' in page  # the chart
    assert "xmlStrndup" in page and "336-byte allocations" in page
    # 1.0's report counted 1632 - 480 = 1152 bytes it did not list: 1152 / 1024 = 1.125 KiB,
    # printed as every byte figure is (two decimals, 1.12), the exact count in the tooltip
    assert '<span title="1,152 bytes">1.12 KiB</span> in 8' in page
    assert " B in " not in page
    assert response.context["totals"][0].unreachable_bytes == 1632
    assert [t.build.version for t in response.context["totals"]] == ["1.0", "1.1"]
    # 1.1: two reports, 3079 + 10 bytes; 1.0: one report of 1632 bytes
    assert response.context["totals"][1].unreachable_bytes == 3089
    assert response.context["totals"][1].reports == 2


def test_group_list_filters_by_status(leaks, app, member_client, member):
    group = LeakGroup.objects.get(title="xmlStrndup")
    LeakGroup.objects.filter(pk=group.pk).update(status=Status.IGNORED)
    open_page = member_client.get(f"/apps/{app.pk}/leaks/").content.decode()
    assert "xmlStrndup" not in open_page
    ignored = member_client.get(f"/apps/{app.pk}/leaks/?status=ignored&sort=bytes")
    assert "xmlStrndup" in ignored.content.decode()


def test_group_detail_and_triage_panel(leaks, app, member_client, member):
    group = LeakGroup.objects.get(title="xmlStrndup")
    response = member_client.get(f"/apps/{app.pk}/leaks/{group.pk}/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "xsltParseStylesheetOutput" in page  # the stack
    assert 'id="triage"' in page and "__interceptor_malloc" in page
    saved = member_client.post(
        f"/apps/{app.pk}/leaks/{group.pk}/",
        {"triage-status": "open", "triage-assignee": member.pk, "triage-notes": "libxml's"},
    )
    assert saved.status_code == 302
    group.refresh_from_db()
    assert (group.status, group.assignee, group.notes) == ("open", member, "libxml's")
    assert TriageEvent.objects.filter(object_id=group.pk).count() == 1


def test_report_detail_shows_stated_and_listed(leaks, app, member_client):
    report = LeakReport.objects.get(tool="libmemunreachable")
    response = member_client.get(f"/apps/{app.pk}/leaks/reports/{report.pk}/")
    assert response.status_code == 200
    page = response.content.decode()
    # stated 1632 bytes (1.59 KiB), listed 480, not listed 1152 (1.12 KiB); exact in tooltips
    totals = page[page.index('id="report-totals"') : page.index("</table>")]
    for figure, exact in (("1.59 KiB", "1,632"), ("480 Bytes", "480"), ("1.12 KiB", "1,152")):
        assert f'title="{exact} bytes">{figure}<' in totals
    lsan = LeakReport.objects.filter(tool="sanitizer").order_by("position").first()
    page = member_client.get(lsan.get_absolute_url()).content.decode()
    assert "libfontconfig" in page and "libGL.so" in page


def test_pages_escape_symbols(upload, app, member_client):
    response = upload(HOSTILE, content_type="text/plain", query="build_version=1.0")
    assert response.status_code == 202
    group = LeakGroup.objects.get()
    for url in (f"/apps/{app.pk}/leaks/", f"/apps/{app.pk}/leaks/{group.pk}/"):
        page = member_client.get(url).content.decode()
        assert "<script>alert(1)</script>" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_pages_are_for_members_only(leaks, app, outsider_client):
    group = LeakGroup.objects.first()
    report = LeakReport.objects.first()
    urls = [
        f"/apps/{app.pk}/leaks/",
        f"/apps/{app.pk}/leaks/{group.pk}/",
        f"/apps/{app.pk}/leaks/reports/{report.pk}/",
    ]
    for url in urls:
        assert outsider_client.get(url).status_code == 404, url
        anonymous = Client().get(url)
        assert anonymous.status_code == 302 and "/login/" in anonymous["Location"], url
    posted = outsider_client.post(urls[1], {"triage-status": "ignored"})
    assert posted.status_code == 404
    group.refresh_from_db()
    assert group.status == Status.NEW


def test_group_of_another_app_is_not_found_under_this_app(leaks, app, member_client):
    from memdash.core.writes import apps as services

    other = services.get_or_create_app("com.example.other", "ios")
    # A copy of a group made in the other app (rather than a group moved there: a row never
    # changes app, and Citus refuses an UPDATE of the column its tables are distributed by).
    group = LeakGroup.objects.first()
    group.pk, group.app = None, other
    group.save()
    assert member_client.get(f"/apps/{app.pk}/leaks/{group.pk}/").status_code == 404


def test_json_list(leaks, app, api_client):
    response = api_client.get(f"/api/v1/apps/{app.pk}/leaks")
    assert response.status_code == 200
    data = response.json()
    assert data["fingerprint_version"] == "leaks-2027.02"
    assert [(b["build"]["version"], b["unreachable_bytes"]) for b in data["builds"]] == [
        ("1.0", 1632),
        ("1.1", 3089),
    ]
    assert data["builds"][0]["unlisted_bytes"] == 1152
    titles = {g["title"] for g in data["groups"]}
    assert {"xmlStrndup", "__GI___strdup", "336-byte allocations"} <= titles
    assert all(g["status"] == "new" for g in data["groups"])


def test_json_group_and_triage_patch(leaks, app, api_client, member):
    group = LeakGroup.objects.get(title="xmlStrndup")
    data = api_client.get(f"/api/v1/leaks/{group.pk}").json()
    assert data["occurrences_per_build"] == [
        {"id": group.last_seen_build_id, "version": "1.1", "number": "", "occurrences": 1,
         "bytes": 10}
    ]  # fmt: skip
    assert data["stack"][0]["symbol"] == "__interceptor_malloc"
    patched = api_client.patch(
        f"/api/v1/leaks/{group.pk}", {"status": "fixed", "assignee": "member"}, format="json"
    )
    assert patched.status_code == 200, patched.json()
    assert (patched.json()["status"], patched.json()["assignee"]) == ("fixed", "member")
    bad = api_client.patch(f"/api/v1/leaks/{group.pk}", {"status": "done"}, format="json")
    assert bad.status_code == 400


def test_json_access(leaks, app, outsider):
    group = LeakGroup.objects.first()
    stranger = APIClient()
    stranger.force_authenticate(outsider)
    assert stranger.get(f"/api/v1/apps/{app.pk}/leaks").status_code == 404
    assert stranger.get(f"/api/v1/leaks/{group.pk}").status_code == 404
    assert (
        stranger.patch(
            f"/api/v1/leaks/{group.pk}", {"status": "ignored"}, format="json"
        ).status_code
        == 404
    )
    assert APIClient().get(f"/api/v1/apps/{app.pk}/leaks").status_code in (401, 403)


def test_empty_page(app, member_client):
    response = member_client.get(f"/apps/{app.pk}/leaks/")
    assert response.status_code == 200
    assert "No leak reports yet" in response.content.decode()
