"""iOS MetricKit payloads through the upload API: what is stored and counted, the units and
timestamps as devices write them, unknown keys listed, bad payloads refused with their path and
nothing stored. Fixtures: tests/data/metrickit/ (PROVENANCE.md there)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from memdash.core.logic.errors import InvalidUpload
from memdash.core.writes import apps as core_services
from memdash.foom.models import MetricKitDiagnostic, MetricKitPayload, OsExitDayStats
from memdash.ingest.models import Upload
from memdash.ingest.writes.parsers.metrickit import parse_bytes, parse_number, parse_stamp

pytestmark = pytest.mark.django_db
DATA = Path(__file__).parents[1] / "data" / "metrickit"


def payload(name: str = "metric_payload.json") -> dict:
    return json.loads((DATA / name).read_text())


def done(response, fmt: str = "metrickit") -> dict:
    body = response.json()
    assert response.status_code == 202, body
    assert body["status"] == "done", body
    assert body["format"] == fmt
    return body


def refused(response, status: int = 400) -> dict:
    body = response.json()
    assert response.status_code == status, body
    assert MetricKitPayload.objects.count() == 0
    assert OsExitDayStats.objects.count() == 0
    return body


# --- values as devices write them -------------------------------------------------------------


@pytest.mark.parametrize(
    "text,number",
    [
        ("200000", 200000),
        ("1,106,818", 1106818),  # English grouping
        ("1.106.818", 1106818),  # German grouping
        ("1 106 818", 1106818),  # French grouping (a space)
        ("184.2", 184.2),
        ("184,2", 184.2),  # a decimal comma
        ("1,234.5", 1234.5),
        ("1.234,5", 1234.5),
    ],
)
def test_numbers_in_any_locale(text, number):
    assert parse_number(text) == pytest.approx(number)


def test_memory_with_its_unit():
    assert parse_bytes("200000 kB", "p") == 200_000_000  # kB = 1000 bytes (Foundation's)
    assert parse_bytes("1,106,818千字节", "p") == 1_106_818_000  # Chinese for kilobytes
    assert parse_bytes("184.2 MB", "p") == 184_200_000
    assert parse_bytes("1.5 GiB", "p") == 1_610_612_736  # 1.5 × 1024³
    assert parse_bytes("512 bytes", "p") == 512
    assert parse_bytes("12 Kilobyte-ish", "p") is None  # a unit memdash does not know: unread
    for bad in ("kB", "-5 kB", 42):
        with pytest.raises(InvalidUpload) as error:
            parse_bytes(bad, "memoryMetrics.peakMemoryUsage")
        assert error.value.path == "memoryMetrics.peakMemoryUsage"


def test_timestamps_as_metrickit_and_xcode_write_them():
    assert parse_stamp("2026-10-22 23:00:00 +0000", "p") == datetime(2026, 10, 22, 23, tzinfo=UTC)
    assert parse_stamp("2026-10-23 01:00:00 +0200", "p") == datetime(2026, 10, 22, 23, tzinfo=UTC)
    assert parse_stamp("2026-10-22 23:00:00", "p") == datetime(2026, 10, 22, 23, tzinfo=UTC)
    assert parse_stamp("2026-10-22T23:00:00Z", "p") == datetime(2026, 10, 22, 23, tzinfo=UTC)
    with pytest.raises(InvalidUpload):
        parse_stamp("yesterday", "p")


# --- uploads --------------------------------------------------------------------------------------


def test_a_payload_as_delivered_is_stored_and_counted(upload, app):
    body = done(upload(payload()))
    assert body["counts"] == {
        "payloads": 1, "created": 1, "unchanged": 0, "replaced": 0, "diagnostics": 0,
        "diagnostics_created": 0,
    }  # fmt: skip
    assert "unread" not in body  # every key is one of Apple's
    stored = MetricKitPayload.objects.get()
    assert (stored.build.version, stored.build.number) == ("8.0.4", "104")
    assert (stored.device_type, stored.os_version) == ("iPhone14,5", "iPhone OS 17.4.1 (21E236)")
    assert stored.day == date(2026, 10, 23)  # the middle of 23:00 on the 22nd … 22:59 on the 23rd
    # foreground: memory limit 2 + normal 5 + watchdog 1 + bad access 1 = 9 exits, 2 memory kills
    assert (stored.foreground_exits, stored.foreground_memory) == (9, 2)
    # background: memory limit 1 + pressure 3 + task assertion 1 + normal 4 = 9, memory 1 + 3 = 4
    assert (stored.background_exits, stored.background_memory) == (9, 4)
    assert stored.peak_memory_bytes == 2_936_012_000  # 2,936,012 kB
    assert (stored.suspended_memory_bytes, stored.suspended_samples) == (412_300_000, 7)
    day = OsExitDayStats.objects.get()
    assert (day.source, day.reports, day.foreground_memory, day.foreground_exits) == (
        "metrickit", 1, 2, 9,
    )  # fmt: skip
    assert day.foreground == {"memory": 2, "normal": 5, "hang": 1, "crash": 1}
    assert day.reasons["background"]["cumulativeMemoryPressureExitCount"] == 3


def test_a_list_of_payloads_and_localised_units(upload):
    body = done(upload([payload(), payload("metric_payload_zh.json")]))
    assert body["counts"]["created"] == 2
    zh = MetricKitPayload.objects.get(device_type="iPhone12,1")
    assert zh.peak_memory_bytes == 1_106_818_000
    assert (zh.suspended_memory_bytes, zh.suspended_samples) == (228_145_000, 22)
    # an empty foreground exit data: no foreground exits that day; 13 memory-pressure exits
    assert (zh.foreground_exits, zh.background_memory, zh.day) == (0, 13, date(2026, 10, 24))


def test_the_same_payload_again_is_stored_once(upload):
    done(upload(payload()))
    again = copy.deepcopy(payload())
    body = done(upload({"format": "memdash.metrickit", "version": 1,
                        "app": {"id": "com.example.chat", "platform": "ios"},
                        "payloads": [again]}), fmt="memdash.metrickit")  # fmt: skip
    assert (body["counts"]["created"], body["counts"]["unchanged"]) == (0, 1)
    assert MetricKitPayload.objects.count() == 1
    assert OsExitDayStats.objects.get().foreground_exits == 9  # not 18


def test_unknown_keys_are_kept_out_and_listed(upload, member_client):
    doc = payload()
    doc["futureMetrics"] = {"x": 1}
    doc["metaData"]["newField"] = "?"
    doc["applicationExitMetrics"]["foregroundExitData"]["cumulativeNewReasonExitCount"] = 2
    doc["applicationExitMetrics"]["foregroundExitData"]["notACount"] = "x"
    doc["memoryMetrics"]["peakMemoryUsage"] = "2936012 キロバイト"  # a unit memdash cannot read
    body = done(upload(doc))
    assert body["unread"] == [
        "futureMetrics",
        "metaData.newField",
        "applicationExitMetrics.foregroundExitData.notACount",
        "memoryMetrics.peakMemoryUsage",
    ]
    page = member_client.get(reverse("ingest:upload_detail", args=[body["id"]])).content.decode()
    assert "<code>metaData.newField</code>" in page  # the upload's page lists them too
    stored = MetricKitPayload.objects.get()
    # a new reason still counts as an exit (of another kind): 9 + 2 = 11
    assert stored.foreground_exits == 11
    assert stored.peak_memory_bytes is None


def test_a_diagnostic_payload_is_counted_and_stored(upload):
    body = done(upload([payload(), json.loads((DATA / "diagnostic_payload.json").read_text())]))
    assert (body["counts"]["payloads"], body["counts"]["diagnostics"]) == (1, 1)
    assert "unread" not in body
    (crash,) = MetricKitDiagnostic.objects.all()
    assert (crash.kind, str(crash.build), crash.frames) == ("crash", "8.0.4 (104)", 1)


@pytest.mark.parametrize(
    "change,path,words",
    [
        (
            lambda d: d["applicationExitMetrics"]["foregroundExitData"].update(
                cumulativeNormalAppExitCount=-1
            ),
            "applicationExitMetrics.foregroundExitData.cumulativeNormalAppExitCount",
            "must not be negative",
        ),
        (
            lambda d: d["applicationExitMetrics"]["backgroundExitData"].update(
                cumulativeMemoryPressureExitCount=2.5
            ),
            "applicationExitMetrics.backgroundExitData.cumulativeMemoryPressureExitCount",
            "whole number",
        ),
        (
            lambda d: d.update(timeStampEnd="2026-10-22 22:00:00 +0000"),
            "timeStampEnd",
            "dates out of order",
        ),
        (lambda d: d.update(timeStampBegin="soon"), "timeStampBegin", "not a timestamp"),
        (lambda d: d.pop("appVersion"), "appVersion", "build_version"),
        (
            lambda d: d["memoryMetrics"].update(peakMemoryUsage="lots"),
            "memoryMetrics.peakMemoryUsage",
            "not a number",
        ),
    ],
)
def test_bad_payloads_are_refused_with_the_path(upload, change, path, words):
    doc = payload()
    change(doc)
    body = refused(upload(doc))
    assert body["path"] == path
    assert words in body["error"]


def test_payloads_out_of_order_are_refused(upload):
    first, second = payload(), payload("metric_payload_zh.json")
    body = refused(upload([second, first]))  # the 23rd/24th before the 22nd/23rd
    assert body["path"] == "[1].timeStampBegin"
    assert "dates out of order" in body["error"]


def test_another_apps_payload_is_refused(upload, ingest_secret):
    doc = payload()
    doc["metaData"]["bundleIdentifier"] = "com.example.other"
    body = refused(upload(doc), status=403)
    assert body["path"] == "metaData.bundleIdentifier"


def test_metrickit_for_an_android_app_is_refused(upload, db):
    android = core_services.get_or_create_app("com.example.chat", "android")
    secret = core_services.create_ingest_key(android)[1]
    body = refused(upload(payload(), secret=secret), status=403)
    assert "Apple" in body["error"]


def wrapped(*payloads: dict, device: str | None = "D-1") -> dict:
    doc = {
        "format": "memdash.metrickit", "version": 1,
        "app": {"id": "com.example.chat", "platform": "ios"}, "payloads": list(payloads),
    }  # fmt: skip
    if device:
        doc["device"] = {"id": device}
    return doc


def test_a_devices_window_again_replaces_it_but_never_goes_backwards(upload):
    done(upload(wrapped(payload())), fmt="memdash.metrickit")
    more = payload()
    exits = more["applicationExitMetrics"]["foregroundExitData"]
    exits["cumulativeMemoryResourceLimitExitCount"] = 3
    body = done(upload(wrapped(more)), fmt="memdash.metrickit")
    assert (body["counts"]["created"], body["counts"]["replaced"]) == (0, 1)
    assert OsExitDayStats.objects.get().foreground_memory == 3  # replaced, not 2 + 3
    fewer = copy.deepcopy(more)  # memory kills as stored, one normal exit less than stored
    fewer["applicationExitMetrics"]["foregroundExitData"]["cumulativeNormalAppExitCount"] = 4
    response = upload(wrapped(fewer))
    body = response.json()
    assert response.status_code == 400, body
    assert body["path"] == (
        "payloads[0].applicationExitMetrics.foregroundExitData.cumulativeNormalAppExitCount"
    )
    assert "goes backwards: 5 stored" in body["error"]
    assert OsExitDayStats.objects.get().foreground_memory == 3  # the stored one stands


def test_a_wrapper_for_another_app_is_refused(upload):
    doc = wrapped(payload())
    doc["app"]["id"] = "com.example.other"
    assert refused(upload(doc), status=403)["path"] == "app"


def test_the_wrapper_fills_what_the_payload_lacks(upload):
    doc = payload()
    del doc["appVersion"]
    body = done(
        upload({**wrapped(doc, device=None), "build": {"version": "8.0.4"}}),
        fmt="memdash.metrickit",
    )
    assert body["counts"]["created"] == 1
    assert MetricKitPayload.objects.get().build.version == "8.0.4"


def test_the_command_line_imports_a_payload(app, tmp_path):
    path = tmp_path / "payload.json"
    path.write_text(json.dumps(payload()))
    call_command("import_snapshot", str(path), "--app", str(app.pk))
    assert MetricKitPayload.objects.get().foreground_memory == 2


# --- which payload is which: the device the upload names ----------------------------------------


def test_two_devices_identical_days_are_two_payloads(upload):
    done(upload(payload(), query="device_id=D1"))
    done(upload(payload(), query="device_id=D2"))  # the same JSON, another device
    assert sorted(MetricKitPayload.objects.values_list("device_key", flat=True)) == ["D1", "D2"]
    assert OsExitDayStats.objects.get().foreground_exits == 18  # 9 + 9
    again = done(upload(wrapped(payload(), device="D1")), fmt="memdash.metrickit")
    assert (again["counts"]["created"], again["counts"]["unchanged"]) == (0, 1)
    # without a device, the same JSON is the payload again, whoever sent it
    alone = done(upload(wrapped(payload(), device=None)), fmt="memdash.metrickit")
    assert alone["counts"]["unchanged"] == 1
    assert MetricKitPayload.objects.count() == 2


def test_without_a_device_a_changed_window_is_refused_not_counted_twice(upload):
    done(upload(payload()))
    changed = payload()
    changed["applicationExitMetrics"]["foregroundExitData"]["cumulativeNormalAppExitCount"] = 6
    response = upload(changed)
    body = response.json()
    assert response.status_code == 400, body
    assert body["path"] == "timeStampBegin"
    assert "duplicate window" in body["error"] and "device_id" in body["error"]
    assert MetricKitPayload.objects.count() == 1
    assert OsExitDayStats.objects.get().foreground_exits == 9  # not 9 + 10
    # named, the device's window is stored beside it (it may be another device's day)
    done(upload(changed, query="device_id=D1"))
    assert OsExitDayStats.objects.get().foreground_exits == 19


def test_a_relay_without_devices_may_not_send_one_window_twice(upload):
    other = payload()
    other["metaData"]["deviceType"] = "iPhone12,1"
    body = refused(upload(wrapped(payload(), other, device=None)))
    assert body["path"] == "payloads[1].timeStampBegin"
    assert "another payload of this upload" in body["error"]


def test_a_devices_window_of_each_build(upload):
    # a device updated during the day: a window of 8.0.3 and one of 8.0.4, both kept
    earlier = payload()
    earlier["appVersion"], earlier["metaData"]["appBuildVersion"] = "8.0.3", "103"
    done(upload(wrapped(earlier)), fmt="memdash.metrickit")
    done(upload(wrapped(payload())), fmt="memdash.metrickit")
    assert OsExitDayStats.objects.count() == 2


def test_sums_past_32_bits_are_stored(upload):
    doc = payload()
    doc["applicationExitMetrics"]["foregroundExitData"] = {
        "cumulativeMemoryResourceLimitExitCount": 2**31 - 1,
        "cumulativeMemoryPressureExitCount": 2**31 - 1,  # in the foreground: a memory kill too
    }
    done(upload(doc))
    stored = MetricKitPayload.objects.get()
    # 2 × (2³¹ − 1) = 4,294,967,294: past a 32-bit column
    assert (stored.foreground_exits, stored.foreground_memory) == (4_294_967_294, 4_294_967_294)
    assert OsExitDayStats.objects.get().foreground_memory == 4_294_967_294


def test_a_day_past_64_bits_is_refused_with_the_path(upload, app):
    build = core_services.get_or_create_build(app, "8.0.4", "104")
    begins = datetime(2026, 10, 23, tzinfo=UTC)
    for device in ("X1", "X2"):  # two devices' days (the 23rd) of 2⁶² exits each, stored
        MetricKitPayload.objects.create(
            app=app, build=build, digest=device, device_key=device, begins_at=begins,
            ends_at=begins.replace(hour=23), day=date(2026, 10, 23),
            foreground={"cumulativeNormalAppExitCount": 2**62}, foreground_exits=2**62,
        )  # fmt: skip
    # 2⁶² + 2⁶² + 9 > 2⁶³ − 1
    response = upload(payload())
    body = response.json()
    assert response.status_code == 400, body
    assert body["path"] == "applicationExitMetrics"
    assert "more than 9223372036854775807" in body["error"]
    assert MetricKitPayload.objects.count() == 2 and not OsExitDayStats.objects.exists()


# --- diagnostics ----------------------------------------------------------------------------------


def diagnostic() -> dict:
    return json.loads((DATA / "diagnostic_payload.json").read_text())


def test_another_apps_diagnostic_is_refused(upload):
    other = diagnostic()
    other["crashDiagnostics"][0]["diagnosticMetaData"]["bundleIdentifier"] = "com.other.app"
    body = refused(upload([payload(), other]), status=403)
    assert body["path"] == "[1].crashDiagnostics[0].diagnosticMetaData.bundleIdentifier"
    assert "com.other.app" in body["error"]


def test_a_diagnostics_dates_out_of_order_are_refused(upload):
    late = diagnostic()
    late["timeStampEnd"] = "2026-10-23 10:11:00 +0000"  # a minute before its begin
    body = refused(upload([payload(), late]))
    assert body["path"] == "[1].timeStampEnd"
    assert "dates out of order" in body["error"]


# --- the command-line door ------------------------------------------------------------------------


def test_the_command_line_imports_with_the_apps_key(app, ingest_secret, tmp_path):
    path = tmp_path / "payload.json"
    path.write_text(json.dumps(payload()))
    call_command("import_snapshot", str(path), key=ingest_secret, device_id="D1")
    stored = MetricKitPayload.objects.get()
    assert (stored.device_key, stored.foreground_memory) == ("D1", 2)
    upload = Upload.objects.get()
    assert (upload.source, upload.key.app_id) == (Upload.COMMAND, app.pk)


def test_the_command_line_checks_the_payload_against_the_keys_app(app, tmp_path):
    other = core_services.get_or_create_app("com.example.other", "ios")
    secret = core_services.create_ingest_key(other)[1]
    path = tmp_path / "payload.json"
    path.write_text(json.dumps(payload()))  # com.example.chat's payload
    with pytest.raises(CommandError, match="1 of 1 files"):
        call_command("import_snapshot", str(path), key=secret)
    refused_upload = Upload.objects.get()
    assert refused_upload.error_path == "metaData.bundleIdentifier"
    assert not MetricKitPayload.objects.exists()
