"""The OS's word on the pages and in the JSON: the per-build rates beside the heuristic's, the
disagreements per rule (Android, matched runs; iOS, counts per day), the CSV tables, the FOOM
pages' second line and card, the CI gate, and who may see them."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from memdash.core.writes import apps as core_services
from memdash.foom.logic.classify import RULE_NAMES
from tests.foom.helpers import ended, run, sessions_doc
from tests.foom.os_helpers import EXITS, android_sessions

pytestmark = pytest.mark.django_db
METRIC_PAYLOAD = json.loads(
    (Path(__file__).parents[1] / "data" / "metrickit" / "metric_payload.json").read_text()
)


@pytest.fixture
def android_world(upload, android, android_secret):
    assert upload(android_sessions(), secret=android_secret).json()["status"] == "done"
    response = upload(EXITS, secret=android_secret, query="build_version=8.0.4&build_number=104")
    assert response.json()["status"] == "done"
    return android


def test_the_api_answers_the_oss_rates_and_the_agreement(api_client, android_world):
    (row,) = api_client.get(f"/api/v1/apps/{android_world.pk}/foom/os").json()
    assert row["build"] == {"version": "8.0.4", "number": "104"}
    assert row["sources"] == ["exitinfo"]
    # foreground exits 4 (4242, 4100, 3800, 3700), memory kills 2 (4242 limiter, 3800)
    assert (row["foreground_exits"], row["foreground_memory"], row["memory_rate"]) == (4, 2, 0.5)
    assert (row["background_exits"], row["background_memory"], row["background_rate"]) == (
        1,
        1,
        1.0,
    )
    # the heuristic: FOOMs run-3800 (rule 1) and run-4100 (rule 15) of 4 classified foreground
    # ends (run-3700, 3800, 4100, 4242): 2 / 4
    assert row["heuristic_foom_rate"] == 0.5
    assert row["memory_rate_low"] < 0.5 < row["memory_rate_high"]
    agreement = row["agreement"]
    assert agreement["basis"] == "matched runs"
    rules = {r["rule"]: r for r in agreement["rules"]}
    assert rules[15]["false_fooms"] == 1 and rules[15]["other_verdicts"] == {"hang": 1}
    assert rules[2]["missed"] == 1 and rules[2]["rule_name"] == RULE_NAMES[2]


def test_the_page_shows_both_and_where_they_disagree(member_client, android_world):
    page = member_client.get(reverse("foom:os_exits", args=[android_world.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Android ApplicationExitInfo" in html
    assert "50.00%" in html  # the OS rate, and the heuristic's
    assert "false FOOMs 1 of 2 (50.0%)" in html
    assert "missed 1 of 2 OS memory kills" in html
    assert "hang (watchdog, ANR) 1" in html
    assert "os-killed-pss" in html  # the memory of the processes killed for memory
    assert "os-peak-memory" not in html  # no MetricKit here


def test_the_tables_as_csv(member_client, android_world):
    url = reverse("foom:os_exits", args=[android_world.pk])
    builds = b"".join(member_client.get(url, {"format": "csv"}).streaming_content).decode()
    header, line = builds.strip().splitlines()
    assert header.startswith("build_version,build_number,sources,heuristic_foom_rate")
    assert line.startswith("8.0.4,104,exitinfo,0.5,4,2,0.5,")
    text = b"".join(
        member_client.get(url, {"format": "csv", "table": "agreement"}).streaming_content
    ).decode()
    rows = {row["rule"]: row for row in csv.DictReader(StringIO(text))}
    assert rows["15"] == {
        "build_version": "8.0.4", "build_number": "104", "basis": "matched runs", "rule": "15",
        "rule_name": RULE_NAMES[15], "compared": "1", "fooms": "1", "false_fooms": "1",
        "os_said_instead": "hang (watchdog, ANR) 1", "missed_memory_kills": "0",
    }  # fmt: skip
    assert rows["2"]["missed_memory_kills"] == "1"
    assert member_client.get(url, {"format": "csv", "table": "nope"}).status_code == 404


def test_the_foom_pages_show_the_oss_line_and_card(member_client, android_world):
    app = android_world
    html = member_client.get(reverse("foom:app_foom", args=[app.pk])).content.decode()
    assert "OS memory kill rate" in html  # the second line of the trend chart
    assert reverse("foom:os_exits", args=[app.pk]) in html
    build = app.builds.get(version="8.0.4")
    card = member_client.get(reverse("foom:build_foom", args=[app.pk, build.pk])).content.decode()
    assert 'id="foom-os-card"' in card
    assert "2 of 4 foreground exits" in card


def test_outsiders_see_nothing(outsider_client, android_world):
    assert outsider_client.get(reverse("foom:os_exits", args=[android_world.pk])).status_code == 404
    assert outsider_client.get(f"/api/v1/apps/{android_world.pk}/foom/os").status_code in (403, 404)


def test_without_the_oss_word_the_page_says_how_to_send_it(member_client, app):
    html = member_client.get(reverse("foom:os_exits", args=[app.pk])).content.decode()
    assert "Nothing from the OS yet" in html


def test_metrickit_counts_against_the_runs_of_the_day(upload, api_client, app):
    at = datetime(2026, 10, 23, 10, 0, tzinfo=UTC)
    later = datetime(2026, 10, 23, 12, 0, tzinfo=UTC)
    build = ("8.0.4", "104")
    runs = []
    for device in ("D1", "D2", "D3"):  # three FOOMs (rule 15), each with its next launch
        runs += [
            run(f"f-{device}", at, device, build, ended()),
            run(f"n-{device}", later, device, build),
        ]
    assert upload(sessions_doc(*runs)).json()["status"] == "done"
    assert upload(METRIC_PAYLOAD).json()["status"] == "done"  # the 23rd: 2 memory-limit kills
    (row,) = api_client.get(f"/api/v1/apps/{app.pk}/foom/os").json()
    # the payload names no device: every run of the day is compared, a bound
    assert row["agreement"]["basis"] == "counts per day, all runs (a bound)"
    assert (row["agreement"]["bound"], row["agreement"]["bound_days"]) == (True, 1)
    (rule15,) = row["agreement"]["rules"]
    # 3 FOOMs, 2 memory kills on the same day: at least 3 − 2 = 1 false FOOM, none missed
    assert (rule15["rule"], rule15["fooms"], rule15["false_fooms"], rule15["missed"]) == (
        15,
        3,
        1,
        0,
    )
    assert row["heuristic_foom_rate"] == 1.0  # 3 FOOMs of 3 classified foreground ends
    assert row["memory_rate"] == pytest.approx(2 / 9)  # 2 memory kills of 9 foreground exits


def test_the_oss_word_is_in_words(member_client, upload, app):
    """The class table names what the OS said as the page words it elsewhere, not its key."""
    at = datetime(2026, 10, 23, 10, 0, tzinfo=UTC)
    runs = [run("f-D1", at, "D1", ("8.0.4", "104"), ended())]
    assert upload(sessions_doc(*runs)).json()["status"] == "done"
    assert upload(METRIC_PAYLOAD).json()["status"] == "done"
    html = member_client.get(f"/apps/{app.pk}/foom/os/").content.decode()
    table = html[html.index('<table class="os-classes">') :].split("</table>")[0]
    assert "<td>memory kill (foreground)</td>" in table
    assert "<td>memory</td>" not in table and "background_memory" not in table


def day(version: str, number: str, memory: int, normal: int, when: str) -> dict:
    doc = json.loads(json.dumps(METRIC_PAYLOAD))
    doc["appVersion"], doc["metaData"]["appBuildVersion"] = version, number
    doc["timeStampBegin"], doc["timeStampEnd"] = (
        f"{when} 00:00:00 +0000",
        f"{when} 23:59:00 +0000",
    )
    doc["applicationExitMetrics"]["foregroundExitData"] = {
        "cumulativeMemoryResourceLimitExitCount": memory,
        "cumulativeNormalAppExitCount": normal,
    }
    return doc


@pytest.fixture
def two_builds(upload):
    # base: 1 memory kill in 100 foreground exits; target: 10 in 100 (see test_exits: the
    # target's 95% interval 5.52% … 17.44% lies above the base's 0.18% … 5.45%)
    assert upload(day("8.0.3", "103", 1, 99, "2026-10-16")).json()["status"] == "done"
    assert upload(day("8.0.4", "104", 10, 90, "2026-10-23")).json()["status"] == "done"


def test_the_ci_gate_on_the_os_rate(app, two_builds):

    def check(limit: str) -> tuple[int, str]:
        out = StringIO()
        try:
            call_command(
                "memdash_check", "--app", str(app.pk), "--base", "8.0.3:103", "--target",
                "8.0.4:104", "--max-os-foom-rate", limit, stdout=out,
            )  # fmt: skip
        except SystemExit as exit_:
            return int(exit_.code), out.getvalue()
        return 0, out.getvalue()

    status, text = check("band")
    assert status == 1
    assert "1.00% (95%: 0.18% – 5.45%; 1 of 100) -> 10.00% (95%: 5.52% – 17.44%; 10 of 100)" in text
    assert "FAIL OS-reported foreground memory-kill rate" in text
    status, text = check("12%")
    assert status == 0 and "result: PASS" in text  # 10% is under a 12% ceiling
    assert check("5%")[0] == 1


def test_the_http_gate_on_the_os_rate(api_client, app, two_builds):
    url = f"/api/v1/apps/{app.pk}/compare"
    builds = {"base": "8.0.3:103", "target": "8.0.4:104"}
    body = api_client.get(url, {**builds, "max_os_foom_rate": "band"}).json()
    assert body["pass"] is False  # no snapshot grew: only the OS's rate fails it
    assert body["failures"] == [] and body["max_os_foom_rate"] == "band"
    os_rate = body["os_foom_rate"]
    assert os_rate["target"]["memory_kills"] == 10 and os_rate["target"]["foreground_exits"] == 100
    assert os_rate["base"]["rate"] == pytest.approx(0.01)
    assert os_rate["target"]["low"] == pytest.approx(0.05523, abs=1e-5)  # above 0.05449
    assert os_rate["base"]["high"] == pytest.approx(0.05449, abs=1e-5)
    assert os_rate["judged"] is True and "beyond both intervals" in os_rate["failure"]
    ceiling = api_client.get(url, {**builds, "max_os_foom_rate": "12%"}).json()
    assert ceiling["pass"] is True and ceiling["os_foom_rate"]["failure"] is None  # 10% ≤ 12%
    assert api_client.get(url, {**builds, "max_os_foom_rate": "5%"}).json()["pass"] is False
    without = api_client.get(url, builds).json()
    assert without["pass"] is True and "os_foom_rate" not in without
    fall = api_client.get(
        url, {"base": "8.0.4:104", "target": "8.0.3:103", "max_os_foom_rate": "band"}
    ).json()
    assert fall["pass"] is True  # 10% -> 1%
    # a build the OS said nothing of: not judged, and not failed on
    core_services.get_or_create_build(app, "8.0.5", "105")
    silent = api_client.get(url, {**builds, "target": "8.0.5:105", "max_os_foom_rate": "band"})
    assert silent.json()["pass"] is True
    assert silent.json()["os_foom_rate"] == {
        "base": silent.json()["os_foom_rate"]["base"], "target": None, "judged": False,
        "failure": None,
    }  # fmt: skip
    bad = api_client.get(url, {**builds, "max_os_foom_rate": "lots"})
    assert bad.status_code == 400
    assert "'band' or a percentage" in bad.json()["fields"]["max_os_foom_rate"]
