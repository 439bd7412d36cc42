"""Who uploads: a viewer only reads the upload pages, a member uploads through them. An ingest
key reads the status of its own uploads (the URL its 202 answered), not another key's."""

from __future__ import annotations

import orjson
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from memdash.core.models import Membership
from memdash.core.writes import apps as services
from memdash.ingest.models import Upload
from tests.samples import spec_example

pytestmark = pytest.mark.django_db


def signed_in_as(app, django_user_model, role: str) -> Client:
    user = django_user_model.objects.create_user(f"a-{role}")
    services.add_member(app, user, role)
    client = Client()
    client.force_login(user)
    return client


def snapshot_file() -> SimpleUploadedFile:
    return SimpleUploadedFile("s.json", orjson.dumps(spec_example()), "application/json")


def test_a_viewer_reads_the_upload_pages_but_cannot_upload(app, django_user_model):
    viewer = signed_in_as(app, django_user_model, Membership.VIEWER)
    for url in ("/uploads/", f"/apps/{app.pk}/uploads/"):
        page = viewer.get(url)
        assert page.status_code == 200
        assert b'id="upload-form"' not in page.content and b'id="read-only"' in page.content
        refused = viewer.post(url, {"app": app.pk, "file": snapshot_file()})
        assert refused.status_code == 403
    assert not Upload.objects.exists()


def test_a_member_uploads_through_the_page(app, django_user_model):
    member = signed_in_as(app, django_user_model, Membership.MEMBER)
    page = member.get(f"/apps/{app.pk}/uploads/")
    assert b'id="upload-form"' in page.content
    response = member.post(f"/apps/{app.pk}/uploads/", {"app": app.pk, "file": snapshot_file()})
    assert response.status_code == 302
    assert Upload.objects.get().status == Upload.DONE


def test_a_viewer_here_and_member_there_uploads_only_there(app, django_user_model):
    there = services.get_or_create_app("com.example.there", "android")
    user = django_user_model.objects.create_user("mixed")
    services.add_member(app, user, Membership.VIEWER)
    services.add_member(there, user, Membership.MEMBER)
    client = Client()
    client.force_login(user)
    assert client.post("/uploads/", {"app": app.pk, "file": snapshot_file()}).status_code == 200
    assert not Upload.objects.exists()  # the form offers `there` only: `app` is no valid choice
    assert client.post(f"/apps/{app.pk}/uploads/", {"app": app.pk}).status_code == 403


def test_an_ingest_key_reads_its_own_upload_status(upload, app, ingest_secret):
    accepted = upload(spec_example())
    assert accepted.status_code == 202
    status_url = accepted.json()["url"]
    assert status_url.endswith(f"/api/v1/uploads/{accepted.json()['id']}")
    api = APIClient()
    answer = api.get(status_url, HTTP_AUTHORIZATION=f"Bearer {ingest_secret}")
    assert answer.status_code == 200
    assert answer.json()["id"] == accepted.json()["id"] and answer.json()["status"] == "done"
    # Another key, of this app or another, does not see it; nor does an unknown key.
    _, sibling = services.create_ingest_key(app, "sibling")
    other_app = services.get_or_create_app("com.other", "ios")
    _, foreign = services.create_ingest_key(other_app)
    for secret in (sibling, foreign):
        assert api.get(status_url, HTTP_AUTHORIZATION=f"Bearer {secret}").status_code == 404
    unknown = api.get(status_url, HTTP_AUTHORIZATION="Bearer mdk_unknown")
    assert unknown.status_code == 401 and unknown["WWW-Authenticate"] == "Bearer"
    assert api.get(status_url).status_code in (401, 403)  # no credentials at all


def test_an_ingest_key_reads_nothing_else(app, ingest_secret):
    api = APIClient()
    bearer = f"Bearer {ingest_secret}"
    assert api.get("/api/v1/apps", HTTP_AUTHORIZATION=bearer).status_code in (401, 403)
    assert api.get(f"/api/v1/apps/{app.pk}/builds", HTTP_AUTHORIZATION=bearer).status_code in (
        401,
        403,
    )
