"""The set-based store of sessions: results written with the facts and corrected afterwards,
re-uploads that keep what they do not change, odd ids, time zones, devices that change."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from memdash.core.models import Device
from memdash.foom.logic.classify import RULES_VERSION
from memdash.foom.models import BuildFoomStats, Session
from tests.foom.helpers import ago, ended, run, sessions_doc

pytestmark = pytest.mark.django_db


def accepted(response) -> dict:
    body = response.json()
    assert response.status_code == 202, body
    assert body["status"] == "done", body
    return body


def stored(sid: str) -> tuple:
    s = Session.objects.get(session_id=sid)
    return s.classification, s.rule


def test_a_late_run_written_with_its_own_result_is_corrected_by_its_stored_successor(upload):
    # a (30 days old, ended in the foreground) and c (10 days old, on another OS, ended in the
    # background): a's successor c has another OS -> rule 8; c has no successor but is past
    # its grace period -> its own end decides: background, rule 12.
    accepted(
        upload(
            sessions_doc(
                run("a", ago(days=30), end=ended()),
                run("c", ago(days=10), os="17.5", end=ended(state="background")),
            )
        )
    )
    assert (stored("a"), stored("c")) == (("os_upgrade", 8), ("background_oom", 12))
    # b arrives late, between them. Alone in its upload and past its grace period, it is
    # written as a FOOM (rule 15, its own end); its stored successor c has another OS, so it
    # ends the upload as os_upgrade (rule 8). a's successor is now b, on a's OS: a FOOM.
    body = accepted(upload(sessions_doc(run("b", ago(days=20), end=ended()))))
    # reclassified: b (pending -> os_upgrade) and a (os_upgrade -> foom) = 2
    assert body["counts"] == {
        "sessions": 1,
        "created": 1,
        "updated": 0,
        "unchanged": 0,
        "reclassified": 2,
    }
    assert stored("a") == ("foom", 15)
    assert stored("b") == ("os_upgrade", 8)
    assert stored("c") == ("background_oom", 12)
    b = Session.objects.get(session_id="b")
    assert (b.rules_version, b.classified_at is not None) == (RULES_VERSION, True)
    counts = BuildFoomStats.objects.get()
    # 3 runs, all classified; a and b ended in the foreground; one FOOM (a)
    assert (counts.sessions, counts.classified, counts.rate_sessions, counts.foom) == (3, 3, 2, 1)
    assert counts.classes == {"foom": 1, "background_oom": 1, "os_upgrade": 1}


def test_runs_of_one_upload_are_each_others_successors(upload):
    # Three runs of one device in one upload, the last on a new build: x1 -> x2 same build,
    # OS and boot, x1 quit by the user (rule 5); x2 -> x3 on another build (rule 7); x3 is a
    # day old with no successor: pending.
    body = accepted(
        upload(
            sessions_doc(
                run("x3", ago(days=1), build=("8.0.52", "2742")),
                run("x1", ago(days=3), end=ended(user_quit=True)),
                run("x2", ago(days=2), end=ended()),
            )
        )
    )
    assert body["counts"]["reclassified"] == 2  # x1 and x2; x3 stays pending
    assert stored("x1") == ("user_quit", 5)
    assert stored("x2") == ("app_upgrade", 7)
    assert stored("x3") == ("pending", None)


def test_a_re_upload_that_changes_no_result_keeps_the_classification_date(upload):
    t1, t2 = ago(days=2), ago(days=1)
    accepted(upload(sessions_doc(run("r1", t1, end=ended(memory_warnings=4)), run("r2", t2))))
    first = Session.objects.get(session_id="r1")
    assert (first.classification, first.rule) == ("foom", 15)
    # the same run with one more memory warning: its facts change, its result does not
    body = accepted(
        upload(sessions_doc(run("r1", t1, end=ended(memory_warnings=5)), run("r2", t2)))
    )
    counts = body["counts"]
    assert (counts["updated"], counts["unchanged"], counts["reclassified"]) == (1, 1, 0)
    again = Session.objects.get(session_id="r1")
    assert again.memory_warnings == 5
    assert (again.classification, again.rule) == ("foom", 15)
    assert again.classified_at == first.classified_at


@pytest.mark.parametrize(
    "sid,device",
    [
        ('quote"d', 'dev"ice'),
        ("back\\slash", "dev\\ice"),
        ("comma,{brace}", "dev,{ice}"),
        ("space and ünïcode", "NULL"),
    ],
)
def test_ids_that_need_quoting_are_found_again(upload, sid, device):
    session = run(sid, ago(days=2), device=device, end=ended())
    assert accepted(upload(sessions_doc(session)))["counts"]["created"] == 1
    # the same run again (keys in another order: the same bytes would be the same upload):
    # the run and its device are found, nothing changes
    again = dict(reversed(list(session.items())))
    assert accepted(upload(sessions_doc(again)))["counts"] == {
        "sessions": 1,
        "created": 0,
        "updated": 0,
        "unchanged": 1,
        "reclassified": 0,
    }
    assert Session.objects.get().session_id == sid
    assert list(Device.objects.values_list("device_key", flat=True)) == [device]


def test_a_start_time_with_an_offset_is_stored_in_utc(upload):
    doc = sessions_doc(run("tz", ago(days=2), end=ended()))
    # 01:30 at +02:00 is 23:30 UTC on the day before
    doc["sessions"][0]["started_at"] = "2026-11-10T01:30:00+02:00"
    doc["sessions"][0]["last_seen_at"] = "2026-11-10T01:35:00+02:00"
    accepted(upload(doc))
    s = Session.objects.get()
    assert s.started_day == date(2026, 11, 9)
    assert s.started_at == datetime.fromisoformat("2026-11-09T23:30:00+00:00")
    # the same instants written in UTC are the same facts
    doc["sessions"][0]["started_at"] = "2026-11-09T23:30:00Z"
    doc["sessions"][0]["last_seen_at"] = "2026-11-09T23:35:00Z"
    assert accepted(upload(doc))["counts"]["unchanged"] == 1


def test_a_device_takes_the_model_and_os_of_its_latest_run(upload):
    t1 = ago(days=3)
    accepted(upload(sessions_doc(run("m1", t1, model="iPhone14,5", os="17.4.1"))))
    device = Device.objects.get()
    assert (device.model, device.os) == ("iPhone14,5", "17.4.1")
    # a later run on a new phone model and OS, and the earlier run sent again: the latest wins
    accepted(
        upload(
            sessions_doc(
                run("m2", ago(days=1), model="iPhone15,2", os="17.5"),
                run("m1", t1, model="iPhone14,5", os="17.4.1"),
            )
        )
    )
    device.refresh_from_db()
    assert (device.model, device.os) == ("iPhone15,2", "17.5")
    assert Device.objects.count() == 1
