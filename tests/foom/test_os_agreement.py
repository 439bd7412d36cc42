"""iOS agreement by counts: only the runs of the devices that sent MetricKit, when the payloads
name their device, else every run of the day as a bound, said so in the JSON, the page and the
CSV; and the FOOM pages' trend charts with the OS's line wherever the OS spoke."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

import pytest
from django.urls import reverse

from memdash.foom.web.charts.rates import OS_RATE_NAME
from tests.foom.helpers import ended, run, sessions_doc

pytestmark = pytest.mark.django_db
METRIC_PAYLOAD = json.loads(
    (Path(__file__).parents[1] / "data" / "metrickit" / "metric_payload.json").read_text()
)
BUILD = ("8.0.4", "104")


def day_payload(memory: int, normal: int, begin: str = "2026-10-22 23:00:00 +0000") -> dict:
    """metric_payload.json's day (the 23rd) with these foreground exits, no background ones."""
    doc = json.loads(json.dumps(METRIC_PAYLOAD))
    doc["timeStampBegin"] = begin
    doc["applicationExitMetrics"] = {
        "foregroundExitData": {
            "cumulativeMemoryResourceLimitExitCount": memory,
            "cumulativeNormalAppExitCount": normal,
        },
        "backgroundExitData": {},
    }
    return doc


@pytest.fixture
def fooms(upload):
    """Four FOOMs (rule 15: a foreground end, nothing flagged) on the 23rd: two of D1, one of
    D2, one of D3, each followed by the device's next launch (left pending)."""
    runs = []
    for device, count in (("D1", 2), ("D2", 1), ("D3", 1)):
        for i in range(count):
            at = datetime(2026, 10, 23, 8 + 2 * i, 0, tzinfo=UTC)
            runs.append(run(f"f-{device}-{i}", at, device, BUILD, ended()))
        runs.append(run(f"n-{device}", datetime(2026, 10, 23, 20, 0, tzinfo=UTC), device, BUILD))
    assert upload(sessions_doc(*runs)).json()["status"] == "done"


def agreement(api_client, app) -> dict:
    (row,) = api_client.get(f"/api/v1/apps/{app.pk}/foom/os").json()
    return row["agreement"]


def test_only_the_runs_of_the_devices_that_sent_metrickit(upload, api_client, app, fooms):
    # D1: 2 memory-limit kills of 7 foreground exits; D2: none of 5; D3 shares no analytics
    assert upload(day_payload(2, 5), query="device_id=D1").json()["status"] == "done"
    assert upload(day_payload(0, 5), query="device_id=D2").json()["status"] == "done"
    got = agreement(api_client, app)
    assert got["basis"] == "counts per day, same devices"
    assert (got["bound"], got["days"], got["bound_days"]) == (False, 1, 0)
    (rule15,) = got["rules"]
    # D1 and D2: 2 + 1 = 3 FOOMs against 2 + 0 = 2 memory kills: at least 3 − 2 = 1 false FOOM
    # (D3's FOOM left out: over all runs it would be 4 − 2 = 2), none missed
    assert (rule15["rule"], rule15["fooms"], rule15["os_memory"]) == (15, 3, 2)
    assert (rule15["false_fooms"], rule15["missed"]) == (1, 0)


def test_a_payload_without_its_device_makes_the_day_a_bound(
    upload, api_client, member_client, app, fooms
):
    assert upload(day_payload(2, 5), query="device_id=D1").json()["status"] == "done"
    assert upload(day_payload(0, 5), query="device_id=D2").json()["status"] == "done"
    # a device that names none, its window starting at midnight UTC: the same day (the 23rd)
    assert upload(day_payload(1, 3, "2026-10-23 00:00:00 +0000")).json()["status"] == "done"
    got = agreement(api_client, app)
    assert got["basis"] == "counts per day, all runs (a bound)"
    assert (got["bound"], got["days"], got["bound_days"]) == (True, 1, 1)
    (rule15,) = got["rules"]
    # every run of the day: 4 FOOMs against 2 + 0 + 1 = 3 memory kills: 4 − 3 = 1 false FOOM
    assert (rule15["fooms"], rule15["os_memory"], rule15["false_fooms"]) == (4, 3, 1)
    html = member_client.get(reverse("foom:os_exits", args=[app.pk])).content.decode()
    assert "counts per day, all runs (a bound) over 1 day (1 over all runs)" in html
    assert "false FOOMs may be overstated" in html


def test_the_classes_table_as_csv(upload, member_client, app, fooms):
    assert upload(day_payload(2, 5), query="device_id=D1").json()["status"] == "done"
    url = reverse("foom:os_exits", args=[app.pk])
    html = member_client.get(url).content.decode()
    assert "table=classes" in html  # the OS-classes table links its CSV
    text = b"".join(
        member_client.get(url, {"format": "csv", "table": "classes"}).streaming_content
    ).decode()
    rows = {row["class"]: row for row in csv.DictReader(StringIO(text))}
    assert set(rows) == {"foom", "background_oom", "crash", "app_hang"}
    # D1 alone: its 2 FOOMs against its 2 memory kills, nothing either side counted more
    assert rows["foom"] == {
        "build_version": "8.0.4", "build_number": "104", "basis": "counts per day, same devices",
        "days": "1", "class": "foom", "runs": "2", "os_verdict": "memory", "exits": "2",
        "heuristic_counted_more": "0", "os_counted_more": "0",
    }  # fmt: skip


def figure(html: str, chart_id: str) -> dict:
    """The plotly payload the page embeds for this chart (core/chart.html's json_script)."""
    marker = f'id="{chart_id}-data"'
    start = html.index(">", html.index(marker)) + 1
    return json.loads(html[start : html.index("</script>", start)])


def line(fig: dict, name: str) -> dict:
    (trace,) = [t for t in fig["data"] if t.get("name") == name]
    return trace


def test_the_trend_charts_draw_the_oss_line_wherever_it_spoke(upload, member_client, app, fooms):
    # MetricKit of a build without runs (8.0.5, the 24th): still on the chart, OS line only
    later = day_payload(1, 3, "2026-10-23 23:00:00 +0000")
    later["timeStampEnd"] = "2026-10-24 22:59:00 +0000"
    later["appVersion"], later["metaData"]["appBuildVersion"] = "8.0.5", "105"
    assert upload(day_payload(2, 5), query="device_id=D1").json()["status"] == "done"
    assert upload(later, query="device_id=D1").json()["status"] == "done"
    html = member_client.get(reverse("foom:app_foom", args=[app.pk])).content.decode()
    builds = figure(html, "foom-build-trend")
    os_line = line(builds, OS_RATE_NAME)
    assert os_line["x"] == ["8.0.4 (104)", "8.0.5 (105)"]
    # 8.0.4: 2 memory kills of 7 foreground exits; 8.0.5: 1 of 4
    assert os_line["y"] == pytest.approx([2 / 7, 1 / 4])
    # the heuristic: 4 FOOMs of 4 foreground ends on 8.0.4, nothing on 8.0.5
    assert line(builds, "FOOM rate per session")["y"] == [1.0, None]
    days = figure(html, "foom-day-trend")
    assert line(days, OS_RATE_NAME)["x"] == ["2026-10-23", "2026-10-24"]
    assert line(days, OS_RATE_NAME)["y"] == pytest.approx([2 / 7, 1 / 4])
    assert line(days, "FOOM rate per session")["y"] == [1.0, None]
    # a build's FOOM page: its day chart has the OS's line too
    build = app.builds.get(version="8.0.4")
    page = member_client.get(reverse("foom:build_foom", args=[app.pk, build.pk])).content.decode()
    assert line(figure(page, "foom-build-day-trend"), OS_RATE_NAME)["y"] == pytest.approx([2 / 7])


def test_the_oss_line_without_any_run(upload, member_client, app):
    assert upload(day_payload(2, 5), query="device_id=D1").json()["status"] == "done"
    html = member_client.get(reverse("foom:app_foom", args=[app.pk])).content.decode()
    assert "No sessions yet" in html
    assert line(figure(html, "foom-build-trend"), OS_RATE_NAME)["y"] == pytest.approx([2 / 7])
