"""A user of one app cannot see another app's builds, snapshots or uploads, by page or API."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from memdash.churn.reads import app_threshold_percent, churn_weights
from memdash.core.models import ApiToken, IngestKey
from memdash.core.writes import apps as services
from tests.samples import spec_example

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored(upload, app):
    body = upload(spec_example()).json()
    snapshot_id = body["snapshot"]["id"]
    build_id = app.builds.get().pk
    return {"upload": body["id"], "snapshot": snapshot_id, "build": build_id, "app": app.pk}


def urls(ids: dict) -> list[str]:
    return [
        f"/apps/{ids['app']}/",
        f"/apps/{ids['app']}/builds/{ids['build']}/",
        f"/snapshots/{ids['snapshot']}/",
        f"/uploads/{ids['upload']}/",
        f"/apps/{ids['app']}/uploads/",
        f"/apps/{ids['app']}/settings/",
        f"/api/v1/apps/{ids['app']}/builds",
        f"/api/v1/apps/{ids['app']}/builds/{ids['build']}/statistics",
        f"/api/v1/snapshots/{ids['snapshot']}",
        f"/api/v1/snapshots/{ids['snapshot']}/statistics",
        f"/api/v1/uploads/{ids['upload']}",
    ]


def test_member_sees_everything(stored, member_client):
    for url in urls(stored):
        assert member_client.get(url).status_code == 200, url


def test_outsider_sees_nothing(stored, outsider_client):
    for url in urls(stored):
        assert outsider_client.get(url).status_code == 404, url
    assert outsider_client.get("/api/v1/apps").json() == []
    assert "com.example.chat" not in outsider_client.get("/uploads/").content.decode()


def test_superuser_sees_every_app(stored, django_user_model, client):
    client.force_login(django_user_model.objects.create_superuser("root", password="x" * 12))
    assert client.get(f"/snapshots/{stored['snapshot']}/").status_code == 200


def test_anonymous_is_sent_to_login(stored, client):
    response = client.get(f"/snapshots/{stored['snapshot']}/")
    assert response.status_code == 302 and "/login/" in response["Location"]
    assert client.get(f"/api/v1/snapshots/{stored['snapshot']}").status_code in (401, 403)


def test_personal_api_token(stored, member, outsider):
    _, secret = services.create_api_token(member)
    assert ApiToken.objects.get().hashed != secret  # only the hash is stored
    reader = APIClient(HTTP_AUTHORIZATION=f"Token {secret}")
    assert reader.get(f"/api/v1/snapshots/{stored['snapshot']}").status_code == 200
    _, outsider_secret = services.create_api_token(outsider)
    other = APIClient(HTTP_AUTHORIZATION=f"Token {outsider_secret}")
    assert other.get(f"/api/v1/snapshots/{stored['snapshot']}").status_code == 404
    bad = APIClient(HTTP_AUTHORIZATION="Token mdt_wrong")
    assert bad.get("/api/v1/apps").status_code == 401


def test_create_ingest_key_command_prints_the_key_once():
    out = io.StringIO()
    call_command("create_ingest_key", "com.example.new", platform="android", stdout=out)
    secret = out.getvalue().strip()
    key = IngestKey.objects.get()
    assert key.app.bundle_id == "com.example.new" and key.app.platform == "android"
    assert secret.startswith("mdk_") and key.hashed != secret
    assert IngestKey.objects.find(secret) == key


def test_keys_listed_and_revoked_on_the_settings_page(member_client, app):
    response = member_client.post(f"/apps/{app.pk}/settings/keys/", {"name": "CI"})
    assert response.status_code == 302
    page = member_client.get(f"/apps/{app.pk}/settings/").content.decode()
    key = IngestKey.objects.get(app=app)
    assert key.prefix in page and "new-secret" in page
    # The secret is shown once only.
    assert "new-secret" not in member_client.get(f"/apps/{app.pk}/settings/").content.decode()
    # Revoking asks first: the first POST answers a confirmation page, the key still works.
    asked = member_client.post(f"/apps/{app.pk}/settings/keys/{key.pk}/revoke/")
    assert asked.status_code == 200 and "Revoke this ingest key?" in asked.content.decode()
    key.refresh_from_db()
    assert key.is_active
    member_client.post(f"/apps/{app.pk}/settings/keys/{key.pk}/revoke/", {"confirm": "1"})
    key.refresh_from_db()
    assert not key.is_active


def test_viewer_cannot_create_keys(app, outsider, client):
    services.add_member(app, outsider, "viewer")
    client.force_login(outsider)
    assert client.post(f"/apps/{app.pk}/settings/keys/", {"name": "x"}).status_code == 403
    assert not IngestKey.objects.exists()


def test_forms_need_csrf(app, member):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(member)
    assert strict.post(f"/apps/{app.pk}/settings/keys/", {"name": "x"}).status_code == 403


def test_churn_weights_are_edited_by_admins(member_client, app):
    response = member_client.post(
        f"/apps/{app.pk}/settings/churn/",
        {"calloc": 2, "free": 0.5, "malloc": 1, "realloc": 4, "threshold_percent": 7.5},
    )
    assert response.status_code == 302
    assert churn_weights(app) == {"calloc": 2, "free": 0.5, "malloc": 1, "realloc": 4}
    assert app_threshold_percent(app) == 7.5
    bad = member_client.post(f"/apps/{app.pk}/settings/churn/", {"calloc": -1})
    assert bad.status_code == 302
    assert app_threshold_percent(app) == 7.5


def test_settings_page_title_is_plain_text(member_client, app):
    page = member_client.get(f"/apps/{app.pk}/settings/").content.decode()
    assert "<title>Settings · Chat · memdash</title>" in page
    assert page.count("Allocator churn") == 1
