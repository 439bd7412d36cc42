"""memdash.churn through the upload API, the selectors' numbers worked by hand, the CI selector,
the page and the JSON endpoint with their access control."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from memdash.churn.models import ChurnRun, ChurnSettings, Scenario, ScenarioFunction, ScenarioRun
from memdash.churn.reads import churn_regressions, flagged_builds, scenario_series
from memdash.core.logic.charts import byte_scale, count_scale
from memdash.core.models import Build

pytestmark = pytest.mark.django_db

IDLE = {"malloc": {"count": 4, "bytes": 64, "log2_bytes": 16.0}}  # 1 · 16 = 16 in every run


def doc(version: str, runs: list[tuple[str, list, float]], device: str = "ci-1") -> dict:
    return {
        "format": "memdash.churn",
        "version": 1,
        "app": {"id": "com.example.chat", "platform": "ios"},
        "build": {"version": version, "number": version.replace(".", "")},
        "device": {"id": device, "model": "iPhone13,2"},
        "captured_at": "2026-11-20T10:00:00+00:00",
        "runs": [
            {
                "id": run_id,
                "scenarios": [
                    {
                        "name": "open",
                        "thread": "main",
                        "start_marker": "open.begin",
                        "end_marker": "open.end",
                        "elapsed_ms": elapsed,
                        "calls": calls,
                    },
                    {"name": "idle", "elapsed_ms": 10 + i, "functions": IDLE},
                ],
            }
            for i, (run_id, calls, elapsed) in enumerate(runs)
        ],
    }


BASE = [("malloc", 256), ("free", 256)]  # 1 · 8 + 1 · 8 = 16
BUILD_1 = doc(
    "1.0",
    [
        ("r1", [*BASE], 100.0),  # 16
        ("r2", [*BASE, ("calloc", 2)], 140.0),  # 16 + 2 · 1 = 18
        ("r3", [*BASE, ("malloc", 0)], 90.0),  # 16 + 0 = 16
    ],
)
BUILD_2 = doc(
    "1.1",
    [
        ("r1", [*BASE, ("realloc", 16)], 95.0),  # 16 + 3 · 4 = 28
        ("r2", [*BASE, ("realloc", 16), ("malloc", 1)], 105.0),  # 28 + 0 = 28
    ],
)


def accepted(response) -> dict:
    body = response.json()
    assert response.status_code == 202, body
    assert body["status"] == "done", body
    assert body["format"] == "memdash.churn"
    return body


@pytest.fixture
def two_builds(upload):
    accepted(upload(BUILD_1))
    accepted(upload(BUILD_2))


def test_upload_stores_runs_and_function_sums(upload, app):
    body = accepted(upload(BUILD_1))
    assert body["counts"] == {"runs": 3, "scenario_runs": 6, "replaced_runs": 0, "new_scenarios": 2}
    assert ChurnRun.objects.filter(app=app).count() == 3
    run = ScenarioRun.objects.get(run__run_id="r2", scenario__name="open")
    assert (run.calls, run.sent_calls, run.elapsed_ms, run.thread) == (3, True, 140.0, "main")
    sums = {f.function: (f.count, f.bytes, f.log2_bytes) for f in run.functions.all()}
    assert sums == {"calloc": (1, 2, 1.0), "free": (1, 256, 8.0), "malloc": (1, 256, 8.0)}
    assert body["churn"]["url"].endswith(f"/apps/{app.pk}/churn/?build={run.build_id}")


def test_resending_a_run_replaces_it(upload, app):
    accepted(upload(BUILD_1))
    again = doc("1.0", [("r1", [*BASE, ("realloc", 16)], 100.0)])
    body = accepted(upload(again))
    assert body["counts"]["replaced_runs"] == 1
    assert ChurnRun.objects.filter(app=app).count() == 3  # r1 replaced, r2 and r3 kept
    assert ScenarioRun.objects.get(run__run_id="r1", scenario__name="open").calls == 3


def test_series_by_hand(two_builds, app):
    series = {s.scenario.name: s for s in scenario_series(app)}
    first, second = series["open"].builds
    # 1.0: churn 16, 18, 16 -> median 16, range 16..18; elapsed 100, 140, 90 -> median 100
    assert (first.churn.median, first.churn.low, first.churn.high) == (16, 16, 18)
    assert (first.elapsed.median, first.elapsed.runs) == (100, 3)
    # cv churn: mean 50/3, deviations -2/3, 4/3, -2/3; variance (4/9 + 16/9 + 4/9) / 2 = 4/3
    assert first.churn.cv == pytest.approx((4 / 3) ** 0.5 / (50 / 3))
    # 1.1: 28 and 28 -> median 28; change (28 - 16) / 16 = +75 % > 10 %
    assert second.churn.median == 28 and second.churn.cv == 0
    assert second.change.change_percent == pytest.approx(75)
    assert second.change.regressed and second.previous_build.version == "1.0"
    assert not first.change.regressed and first.change.previous is None
    idle = series["idle"].builds[1]
    assert idle.churn.median == 16 and idle.change.change_percent == 0
    (flagged,) = flagged_builds(scenario_series(app))
    assert flagged[0].version == "1.1" and [c.scenario for c in flagged[1]] == ["open"]


def test_churn_regressions_for_the_gate(two_builds, app):
    base, target = Build.objects.get(version="1.0"), Build.objects.get(version="1.1")
    (regression,) = churn_regressions(app, base, target, 10.0)
    assert (regression.scenario, regression.previous, regression.current) == ("open", 16, 28)
    assert regression.change_percent == pytest.approx(75)
    assert churn_regressions(app, base, target, 80.0) == []  # +75 % is not past 80 %
    assert churn_regressions(app, target, base, 10.0) == []  # going down is no regression
    ChurnSettings.objects.create(app=app, threshold_percent=80.0)
    assert churn_regressions(app, base, target) == []  # the app's own threshold


def test_edited_weights_reprice_every_build(two_builds, app):
    ChurnSettings.objects.create(app=app, weights={"realloc": 0})
    second = {s.scenario.name: s for s in scenario_series(app)}["open"].builds[1]
    assert second.churn.median == 16  # realloc no longer costs: 16 + 0
    base, target = Build.objects.get(version="1.0"), Build.objects.get(version="1.1")
    assert churn_regressions(app, base, target, 10.0) == []


def test_build_from_the_upload_fields(upload, app):
    without_build = {k: v for k, v in BUILD_1.items() if k != "build"}
    accepted(upload(without_build, query="build_version=2.0&build_number=200"))
    assert ChurnRun.objects.filter(build__version="2.0", build__number="200").count() == 3


def test_bad_document_is_refused_with_its_path_and_nothing_stored(upload, app):
    bad = doc("1.0", [("r1", [*BASE, ("malloc", -1)], 100.0)])
    response = upload(bad)
    body = response.json()
    assert response.status_code == 400, body
    assert body["path"] == "runs[0].scenarios[0].calls[2][1]"
    assert not ChurnRun.objects.exists() and not Scenario.objects.exists()
    assert not ScenarioFunction.objects.exists()


def test_no_build_at_all_is_refused(upload):
    response = upload({k: v for k, v in BUILD_1.items() if k != "build"})
    assert response.status_code == 400
    assert response.json()["path"] == "build.version"


def test_another_apps_document_is_refused(upload):
    other = {**BUILD_1, "app": {"id": "com.example.other", "platform": "ios"}}
    response = upload(other)
    assert response.status_code == 403
    assert not ChurnRun.objects.exists()


def test_page_for_members_only(two_builds, app, member_client, outsider_client):
    response = member_client.get(f"/apps/{app.pk}/churn/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "+75.0 %" in page and "regressed" in page
    assert 'id="churn-' in page  # a chart per scenario
    assert outsider_client.get(f"/apps/{app.pk}/churn/").status_code == 404
    anonymous = Client().get(f"/apps/{app.pk}/churn/")
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]


def test_page_escapes_scenario_names(upload, app, member_client):
    hostile = doc("1.0", [("r1", BASE, 1.0)])
    hostile["runs"][0]["scenarios"][0]["name"] = "<script>alert(1)</script>"
    accepted(upload(hostile))
    page = member_client.get(f"/apps/{app.pk}/churn/").content.decode()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_empty_page(app, member_client):
    response = member_client.get(f"/apps/{app.pk}/churn/")
    assert response.status_code == 200
    assert "No churn measured yet" in response.content.decode()


def test_json_endpoint(two_builds, app, api_client, outsider):
    response = api_client.get(f"/api/v1/apps/{app.pk}/churn")
    assert response.status_code == 200
    data = response.json()
    assert data["threshold_percent"] == 10.0
    assert data["weights"] == {"calloc": 2.0, "free": 1.0, "malloc": 1.0, "realloc": 3.0}
    open_chat = next(s for s in data["scenarios"] if s["name"] == "open")
    assert [b["churn"]["median"] for b in open_chat["builds"]] == [16, 28]
    assert open_chat["builds"][1]["regressed"] is True
    assert open_chat["builds"][1]["previous_build"]["version"] == "1.0"
    assert [f["build"]["version"] for f in data["flagged_builds"]] == ["1.1"]
    stranger = APIClient()
    stranger.force_authenticate(outsider)
    assert stranger.get(f"/api/v1/apps/{app.pk}/churn").status_code == 404
    assert APIClient().get(f"/api/v1/apps/{app.pk}/churn").status_code in (401, 403)


def test_an_elapsed_time_past_every_axis_step_still_draws(upload, app, member_client):
    """A device may send any finite number: 10^20 ms is accepted, and the page and its chart cope
    (it answered 500 for every member when no axis step covered it)."""
    assert upload(doc("9.9", [("r1", [*BASE], 1e20)])).status_code == 202
    response = member_client.get(f"/apps/{app.pk}/churn/")
    assert response.status_code == 200


def test_axis_steps_go_on_past_the_table():
    # 10^20 needs a step of at least 10^20 / 6 intervals; COUNT_STEPS end at 5 · 10^18, whose
    # ratio to the step before (2.5 · 10^18) is 2: 10^19, then 2 · 10^19 covers 10^20 in 5.
    scale = count_scale([1e20])
    assert (scale.step, scale.first, scale.last) == (2 * 10**19, 0, 5)
    # 2^70 bytes: BINARY_STEPS end at 2^62; ×2 until 2^70 / step <= 6 → step 2^68 (4 intervals).
    scale = byte_scale([2.0**70])
    assert (scale.step, scale.first, scale.last) == (2**68, 0, 4)
