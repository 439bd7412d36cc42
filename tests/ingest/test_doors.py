"""The three doors (API, page, command) share one service and give the same snapshot."""

from __future__ import annotations

import gzip

import orjson
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from memdash.allocations import tasks as allocations_tasks
from memdash.allocations.models import BuildView, Snapshot
from memdash.core.logic import reading
from memdash.ingest.models import Upload
from tests.samples import spec_example

pytestmark = pytest.mark.django_db


def statistics_of(api_client, snapshot_id: int) -> dict:
    return api_client.get(f"/api/v1/snapshots/{snapshot_id}/statistics").json()


def page_upload(member_client, app, name: str, content: bytes, **fields):
    return member_client.post(
        f"/apps/{app.pk}/uploads/",
        {"app": app.pk, "file": SimpleUploadedFile(name, content), **fields},
    )


def test_each_door_alone_gives_the_same_statistics(
    upload, member_client, api_client, app, tmp_path, ingest_secret
):
    body = orjson.dumps(spec_example())
    by_api = upload(body).json()["snapshot"]["id"]
    expected = statistics_of(api_client, by_api)
    Snapshot.objects.all().delete()
    Upload.objects.all().delete()

    response = page_upload(member_client, app, "run.json.gz", gzip.compress(body))
    assert response.status_code == 302
    by_page = Upload.objects.get(source=Upload.PAGE)
    assert by_page.status == Upload.DONE and by_page.user.username == "member"
    assert statistics_of(api_client, by_page.result_id) == expected
    Upload.objects.all().delete()

    path = tmp_path / "run.json"
    path.write_bytes(body)
    call_command("import_snapshot", str(path), key=ingest_secret)
    by_command = Upload.objects.get(source=Upload.COMMAND)
    assert by_command.status == Upload.DONE
    assert statistics_of(api_client, by_command.result_id) == expected


def test_same_bytes_through_all_doors_are_one_snapshot(upload, member_client, app, tmp_path):
    body = orjson.dumps(spec_example())
    first = upload(body).json()
    page_upload(member_client, app, "again.json", body)
    path = tmp_path / "again.json"
    path.write_bytes(body)
    call_command("import_snapshot", str(path), app=str(app.pk))
    assert Snapshot.objects.count() == 1
    assert Upload.objects.count() == 1
    assert Upload.objects.get().pk == first["id"]


def test_multipart_api_upload(client, ingest_secret, api_client):
    body = orjson.dumps(spec_example())
    response = client.post(
        "/api/v1/uploads",
        {"file": SimpleUploadedFile("run.json", body)},
        HTTP_AUTHORIZATION=f"Bearer {ingest_secret}",
    )
    assert response.status_code == 202
    data = response.json()
    assert set(data) >= {"id", "status", "url"}
    status = api_client.get(data["url"]).json()
    assert status["status"] == "done" and status["snapshot"]["id"]
    assert status["counts"]["rows"] == 3  # four rows, two with the same key


def test_the_command_shows_each_phase_from_its_start_and_gunzips_once(
    tmp_path, app, capsys, monkeypatch
):
    """The progress lines (`phase [bar] seconds`, a line as each phase starts and ends) count
    from the process's start, so that start-up is a phase and the phases add up to the wait;
    the content decompressed for its digest is the one parsed (one pass over the gzip)."""
    passes = []
    pieces = reading.capped_pieces

    def counted(*args, **kwargs):
        passes.append(1)
        return pieces(*args, **kwargs)

    monkeypatch.setattr(reading, "capped_pieces", counted)
    path = tmp_path / "run.json.gz"
    path.write_bytes(gzip.compress(orjson.dumps(spec_example())))
    call_command("import_snapshot", str(path), app=app.bundle_id)
    marks = [line.split(": ", 1)[1].split() for line in capsys.readouterr().err.splitlines()]
    phases = [mark[0] for mark in marks]
    assert [p for i, p in enumerate(phases) if p not in phases[:i]] == [
        "start", "receive", "read", "parse", "validate", "store", "commit", "follow-up",
    ]  # fmt: skip
    seconds = [float(mark[-1].rstrip("s")) for mark in marks]
    assert seconds[0] == 0.0 and seconds == sorted(seconds) and seconds[-1] > 0
    assert marks[-1][:2] == ["follow-up", "[" + "#" * 20 + "]"]
    assert len(passes) == 1
    assert Upload.objects.get().status == Upload.DONE


@pytest.mark.django_db(transaction=True)
def test_the_command_answers_before_the_builds_tables_are_made(tmp_path, app, capsys, monkeypatch):
    """The snapshot's pages show it from the commit on: the command says what it stored, then
    makes the build's tables and summary (the embedded task backend runs them as queued)."""
    said_by_then = []
    queue = allocations_tasks.queue_build_tables

    def queued(build_id: int) -> None:
        said_by_then.append(capsys.readouterr().out)
        queue(build_id)

    monkeypatch.setattr(allocations_tasks, "queue_build_tables", queued)
    path = tmp_path / "run.json"
    path.write_bytes(orjson.dumps(spec_example()))
    call_command("import_snapshot", str(path), app=app.bundle_id)
    snapshot = Snapshot.objects.get()
    assert len(said_by_then) == 1 and f"imported as snapshot #{snapshot.pk}" in said_by_then[0]
    assert BuildView.objects.filter(build_id=snapshot.build_id).exists()  # made after


def test_command_reports_a_rejected_file(tmp_path, app):
    path = tmp_path / "bad.json"
    path.write_bytes(orjson.dumps(spec_example(version=9)))
    with pytest.raises(CommandError, match="1 of 1 files"):
        call_command("import_snapshot", str(path), app=app.bundle_id)
    assert Upload.objects.get().error_path == "version"


def test_command_refuses_unknown_key(tmp_path):
    path = tmp_path / "x.json"
    path.write_bytes(b"{}")
    with pytest.raises(CommandError, match="unknown or revoked"):
        call_command("import_snapshot", str(path), key="mdk_nope")


def test_upload_page_lists_status_and_error(upload, member_client, app):
    upload(spec_example(version=3))
    page = member_client.get(f"/apps/{app.pk}/uploads/").content.decode()
    assert "rejected" in page and "version" in page
