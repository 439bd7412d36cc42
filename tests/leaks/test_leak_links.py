"""Every build a leak page prints is a link to the build's page: the totals per build, a group's
first and last seen builds and its occurrences, the reports and a report's own build."""

from __future__ import annotations

import re

import pytest

from memdash.core.models import Build
from memdash.leaks.models import LeakGroup, LeakReport
from tests.leaks.test_leak_pages import SAMPLES

pytestmark = pytest.mark.django_db


@pytest.fixture
def leaks(upload, app):
    for name, build in [("libmemunreachable_chrome.txt", "1.0"), ("lsan_direct_leak.txt", "1.1")]:
        response = upload(
            (SAMPLES / name).read_bytes(),
            content_type="text/plain",
            query=f"build_version={build}&device_id=D-1",
        )
        assert response.status_code == 202 and response.json()["status"] == "done"


def link(build: Build) -> str:
    return f'<a href="{build.get_absolute_url()}" class="build-link">{build}</a>'


def test_leak_pages_link_their_builds(leaks, app, member_client):
    first, second = Build.objects.get(version="1.0"), Build.objects.get(version="1.1")
    listing = member_client.get(f"/apps/{app.pk}/leaks/").content.decode()
    builds_table = listing.split('id="leaks-builds"')[1].split("</table>")[0]
    assert f"<td>{link(first)}</td>" in builds_table and f"<td>{link(second)}</td>" in builds_table
    reports_table = listing.split('id="leak-reports"')[1].split("</table>")[0]
    assert f"<td>{link(second)}</td>" in reports_table
    group = LeakGroup.objects.get(title="xmlStrndup")
    # first and last seen, in the group's row
    assert f"<td>{link(group.first_seen_build)}<br>" in listing
    detail = member_client.get(group.get_absolute_url()).content.decode()
    cards = re.findall(r'<div class="value">(<a [^>]*>[^<]*</a>)</div>', detail)
    assert cards == [link(group.first_seen_build), link(group.last_seen_build)], cards
    occurrences = detail.split('id="leak-occurrences"')[1].split("</table>")[0]
    assert f"<td>{link(group.last_seen_build)}</td>" in occurrences
    report = LeakReport.objects.filter(build=second).first()
    assert report is not None
    assert f"Build {link(second)}" in member_client.get(report.get_absolute_url()).content.decode()
