"""A scenario's runs page: each run of one build with its device, time, elapsed time, churn and
allocator calls per function (the uploads of test_churn_ingest, worked by hand there), reached
from the churn page's scenario names and run counts."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memdash.churn.models import Scenario
from memdash.core.models import Build
from tests.churn.test_churn_ingest import BUILD_1, BUILD_2, accepted
from tests.core.test_exports import csv_rows, page_rows

pytestmark = pytest.mark.django_db


@pytest.fixture
def open_scenario(upload, app) -> Scenario:
    accepted(upload(BUILD_1))
    accepted(upload(BUILD_2))
    return Scenario.objects.get(app=app, name="open")


def test_runs_of_a_scenario_in_a_build(member_client, app, open_scenario):
    first = Build.objects.get(app=app, version="1.0")
    url = reverse("churn:scenario_runs", args=[app.pk, open_scenario.pk])
    rows = page_rows(member_client, f"{url}?build={first.pk}", "scenario-runs")
    # Columns: run, device, OS, captured, elapsed, churn, calls, then calloc, free, malloc (each
    # calls, then bytes). r1: malloc 256 + free 256: churn 1·8 + 1·8 = 16, 2 calls;
    # r2: + calloc of 2 bytes (2·log2 2 = 2): 18, 3 calls; r3: + malloc of 0 bytes (costs 0):
    # 16, 3 calls, malloc 2 calls of 256 bytes in all
    assert [r[:7] for r in rows] == [
        ["r1", "iPhone13,2", "–", "2026-11-20 10:00 UTC", "100 ms", "16.0", "2"],
        ["r2", "iPhone13,2", "–", "2026-11-20 10:00 UTC", "140 ms", "18.0", "3"],
        ["r3", "iPhone13,2", "–", "2026-11-20 10:00 UTC", "90 ms", "16.0", "3"],
    ]
    assert [r[7:] for r in rows] == [
        ["–", "1 · 256 Bytes", "1 · 256 Bytes"],
        ["1 · 2 Bytes", "1 · 256 Bytes", "1 · 256 Bytes"],
        ["–", "1 · 256 Bytes", "2 · 256 Bytes"],
    ]
    # the CSV: the same runs, the figures as numbers, calls and bytes per function
    exported = csv_rows(member_client, url, build=str(first.pk))
    assert [r[0] for r in exported] == ["r1", "r2", "r3"]
    assert exported[1][4:] == ["140.0", "18.0", "3", "1", "2", "1", "256", "1", "256"]
    # without ?build=, the newest build that measured it: 1.1, two runs of churn 28
    newest = page_rows(member_client, url, "scenario-runs")
    assert [(r[0], r[5]) for r in newest] == [("r1", "28.0"), ("r2", "28.0")]


def test_churn_page_links_scenarios_to_their_runs(member_client, app, open_scenario):
    second = Build.objects.get(app=app, version="1.1")
    html = member_client.get(reverse("churn:app_churn", args=[app.pk])).content.decode()
    runs = reverse("churn:scenario_runs", args=[app.pk, open_scenario.pk])
    assert f'href="{runs}?build={second.pk}" title="its runs in 1.1 (11)">open</a>' in html
    assert f'<a href="{runs}?build={second.pk}">2</a>' in html  # its run count in the ranking
    # the scenario's builds: each build a link to its page, its run count to those runs
    first = Build.objects.get(app=app, version="1.0")
    assert f'<a href="{first.get_absolute_url()}" class="build-link">1.0 (10)</a>' in html
    assert f'<a href="{runs}?build={first.pk}" title="these runs">3</a>' in html


def test_unknown_scenario_or_another_apps_is_not_found(member_client, outsider_client, app):
    assert member_client.get(reverse("churn:scenario_runs", args=[app.pk, 999])).status_code == 404
    assert outsider_client.get(reverse("churn:scenario_runs", args=[app.pk, 1])).status_code == 404
