"""Leak reports through the upload API: each sample stored with the totals its tool printed,
groups across uploads and builds, triage sightings, refusals that store nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdash.core.models import Build
from memdash.leaks.logic.fingerprint import FINGERPRINT_VERSION
from memdash.leaks.models import LeakGroup, LeakRecord, LeakReport
from memdash.triage.models import Status

pytestmark = pytest.mark.django_db

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "leaks"


def sample(name: str) -> bytes:
    return (SAMPLES / name).read_bytes()


def send(upload, name: str, build: str = "8.0.1", device: str = "D-1", **fields):
    query = f"build_version={build}&build_number=1&device_id={device}&device_model=Pixel%208"
    for key, value in fields.items():
        query += f"&{key}={value}"
    return upload(sample(name), content_type="text/plain", query=query)


def accepted(response, fmt: str) -> dict:
    body = response.json()
    assert response.status_code == 202, body
    assert body["status"] == "done", body
    assert body["format"] == fmt
    return body


def test_libmemunreachable_sample(upload, app):
    body = accepted(send(upload, "libmemunreachable_chrome.txt"), "libmemunreachable")
    # two listed leaks, no stack: two groups by size (336 and 144 bytes)
    assert body["counts"] == {
        "reports": 1,
        "records": 2,
        "groups": 2,
        "new_groups": 2,
        "reopened": 0,
    }
    report = LeakReport.objects.get(app=app)
    # The summary: 1632 bytes in 10 unreachable allocations; listed 336 + 144 = 480 in 2.
    assert (report.stated_bytes, report.stated_allocations) == (1632, 10)
    assert (report.listed_bytes, report.listed_allocations) == (480, 2)
    assert (report.unlisted_bytes, report.unlisted_allocations) == (1152, 8)
    assert report.unreachable_bytes == 1632
    assert report.build.version == "8.0.1" and report.device.model == "Pixel 8"
    assert body["leaks"]["url"] == report.get_absolute_url()
    titles = set(LeakGroup.objects.values_list("title", flat=True))
    assert titles == {"336-byte allocations", "144-byte allocations"}


def test_lsan_direct_leak_sample(upload, app):
    body = accepted(send(upload, "lsan_direct_leak.txt"), "sanitizer.leaks")
    assert body["counts"]["reports"] == 2
    first, second = LeakReport.objects.filter(app=app).order_by("position")
    # SUMMARY lines: 3079 bytes in 252 allocations; 10 bytes in 1 allocation.
    assert (first.stated_bytes, first.stated_allocations) == (3079, 252)
    assert (first.listed_bytes, first.listed_allocations) == (3079, 252)
    assert (second.stated_bytes, second.stated_allocations) == (10, 1)
    assert first.suppressions == [{"template": "libfontconfig", "count": 360, "bytes": 17792}]
    # the table printed after both reports belongs to neither: kept with the upload
    assert first.suppressions_outside_reports == [
        {"template": "libGL.so", "count": 3, "bytes": 18072}
    ]
    assert second.suppressions == [] and second.suppressions_outside_reports == []
    record = second.records.get()
    assert record.frames[1] == {
        "symbol": "xmlStrndup",
        "address": "0x7fefa091110b",
        "file": "/mnt/data/b/build/slave/ASAN_Release__symbolized_/build/src/out/Release/"
        "../../third_party/libxml/src/xmlstring.c",
        "line": 45,
    }
    assert record.group.title == "xmlStrndup"


def test_lsan_multiple_leaks_sample(upload, app):
    body = accepted(send(upload, "lsan_multiple_leaks.txt"), "sanitizer.leaks")
    report = LeakReport.objects.get(app=app)
    # SUMMARY: 236448 bytes in 450 allocations, in 32 records that add up to it.
    assert (report.stated_bytes, report.stated_allocations) == (236448, 450)
    assert (report.listed_bytes, report.listed_allocations, report.listed_records) == (
        236448,
        450,
        32,
    )
    assert body["counts"]["groups"] == 19  # see test_leak_fingerprint for the count by hand
    ctor = LeakGroup.objects.get(title__startswith="PlatformPlayer::PlatformPlayer(")
    # 8 records: 528 + 1536 + 336 + 96 direct, 1488 + 624 + 624 + 160 indirect = 5392 bytes
    assert (ctor.occurrences, ctor.bytes) == (8, 5392)


def test_valgrind_sample(upload, app):
    body = accepted(send(upload, "valgrind_memcheck_protocol4.xml"), "valgrind.memcheck-xml")
    report = LeakReport.objects.get(app=app)
    assert (report.stated_records, report.listed_records) == (8, 8)
    assert report.stated_bytes is None  # the XML states no byte totals
    first, second = report.records.order_by("position")[:2]
    assert (first.detail["valgrind_kind"], first.bytes, first.allocations) == (
        "Leak_DefinitelyLost",
        15,
        1,
    )
    assert (second.detail["valgrind_kind"], second.bytes, second.allocations) == (
        "Leak_StillReachable",
        24,
        1,
    )
    # still reachable memory is kept but not grouped as a leak; the two definitely lost
    # records (15 + 185 bytes) share one allocation path: one group.
    assert second.group is None
    assert body["counts"]["groups"] == 1
    assert report.unreachable_bytes == 200


def test_same_leaks_in_another_build_and_device_group_together(upload, app):
    accepted(send(upload, "lsan_direct_leak.txt", build="8.0.1", device="D-1"), "sanitizer.leaks")
    body = accepted(
        send(upload, "lsan_direct_leak.txt", build="8.0.2", device="D-2"), "sanitizer.leaks"
    )
    assert body["counts"]["new_groups"] == 0
    group = LeakGroup.objects.get(title="xmlStrndup")
    assert (group.occurrences, group.devices, group.builds, group.bytes) == (2, 2, 2, 20)
    assert (group.first_seen_build.version, group.last_seen_build.version) == ("8.0.1", "8.0.2")
    assert group.fingerprint_version == FINGERPRINT_VERSION


def test_fixed_group_seen_in_a_later_build_is_reopened(upload, app, member):
    accepted(send(upload, "lsan_direct_leak.txt", build="8.0.1"), "sanitizer.leaks")
    group = LeakGroup.objects.get(title="xmlStrndup")
    fix = Build.objects.create(app=app, version="8.0.2", number="1")
    group.change_triage(member, status=Status.FIXED, fixed_in_build=fix)
    # Seen again in 8.0.1 (a late upload of an old build): still fixed.
    body = accepted(
        send(upload, "lsan_direct_leak.txt", build="8.0.1", device="D-9"), "sanitizer.leaks"
    )
    group.refresh_from_db()
    assert body["counts"]["reopened"] == 0 and group.status == Status.FIXED
    # Seen in 8.0.3, after the fix: reopened as a regression.
    body = accepted(send(upload, "lsan_direct_leak.txt", build="8.0.3"), "sanitizer.leaks")
    group.refresh_from_db()
    assert body["counts"]["reopened"] == 1  # only xmlStrndup was fixed, not __GI___strdup
    assert group.status == Status.OPEN and group.regression


def test_upload_without_build_is_refused(upload, app):
    response = upload(sample("lsan_direct_leak.txt"), content_type="text/plain")
    assert response.status_code == 400
    assert response.json()["path"] == "build_version"
    assert not LeakReport.objects.exists() and not LeakGroup.objects.exists()


def test_cut_log_is_refused_with_its_line(upload, app):
    text = sample("lsan_multiple_leaks.txt").split(b"SUMMARY:")[0]
    response = upload(text, content_type="text/plain", query="build_version=1.0")
    body = response.json()
    assert response.status_code == 400, body
    # The SUMMARY line was line 144 after a blank line 143: reading stopped at line 142.
    assert body["path"] == "line 142" and "cut off at line 142: no SUMMARY" in body["error"]
    assert not LeakReport.objects.exists() and not LeakRecord.objects.exists()


def test_xml_with_entities_is_refused(upload, app):
    raw = sample("valgrind_memcheck_protocol4.xml").replace(
        b"<valgrindoutput>",
        b'<!DOCTYPE valgrindoutput [<!ENTITY x "xxxxxxxx">]>\n<valgrindoutput>',
        1,
    )
    response = upload(raw, content_type="text/plain", query="build_version=1.0")
    assert response.status_code == 400
    assert "DOCTYPE" in response.json()["error"]
    assert not LeakReport.objects.exists()


def test_command_door(app):
    from django.core.management import call_command

    call_command(
        "import_snapshot",
        str(SAMPLES / "lsan_multiple_leaks.txt"),
        "--app",
        str(app.pk),
        "--build-version",
        "9.0",
    )
    report = LeakReport.objects.get(app=app, build__version="9.0")
    assert (report.stated_bytes, report.stated_allocations) == (236448, 450)


def test_page_door(app, member_client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = member_client.post(
        f"/apps/{app.pk}/uploads/",
        {
            "app": app.pk,
            "file": SimpleUploadedFile("unreachable.txt", sample("libmemunreachable_chrome.txt")),
            "build_version": "9.1",
        },
    )
    assert response.status_code == 302
    report = LeakReport.objects.get(app=app, build__version="9.1")
    assert (report.stated_bytes, report.unlisted_bytes) == (1632, 1152)


@pytest.mark.parametrize(
    ("name", "old", "new", "path"),
    [
        (
            "libmemunreachable_chrome.txt",
            b"  1632 bytes",
            b"  99999999999999999999 bytes",
            "line 48",
        ),
        (
            "lsan_direct_leak.txt",
            b": 3079 byte(s)",
            b": 99999999999999999999 byte(s)",
            "line 8",
        ),  # the report's
    ],
)
def test_totals_past_64_bits_are_refused_with_their_line(upload, app, name, old, new, path):
    raw = sample(name).replace(old, new, 1)
    response = upload(raw, content_type="text/plain", query="build_version=1.0")
    body = response.json()
    assert response.status_code == 400, body
    assert body["path"] == path and "2^63" in body["error"]
    assert not LeakReport.objects.exists() and not LeakRecord.objects.exists()


def test_nul_byte_is_refused_with_its_line(upload, app):
    lines = sample("lsan_direct_leak.txt").split(b"\n")
    lines[4] += b"\x00"
    response = upload(b"\n".join(lines), content_type="text/plain", query="build_version=1.0")
    assert response.status_code == 400
    assert response.json()["path"] == "line 5"
    assert not LeakReport.objects.exists()
