"""Sessions through the upload API: storing, re-uploads, classification, late uploads, counts."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from memdash.foom.logic.classify import RULES_VERSION
from memdash.foom.models import BuildDayFoomStats, BuildFoomStats, Session
from memdash.foom.writes.sessions import classify_expired_sessions
from tests.foom.helpers import ago, ended, run, sessions_doc

pytestmark = pytest.mark.django_db


def accepted(response) -> dict:
    body = response.json()
    assert response.status_code == 202, body
    assert body["status"] == "done", body
    assert body["format"] == "memdash.sessions"
    return body


def stored(sid: str) -> tuple:
    s = Session.objects.get(session_id=sid)
    return s.classification, s.rule


def stats(version: str = "8.0.51") -> BuildFoomStats:
    return BuildFoomStats.objects.get(build__version=version)


def test_an_upload_stores_and_classifies(upload, app):
    t = ago(days=2)
    body = accepted(
        upload(
            sessions_doc(
                run("r1", t, end=ended(memory_warnings=4, footprint_bytes=1_500_000_000)),
                run("r2", ago(days=1)),  # the next launch: its own end is not known yet
            )
        )
    )
    assert body["counts"] == {
        "sessions": 2,
        "created": 2,
        "updated": 0,
        "unchanged": 0,
        "reclassified": 1,
    }
    assert body["sessions"]["url"].endswith(f"/apps/{app.pk}/foom/")
    # r1 has a successor with the same build, OS and boot, ended in the foreground: rule 15
    assert stored("r1") == ("foom", 15)
    assert stored("r2") == ("pending", None)
    r1 = Session.objects.get(session_id="r1")
    assert r1.rules_version == RULES_VERSION
    assert r1.classified_at is not None
    assert (r1.memory_warnings, r1.footprint_bytes, r1.device.model) == (
        4,
        1_500_000_000,
        "iPhone14,5",
    )
    counts = stats()
    assert (counts.sessions, counts.classified, counts.rate_sessions, counts.foom) == (2, 1, 1, 1)
    assert counts.classes == {"foom": 1, "pending": 1}


def test_re_upload_updates_and_counts_nothing_twice(upload):
    t1, t2 = ago(days=2), ago(days=1)
    # launch of r1: the monitor sends its start
    accepted(upload(sessions_doc(run("r1", t1))))
    assert stored("r1") == ("pending", None)
    # next launch: r1's end arrives with r2's start
    body = accepted(
        upload(sessions_doc(run("r1", t1, end=ended(state="background")), run("r2", t2)))
    )
    assert (body["counts"]["created"], body["counts"]["updated"]) == (1, 1)
    assert Session.objects.count() == 2
    assert stored("r1") == ("background_oom", 12)
    counts = stats()
    # 2 runs, 1 classified (r1), none ended in the foreground
    assert (counts.sessions, counts.classified, counts.rate_sessions, counts.foom) == (2, 1, 0, 0)
    # a later copy of r1 without its end does not erase the end, and changes nothing
    body = accepted(upload(sessions_doc(run("r2", t2), run("r1", t1))))
    assert body["counts"]["unchanged"] == 2
    assert stored("r1") == ("background_oom", 12)
    assert Session.objects.get(session_id="r1").end_state == "background"
    assert stats().sessions == 2


def test_a_late_upload_changes_a_class(upload):
    accepted(
        upload(
            sessions_doc(
                run("a", ago(days=3), end=ended()),
                run("c", ago(days=1)),
            )
        )
    )
    assert stored("a") == ("foom", 15)
    assert stats().foom == 1
    # A run between them arrives late, on another OS: the OS was updated after `a`.
    accepted(upload(sessions_doc(run("b", ago(days=2), os="17.5", end=ended(user_quit=True)))))
    assert stored("a") == ("os_upgrade", 8)
    assert stored("b") == ("user_quit", 5)  # its successor `c` is on 17.4.1 again, rule 5 first
    counts = stats()
    # 3 runs; a and b classified and ended in the foreground; no FOOM left
    assert (counts.sessions, counts.classified, counts.rate_sessions, counts.foom) == (3, 2, 2, 0)
    assert counts.classes == {"user_quit": 1, "os_upgrade": 1, "pending": 1}


def test_a_run_past_its_grace_period_is_classified_then_corrected_by_its_successor(upload):
    old = ago(days=30)
    accepted(upload(sessions_doc(run("old", old, end=ended()))))
    # no successor, end known, 30 days old: classified by itself
    assert stored("old") == ("foom", 15)
    assert stats().foom == 1
    # the device comes back with the next build
    accepted(upload(sessions_doc(run("new", ago(days=1), build=("8.0.52", "2742")))))
    assert stored("old") == ("app_upgrade", 7)
    assert stats("8.0.51").foom == 0
    assert stats("8.0.52").sessions == 1


def test_a_recent_run_without_successor_waits(upload):
    accepted(upload(sessions_doc(run("fresh", ago(days=1), end=ended()))))
    assert stored("fresh") == ("pending", None)


def test_the_grace_sweep_classifies_runs_that_became_old(upload, app):
    accepted(upload(sessions_doc(run("quiet", ago(days=1), end=ended(crashed=True)))))
    assert stored("quiet") == ("pending", None)
    # eight days later nobody launched the app again on that device
    changed = classify_expired_sessions(app, now=ago(days=-8))
    assert len(changed) == 1
    assert stored("quiet") == ("crash", 3)
    assert stats().classes == {"crash": 1}


def test_a_run_that_moves_gives_its_old_predecessor_a_new_successor(upload):
    # a, b, c on one device; b is later re-sent with a corrected start after c
    accepted(
        upload(
            sessions_doc(
                run("a", ago(days=4), end=ended()),
                run("b", ago(days=3), end=ended(crashed=True)),
                run("c", ago(days=2), os="17.5", end=ended(state="background")),
            )
        )
    )
    assert stored("a") == ("foom", 15)  # its successor b looks the same
    accepted(upload(sessions_doc(run("b", ago(days=1), end=ended(crashed=True)))))
    # a's successor is now c, on another OS
    assert stored("a") == ("os_upgrade", 8)
    # c's successor is now b, on the old OS: c is classified against it (rule 8 too)
    assert stored("c") == ("os_upgrade", 8)
    assert stored("b") == ("pending", None)  # the newest run, one day old


def test_sessions_of_other_devices_are_not_successors(upload):
    accepted(
        upload(
            sessions_doc(
                run("x1", ago(days=3), device="X", end=ended()),
                run("y1", ago(days=2), device="Y", build=("9.0", "1")),
            )
        )
    )
    assert stored("x1") == ("pending", None)


def test_rates_worked_by_hand(upload, api_client, app):
    # Build 8.0.51 on four devices; every run but the newest of its device has a successor
    # with the same build, OS and boot time, so the run's own end decides:
    #   D1: foom (15), user_quit (5), pending      D2: foom (15), crash (3), pending
    #   D3: background_oom (12), exit (6), pending
    #   D4: excluded (10, debugger), user_quit (5), excluded (14, active 10 ms), pending
    runs = []

    def device_runs(device: str, ends: list[dict | None]) -> None:
        for i, end in enumerate(ends):
            runs.append(run(f"{device}-{i}", ago(days=5 - i), device=device, end=end))

    device_runs("D1", [ended(), ended(user_quit=True), None])
    device_runs("D2", [ended(), ended(crashed=True), None])
    device_runs("D3", [ended(state="background"), ended(exit_called=True), None])
    device_runs("D4", [ended(debugger=True), ended(user_quit=True), ended(active_for_ms=10), None])
    accepted(upload(sessions_doc(*runs)))
    # sessions: 3 + 3 + 3 + 4 = 13
    # pending: the last run of each device = 4; excluded: D4-0 (rule 10), D4-2 (rule 14) = 2
    # classified = 13 - 4 - 2 = 7 (foom 2, user_quit 2, crash 1, background_oom 1, exit 1)
    # ended in the foreground among the classified: all but D3-0 (background) = 6
    # FOOM rate per session = 2 / 6 = 0.3333
    #   Wilson, n = 6: z²/n = 3.8414588/6 = 0.6402431; 1 + z²/n = 1.6402431
    #   centre = (1/3 + 3.8414588/12) / 1.6402431 = (0.3333333 + 0.3201216) / 1.6402431 = 0.3983890
    #   half = (1.9599640 / 1.6402431) · sqrt((1/3)(2/3)/6 + 3.8414588/144)
    #        = 1.1949228 · sqrt(0.0370370 + 0.0266768) = 1.1949228 · 0.2524160 = 0.3016176
    #   -> (0.0967714, 0.7000067)
    # devices with a classified run: D1, D2, D3, D4 = 4; with a FOOM: D1, D2 = 2
    # FOOM rate per user = 2 / 4 = 0.5
    #   Wilson, n = 4: z²/n = 0.9603647; 1 + z²/n = 1.9603647
    #   centre = (0.5 + 0.4801824) / 1.9603647 = 0.5
    #   half = (1.9599640 / 1.9603647) · sqrt(0.25/4 + 3.8414588/64)
    #        = 0.9997956 · sqrt(0.0625 + 0.0600228) = 0.9997956 · 0.3500326 = 0.3499611
    #   -> (0.1500389, 0.8499611)
    response = api_client.get(f"/api/v1/apps/{app.pk}/foom")
    assert response.status_code == 200
    (build,) = response.json()
    assert build["build"] == {"version": "8.0.51", "number": "2741"}
    assert build["sessions"] == 13
    assert build["classified"] == 7
    assert build["rate_sessions"] == 6
    assert build["foom"] == 2
    assert build["foom_rate"] == pytest.approx(2 / 6)
    assert build["foom_rate_low"] == pytest.approx(0.0967714, abs=1e-6)
    assert build["foom_rate_high"] == pytest.approx(0.7000067, abs=1e-6)
    assert build["devices"] == 4
    assert build["foom_devices"] == 2
    assert build["user_rate"] == pytest.approx(0.5)
    assert build["user_rate_low"] == pytest.approx(0.1500389, abs=1e-6)
    assert build["user_rate_high"] == pytest.approx(0.8499611, abs=1e-6)
    assert build["classes"] == {
        "foom": 2,
        "background_oom": 1,
        "crash": 1,
        "user_quit": 2,
        "exit": 1,
        "excluded": 2,
        "pending": 4,
    }


def test_day_counts_add_up_to_the_build(upload):
    accepted(
        upload(
            sessions_doc(
                run("d1", ago(days=3), end=ended()),
                run("d2", ago(days=2), end=ended()),
                run("d3", ago(days=1)),
            )
        )
    )
    days = BuildDayFoomStats.objects.order_by("day")
    assert [d.sessions for d in days] == [1, 1, 1]
    assert sum(d.foom for d in days) == stats().foom == 2


def test_thousands_of_sessions_in_one_upload_use_bulk_statements(
    upload, django_assert_max_num_queries
):
    # 300 devices x 10 runs, alternately a FOOM and a user quit, newest run pending
    runs = []
    for device in range(300):
        for i in range(10):
            end = None if i == 9 else ended(user_quit=(i % 2 == 1))
            runs.append(run(f"s{device}-{i}", ago(days=9 - i), device=f"dev{device}", end=end))
    # the number of statements does not grow with the runs (row by row would be > 3000)
    with django_assert_max_num_queries(80):
        body = accepted(upload(sessions_doc(*runs)))
    assert body["counts"]["created"] == 3000
    counts = stats()
    # per device: runs 0..8 classified; i even (0,2,4,6,8) FOOM = 5, odd (1,3,5,7) quit = 4
    assert (counts.sessions, counts.classified, counts.foom) == (3000, 2700, 1500)
    assert (counts.classified_devices, counts.foom_devices) == (300, 300)


def test_reclassify_command_rewrites_results_of_older_rules(upload, app, capsys):
    accepted(upload(sessions_doc(run("a", ago(days=3), end=ended()), run("b", ago(days=2)))))
    # as if an older version of the rules had said "crash"
    Session.objects.filter(session_id="a").update(
        classification="crash", rule=3, rules_version="foom-2026.01"
    )
    BuildFoomStats.objects.all().delete()
    call_command("reclassify_sessions", "--app", str(app.pk))
    a = Session.objects.get(session_id="a")
    assert (a.classification, a.rule, a.rules_version) == ("foom", 15, RULES_VERSION)
    assert stats().foom == 1  # the counts are rebuilt too
    out = capsys.readouterr().out
    assert "2 sessions" in out and "crash -> foom: 1" in out


def test_a_bad_value_refuses_the_whole_upload(upload):
    bad = run("r2", ago(days=1), end=ended(memory_warnings="many"))
    response = upload(sessions_doc(run("r1", ago(days=2), end=ended()), bad))
    assert response.status_code == 400
    body = response.json()
    assert body["path"] == "sessions[1].end.memory_warnings"
    assert Session.objects.count() == 0


def test_another_apps_sessions_are_refused(upload):
    doc = sessions_doc(run("r1", ago(days=1)))
    doc["app"] = {"id": "com.example.other", "platform": "ios"}
    response = upload(doc)
    assert response.status_code == 403
    assert Session.objects.count() == 0
