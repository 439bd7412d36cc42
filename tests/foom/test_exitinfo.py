"""Android ApplicationExitInfo through the upload API: stored with the OS's verdict, matched to
the runs they ended whichever arrives first, compared with the heuristic per rule; bad records
refused with their path and nothing stored."""

from __future__ import annotations

import copy
import json
from datetime import date

import pytest
from django.core.management import CommandError, call_command

from memdash.core.writes import apps as core_services
from memdash.foom.models import OsExitDayStats, ProcessExit, Session
from memdash.foom.reads.exits import agreement_by_build, os_counts_by_build
from memdash.ingest.models import Upload
from tests.foom.os_helpers import EXITS, android_sessions

pytestmark = pytest.mark.django_db
BUILD = "build_version=8.0.4&build_number=104"


def done(response, fmt: str = "android.exitinfo") -> dict:
    body = response.json()
    assert response.status_code == 202, body
    assert body["status"] == "done", body
    assert body["format"] == fmt
    return body


def refused(response, status: int = 400) -> dict:
    body = response.json()
    assert response.status_code == status, body
    assert ProcessExit.objects.count() == 0
    assert OsExitDayStats.objects.count() == 0
    return body


def test_exits_are_stored_with_the_oss_verdict(upload, android_secret):
    body = done(upload(EXITS, secret=android_secret, query=BUILD))
    assert body["counts"] == {"exits": 5, "created": 5, "unchanged": 0, "matched": 0}
    assert body["unread"] == ["[*].traceFile"]
    verdicts = dict(ProcessExit.objects.values_list("pid", "verdict"))
    assert verdicts == {
        4242: "memory",  # REASON_OTHER with MemoryLimiter:AnonSwap, importance 100
        4100: "hang",  # REASON_ANR
        3900: "background_memory",  # REASON_LOW_MEMORY, importance 400 (cached)
        3800: "memory",  # REASON_LOW_MEMORY, importance 100
        3700: "normal",  # REASON_USER_REQUESTED
    }
    limiter = ProcessExit.objects.get(pid=4242)
    assert (limiter.reason, limiter.pss_kb, limiter.day) == ("other", 812345, date(2026, 10, 23))
    day = OsExitDayStats.objects.get()
    # foreground: 4242, 4100, 3800, 3700 = 4 exits, of which 4242 and 3800 memory kills
    assert (day.source, day.foreground_exits, day.foreground_memory) == ("exitinfo", 4, 2)
    assert (day.background_exits, day.background_memory) == (1, 1)  # 3900
    assert day.reasons["foreground"] == {"other": 1, "anr": 1, "low_memory": 1, "user_requested": 1}
    (counts,) = os_counts_by_build(limiter.app).values()
    assert counts.memory_rate.rate == 0.5  # 2 of 4


def expected_agreement(app) -> None:
    (build,) = agreement_by_build(app)
    assert build.basis == "matched runs"
    rows = {r.rule: r for r in build.rules}
    assert sorted(rows) == [1, 2, 5, 12, 15]
    # rule 15 called run-4100 a FOOM; the OS says ANR: a false FOOM
    assert (rows[15].fooms, rows[15].false_fooms, rows[15].other_verdicts) == (1, 1, {"hang": 1})
    # rule 2 called run-4242 os_kill; the OS says the memory limiter killed it: missed
    assert (rows[2].fooms, rows[2].missed, rows[2].os_memory) == (0, 1, 1)
    assert (rows[1].fooms, rows[1].os_memory, rows[1].false_fooms) == (1, 1, 0)  # agreed
    assert (rows[5].compared, rows[12].compared) == (1, 1)
    # over the build: 1 false FOOM of 2 FOOMs, 1 missed of 2 OS memory kills
    assert (build.false_fooms, build.fooms, build.missed, build.os_memory) == (1, 2, 1, 2)


def test_exits_after_their_runs_are_matched_by_pid_and_time(upload, android, android_secret):
    done(upload(android_sessions(), secret=android_secret), fmt="memdash.sessions")
    assert Session.objects.get(session_id="run-4242").pid == 4242
    body = done(upload(EXITS, secret=android_secret, query=BUILD))
    assert body["counts"]["matched"] == 5  # four by pid and time, run-3700 by its id
    # Each side read alone: an outer join of two distributed tables by the session's id is
    # refused on Citus (CONTRIBUTING.md, "Queries that work on Citus").
    runs = dict(Session.objects.values_list("pk", "session_id"))
    matched = {pid: runs.get(run) for pid, run in ProcessExit.objects.values_list("pid", "session")}
    assert matched == {
        4242: "run-4242", 4100: "run-4100", 3900: "run-3900", 3800: "run-3800", 3700: "run-3700",
    }  # fmt: skip
    expected_agreement(android)


def test_runs_after_their_exits_are_matched_too(upload, android, android_secret):
    # the exits come first, under the build the upload names (8.0.3): unmatched
    done(upload(EXITS, secret=android_secret, query="build_version=8.0.3&build_number=103"))
    assert set(OsExitDayStats.objects.values_list("build__version", flat=True)) == {"8.0.3"}
    done(upload(android_sessions(), secret=android_secret), fmt="memdash.sessions")
    # each exit found its run and moved to the run's build; 8.0.3 has nothing left
    assert ProcessExit.objects.filter(session__isnull=True).count() == 0
    assert set(ProcessExit.objects.values_list("build__version", flat=True)) == {"8.0.4"}
    assert set(OsExitDayStats.objects.values_list("build__version", flat=True)) == {"8.0.4"}
    expected_agreement(android)


def test_the_same_history_again_is_stored_once(upload, android_secret):
    done(upload(EXITS, secret=android_secret, query=BUILD))
    doc = {
        "format": "memdash.exitinfo", "version": 1,
        "app": {"id": "com.example.chat", "platform": "android"},
        "build": {"version": "8.0.4", "number": "104"}, "exits": EXITS[:3],
    }  # fmt: skip
    body = done(upload(doc, secret=android_secret), fmt="memdash.exitinfo")
    assert (body["counts"]["created"], body["counts"]["unchanged"]) == (0, 3)
    assert OsExitDayStats.objects.get().foreground_exits == 4


def changed(index: int, **values) -> list:
    exits = copy.deepcopy(EXITS)
    exits[index].update(values)
    return exits


@pytest.mark.parametrize(
    "exits,path,words",
    [
        (changed(1, pss=-5), "[1].pss", "≥ 0"),
        (changed(2, reason=99), "[2].reason", "REASON_"),
        (changed(2, reason="REASON_BORED"), "[2].reason", "reason"),
        (changed(0, timestamp=1792753200), "[0].timestamp", "milliseconds"),
        # newest first, then 09:30 after 10:00 and before 09:00: fine; 12:00 after 10:00 breaks it
        (changed(2, timestamp=1792756800000), "[2].timestamp", "dates out of order"),
        (changed(1, pid=4242, timestamp=1792753200000), "[1]", "send each exit once"),
        (changed(3, importance="high"), "[3].importance", "integer"),
        (changed(4, processName=""), "[4].processName", "process name"),
    ],
)
def test_bad_records_are_refused_with_the_path(upload, android_secret, exits, path, words):
    body = refused(upload(exits, secret=android_secret, query=BUILD))
    assert body["path"] == path
    assert words in body["error"]


def test_another_apps_exit_is_refused(upload, android_secret):
    body = refused(upload(changed(3, processName="com.example.other"), secret=android_secret,
                          query=BUILD), status=403)  # fmt: skip
    assert body["path"] == "[3].processName"


def test_an_exit_names_no_version_so_the_upload_must(upload, android_secret):
    assert refused(upload(EXITS, secret=android_secret))["path"] == "build_version"


def test_exitinfo_for_an_ios_app_is_refused(upload):
    assert "Android" in refused(upload(EXITS, query=BUILD), status=403)["error"]


def test_deleting_the_app_or_a_build_takes_the_oss_word_with_it(upload, android, android_secret):
    done(upload(android_sessions(), secret=android_secret), fmt="memdash.sessions")
    done(upload(EXITS, secret=android_secret, query=BUILD))
    other = core_services.get_or_create_build(android, "8.0.3", "103")
    core_services.delete_build(other)  # another build: the exits stay
    assert ProcessExit.objects.count() == 5
    core_services.delete_app(android)
    assert (ProcessExit.objects.count(), OsExitDayStats.objects.count()) == (0, 0)
    assert Session.objects.count() == 0


def test_a_runs_pid_is_checked_and_kept(upload, android, android_secret):
    doc = android_sessions()
    doc["sessions"][1]["pid"] = -1
    response = upload(doc, secret=android_secret)
    assert response.status_code == 400
    assert response.json()["path"] == "sessions[1].pid"
    done(upload(android_sessions(), secret=android_secret), fmt="memdash.sessions")
    again = android_sessions()
    del again["sessions"][1]["pid"]  # a later copy of run-3800 without its pid
    again["sessions"][1]["last_seen_at"] = "2026-10-23T07:59:30Z"
    done(upload(again, secret=android_secret), fmt="memdash.sessions")
    assert Session.objects.get(session_id="run-3800").pid == 3800  # the stored pid stays


# --- the command-line door ------------------------------------------------------------------------


def exits_file(tmp_path) -> str:
    path = tmp_path / "exits.json"
    path.write_text(json.dumps(EXITS))
    return str(path)


def test_the_command_line_imports_exits(android, tmp_path):
    call_command(
        "import_snapshot", exits_file(tmp_path), "--app", str(android.pk),
        "--build-version", "8.0.4", "--build-number", "104", "--device-id", "P1",
    )  # fmt: skip
    # the five records of exits.json, with the build and device the command names
    assert ProcessExit.objects.count() == 5
    assert set(ProcessExit.objects.values_list("build__version", "build__number")) == {
        ("8.0.4", "104")
    }
    assert set(ProcessExit.objects.values_list("device__device_key", flat=True)) == {"P1"}
    assert OsExitDayStats.objects.get().foreground_memory == 2  # 4242 (limiter) and 3800


def test_the_command_line_imports_exits_with_the_apps_key(android, android_secret, tmp_path):
    call_command("import_snapshot", exits_file(tmp_path), key=android_secret, build_version="8.0.4")
    assert ProcessExit.objects.count() == 5
    upload = Upload.objects.get()
    assert (upload.status, upload.key.app_id) == (Upload.DONE, android.pk)


def test_the_command_line_refuses_exits_for_the_ios_apps_key(android, ingest_secret, tmp_path):
    # the key is the iOS app's (com.example.chat, ios): exits are Android's
    with pytest.raises(CommandError, match="1 of 1 files"):
        call_command(
            "import_snapshot", exits_file(tmp_path), key=ingest_secret, build_version="8.0.4"
        )
    assert "Android" in Upload.objects.get().error
    assert not ProcessExit.objects.exists()


def test_the_command_line_needs_the_build(android, tmp_path):
    with pytest.raises(CommandError, match="1 of 1 files"):
        call_command("import_snapshot", exits_file(tmp_path), "--app", str(android.pk))
    assert Upload.objects.get().error_path == "build_version"
