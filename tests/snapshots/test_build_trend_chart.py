"""The app's chart of persistent bytes per build plots the builds that have snapshots: a build
without any has no median to plot (not 0 bytes)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from memdash.core.writes import apps as core_services

pytestmark = pytest.mark.django_db


def chart_of(html: str) -> dict:
    data = html.split('id="build-trend-data" type="application/json">')[1]
    return json.loads(data.split("</script>")[0])


def test_builds_without_snapshots_are_not_plotted(member_client, app, demo_context):
    from memdash.allocations import demo as allocations_demo

    allocations_demo.load(demo_context)
    empty = core_services.get_or_create_build(app, "9.9.9", "999")  # no snapshot
    html = member_client.get(reverse("snapshots:app_detail", args=[app.pk])).content.decode()
    plotted = chart_of(html)["data"][0]
    assert str(empty) not in plotted["x"] and 0 not in plotted["y"]
    assert len(plotted["x"]) >= 1 and all(plotted["y"])


def test_no_chart_when_no_build_has_snapshots(member_client, app):
    core_services.get_or_create_build(app, "1.0", "1")
    html = member_client.get(reverse("snapshots:app_detail", args=[app.pk])).content.decode()
    assert "build-trend-data" not in html
    # its row says it has no median, rather than 0 bytes
    row = html.split(">1.0</a>")[1].split("</tr>")[0]
    assert '<td class="num">0</td><td class="num">–</td>' in row and "Bytes" not in row
