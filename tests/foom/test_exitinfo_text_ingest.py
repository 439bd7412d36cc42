"""`dumpsys activity exit-info` and `ApplicationExitInfo.toString()` text through the upload doors:
the same records as the JSON form (stored once when both arrive), the device's offset from the
upload, matched to their runs; refusals that store nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memdash.foom.models import ProcessExit
from memdash.ingest.models import Upload
from tests.foom.os_helpers import android_run, fg

pytestmark = pytest.mark.django_db

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "exitinfo"
ONE_A_LINE = (SAMPLES / "handwritten_dumpsys_one_field_a_line.txt").read_bytes()
QUERY = "build_version=8.0.4&build_number=104&device_id=P1&utc_offset=%2B02:00"


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1000)


def done(response) -> dict:
    body = response.json()
    assert response.status_code == 202 and body["status"] == "done", body
    return body


def test_the_dump_into_the_exit_records(upload, android_secret):
    body = done(upload(ONE_A_LINE, secret=android_secret, content_type="text/plain", query=QUERY))
    assert body["format"] == "android.exitinfo.text"
    assert body["counts"] == {
        "exits": 3,
        "created": 3,
        "unchanged": 0,
        "matched": 0,
        "utc_offset_minutes": 120,
    }
    exits = {e.pid: e for e in ProcessExit.objects.all()}
    # 14:30:58.902 on the device at +02:00 is 12:30:58.902 UTC
    assert exits[21877].timestamp == datetime(2026, 10, 23, 12, 30, 58, 902000, tzinfo=UTC)
    assert (exits[21877].verdict, exits[21877].pss_kb) == ("memory", 1258291)
    assert (exits[20412].reason, exits[20412].verdict) == ("other", "memory")  # MemoryLimiter
    assert (exits[19233].reason, exits[19233].verdict) == ("anr", "hang")


def test_the_same_records_as_the_json_form(upload, android_secret):
    json_form = [
        {"pid": 21877, "processName": "com.example.chat", "reason": 3, "importance": 100,
         "timestamp": ms("2026-10-23T12:30:58.902+00:00"), "pss": 1258291, "rss": 1572864,
         "status": 0, "description": None},
        {"pid": 20412, "processName": "com.example.chat", "reason": 13, "importance": 100,
         "timestamp": ms("2026-10-23T09:02:40.331+00:00"), "pss": 825344, "rss": 1013760,
         "status": 0, "description": "MemoryLimiter:AnonSwap"},
        {"pid": 19233, "processName": "com.example.chat:sync", "reason": 6, "importance": 300,
         "timestamp": ms("2026-10-23T07:15:07.006+00:00"), "pss": 96256, "rss": 154624,
         "status": 0, "description": "Input dispatching timed out"},
    ]  # fmt: skip
    done(upload(json_form, secret=android_secret, query=QUERY))
    stored = list(ProcessExit.objects.values_list("pid", "timestamp", "reason", "verdict"))
    body = done(upload(ONE_A_LINE, secret=android_secret, content_type="text/plain", query=QUERY))
    assert (body["counts"]["created"], body["counts"]["unchanged"]) == (0, 3)
    assert list(ProcessExit.objects.values_list("pid", "timestamp", "reason", "verdict")) == stored


def test_text_exits_find_their_runs_by_pid_and_time(upload, android_secret):
    runs = {
        "format": "memdash.sessions", "version": 1,
        "app": {"id": "com.example.chat", "platform": "android"},
        "sessions": [
            android_run("run-a", "12:00", "12:30", fg(), 21877),
            android_run("run-b", "12:40", "12:41", None, 22014),
        ],
    }  # fmt: skip
    done(upload(runs, secret=android_secret))
    body = done(upload(ONE_A_LINE, secret=android_secret, content_type="text/plain", query=QUERY))
    assert body["counts"]["matched"] == 1
    assert ProcessExit.objects.get(pid=21877).session.session_id == "run-a"


def test_to_string_through_the_upload_page(android, member_client):
    text = (SAMPLES / "handwritten_tostring_logcat.txt").read_text()
    response = member_client.post(
        "/uploads/",
        {"app": android.pk, "pasted": text, "build_version": "8.0.4", "device_id": "P1",
         "utc_offset": "+02:00"},
    )  # fmt: skip
    assert response.status_code == 302
    upload = Upload.objects.get()
    assert (upload.status, upload.format, upload.filename) == (
        "done",
        "android.exitinfo.text",
        "pasted.txt",
    )
    # to the minute, as toString() prints it
    assert sorted(ProcessExit.objects.values_list("timestamp", flat=True)) == [
        datetime(2026, 10, 23, 9, 2, tzinfo=UTC),
        datetime(2026, 10, 23, 12, 30, tzinfo=UTC),
    ]


@pytest.mark.parametrize(
    ("body", "query", "status", "path"),
    [
        (ONE_A_LINE, "device_id=P1", 400, "build_version"),
        (ONE_A_LINE, "build_version=8.0.4&utc_offset=CEST", 400, "utc_offset"),
        (ONE_A_LINE.replace(b"reason=3 (LOW_MEMORY)", b"reason=42 (NEW)"), "build_version=8.0.4",
         400, "line 6"),
        (ONE_A_LINE.replace(b"process=com.example.chat\n", b"process=com.other.app\n", 1),
         "build_version=8.0.4", 403, "line 6"),
        # #1 a day later than #0 sets the list's direction (oldest first); #2 breaks it
        (ONE_A_LINE.replace(b"2026-10-23 11:02:40.331", b"2026-10-24 11:02:40.331"),
         "build_version=8.0.4", 400, "line 40"),
    ],
)  # fmt: skip
def test_refusals_store_nothing(upload, android_secret, body, query, status, path):
    response = upload(body, secret=android_secret, content_type="text/plain", query=query)
    assert response.status_code == status, response.json()
    assert response.json()["path"] == path
    assert not ProcessExit.objects.exists()


def test_an_ios_key_is_refused(upload, ingest_secret):
    response = upload(ONE_A_LINE, secret=ingest_secret, content_type="text/plain", query=QUERY)
    assert response.status_code == 403 and not ProcessExit.objects.exists()
