"""The upload pages name what an upload made: one object by its id, the rest by their counts."""

from __future__ import annotations

import pytest

from memdash.ingest.models import Upload
from tests.foom.helpers import ago, ended, run, sessions_doc

pytestmark = pytest.mark.django_db


def test_result_labels():
    snapshot = Upload(result_kind="snapshot", result_id=21, counts={"rows": 14})
    assert snapshot.result_label == "snapshot #21"
    sessions = Upload(result_kind="sessions", counts={"sessions": 1200, "created": 2})
    assert sessions.result_label == "sessions: 1,200 stored"
    churn = Upload(result_kind="churn", counts={"runs": 4, "scenario_runs": 12})
    assert churn.result_label == "churn: 4 runs stored"
    assert Upload(result_kind="something").result_label == "something"  # no count to say


def test_sessions_upload_links_to_the_foom_page(upload, member_client, app):
    doc = sessions_doc(
        run("a-1", ago(days=3), end=ended(user_quit=True)),
        run("a-2", ago(days=2)),
    )
    body = upload(doc).json()
    assert body["status"] == "done"
    stored = Upload.objects.get(pk=body["id"])
    assert stored.result_id is None  # a sessions upload makes no single object
    for url in (f"/apps/{app.pk}/uploads/", f"/uploads/{stored.pk}/"):
        html = member_client.get(url).content.decode()
        assert f'<a href="/apps/{app.pk}/foom/"' in html
        assert "sessions: 2 stored</a>" in html
        assert "#None" not in html


def test_the_upload_page_takes_a_pasted_report_or_says_what_is_missing(app, member_client):
    empty = member_client.post("/uploads/", {"app": app.pk, "build_version": "8.0.4"})
    assert empty.status_code == 200
    assert "Choose a file, or paste a report." in empty.content.decode()
    leaks = (
        "leaks Report Version: 4.0\nProcess 7: 1 leak for 48 total leaked bytes.\n\n"
        "    1 (48 bytes) ROOT LEAK: <ChatMessage 0x600002d0c1e0> [48]\n"
    )
    pasted = member_client.post(
        "/uploads/", {"app": app.pk, "pasted": leaks, "build_version": "8.0.4"}
    )
    assert pasted.status_code == 302
    upload = Upload.objects.get()
    assert (upload.status, upload.format, upload.filename) == ("done", "xcode.leaks", "pasted.txt")
