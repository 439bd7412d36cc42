"""Retain cycles through the upload API: the JSON form, the printed text, and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdash.cycles.models import CanonicalCycle, Cluster, CycleReport, RetainCycle
from memdash.ingest.models import Upload
from tests.samples import retain_cycles_example

pytestmark = pytest.mark.django_db

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "cycles" / "nslog_cycles.txt"


def assert_nothing_stored() -> None:
    assert CycleReport.objects.count() == 0
    assert RetainCycle.objects.count() == 0
    assert CanonicalCycle.objects.count() == 0
    assert Cluster.objects.count() == 0


def test_json_upload_of_the_spec_example(upload, app):
    response = upload(retain_cycles_example())
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "done"
    assert body["format"] == "memdash.retain-cycles"
    assert body["counts"] == {"cycles": 1, "dropped": 0, "clusters": 1}
    report = CycleReport.objects.get(pk=body["retain-cycles"]["id"])
    assert (report.build.version, report.build.number, report.device.device_key) == (
        "8.0.51",
        "2741",
        "A1B2",
    )
    cluster = Cluster.objects.get()
    assert cluster.key == ["ChatDataSource", "ChatViewController"]
    assert (cluster.occurrences, cluster.devices, cluster.builds) == (1, 1, 1)
    assert cluster.first_seen_build == report.build == cluster.last_seen_build
    assert cluster.algorithm_version == "cycles-2026.11"


def test_printed_sample_with_build_from_query(upload, app):
    response = upload(
        SAMPLE.read_bytes(),
        content_type="text/plain",
        query="build_version=8.0.3&build_number=103&device_id=D-9",
    )
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["format"] == "fbretaincycledetector.text"
    # Six printed cycles: five kept, the (null) one dropped; four clusters (the two chat loops
    # share ChatDataSource -> ChatViewController).
    assert body["counts"] == {"cycles": 5, "dropped": 1, "clusters": 4}
    assert RetainCycle.objects.count() == 5
    assert CanonicalCycle.objects.count() == 5
    keys = sorted((c.system, c.key, c.occurrences) for c in Cluster.objects.filter(is_current=True))
    assert keys == [
        (False, ["AvatarLoader", "ProfileHeaderView"], 1),
        (False, ["ChatDataSource", "ChatViewController"], 2),
        (False, ["VoiceNoteCell", "VoiceNotePlayer"], 1),
        (True, ["UITransitionView", "_UIFullscreenPresentationController"], 1),
    ]
    # The block printed with its address is stored as its class.
    profile = CanonicalCycle.objects.get(key=["AvatarLoader", "ProfileHeaderView"])
    assert [cls for cls, _via in profile.canonical].count("__NSMallocBlock__") == 2


def test_same_loop_from_another_starting_object_is_the_same_cycle(upload, app):
    rotated = [
        {"class": "ChatDataSource", "via": ["_dataSource"]},
        {"class": "__NSMallocBlock__", "via": ["_onUpdate"]},
        {"class": "ChatViewController", "via": []},
    ]
    upload(retain_cycles_example())
    upload(retain_cycles_example(cycles=[rotated], device={"id": "OTHER"}))
    assert CanonicalCycle.objects.count() == 1
    cluster = Cluster.objects.get()
    assert (cluster.occurrences, cluster.devices, cluster.cycles) == (2, 2, 1)


def test_printed_text_without_a_build_is_refused(upload):
    response = upload(SAMPLE.read_bytes(), content_type="text/plain")
    assert response.status_code == 400
    assert response.json()["path"] == "build_version"
    assert_nothing_stored()


@pytest.mark.parametrize(
    ("overrides", "path"),
    [
        (
            {"cycles": [[{"class": "A", "via": []}], [{"class": "B", "via": [7]}]]},
            "cycles[1][0].via[0]",
        ),
        ({"cycles": [[]]}, "cycles[0]"),
        ({"build": None}, "build.version"),
        ({"captured_at": "2026-11-20 10:12"}, "captured_at"),
        ({"captured_at": "9999-12-31T23:59:59-05:00"}, "captured_at"),  # past 9999 in UTC
        ({"device": {"id": "D1", "model": "m" * 129}}, "device.model"),  # Device.model is 128
        ({"device": {"id": "D1", "os": "o" * 129}}, "device.os"),
        ({"device": {"id": "D\x001"}}, "device.id"),
        ({"build": {"version": "8.0\x00"}}, "build.version"),
    ],
)
def test_bad_json_names_the_path_and_stores_nothing(upload, overrides, path):
    response = upload(retain_cycles_example(**overrides))
    assert response.status_code == 400, response.content
    assert response.json()["path"] == path
    assert Upload.objects.get().status == Upload.REJECTED
    assert_nothing_stored()


def test_bad_text_names_the_line(upload):
    text = b'{(\n    (\n    "-> A ",\n    "_b -> B "\n    )\n)}\n'
    response = upload(text, content_type="text/plain", query="build_version=1.0")
    assert response.status_code == 400
    assert response.json()["path"] == "line 4"
    assert_nothing_stored()


def test_long_device_model_in_the_text_form_is_refused(upload):
    query = "build_version=1.0&device_id=D3&device_model=" + "m" * 129
    response = upload(SAMPLE.read_bytes(), content_type="text/plain", query=query)
    assert response.status_code == 400
    assert response.json()["path"] == "device_model"
    assert_nothing_stored()


def test_other_apps_document_is_refused(upload):
    response = upload(retain_cycles_example(app={"id": "com.other", "platform": "ios"}))
    assert response.status_code == 403
    assert_nothing_stored()


def test_printed_sample_through_the_page_and_the_command(member_client, app, tmp_path):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.core.management import call_command

    response = member_client.post(
        f"/apps/{app.pk}/uploads/",
        {
            "app": app.pk,
            "file": SimpleUploadedFile("cycles.txt", SAMPLE.read_bytes()),
            "build_version": "8.0.3",
        },
    )
    assert response.status_code == 302
    by_page = Upload.objects.get(source=Upload.PAGE)
    assert by_page.status == Upload.DONE
    assert by_page.counts == {"cycles": 5, "dropped": 1, "clusters": 4}

    # The same cycles from another device, as a file through the command.
    path = tmp_path / "device2.txt"
    path.write_bytes(SAMPLE.read_bytes() + b"\n")
    call_command(
        "import_snapshot", str(path), app=str(app.pk), build_version="8.0.4", device_id="D-2"
    )
    assert Upload.objects.get(source=Upload.COMMAND).status == Upload.DONE
    chat = Cluster.objects.get(key=["ChatDataSource", "ChatViewController"])
    # Two chat loops per report, two reports, two builds.
    assert (chat.occurrences, chat.builds, chat.cycles) == (4, 2, 2)
    assert str(chat.first_seen_build) == "8.0.3" and str(chat.last_seen_build) == "8.0.4"
