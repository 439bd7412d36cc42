"""Shared fixtures: an app with a member, an outsider, an ingest key, and an upload helper."""

from __future__ import annotations

import os

import orjson
import pytest
from django.test import Client
from rest_framework.test import APIClient

from memdash.core import services as core_services
from memdash.core.models import Membership

# Browser tests drive a live server from the test thread.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(autouse=True)
def _media_root(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "uploads"


@pytest.fixture
def app(db):
    return core_services.get_or_create_app("com.example.chat", "ios", "Chat")


@pytest.fixture
def member(db, app, django_user_model):
    user = django_user_model.objects.create_user("member", password="member-pass-123")
    core_services.add_member(app, user, Membership.ADMIN)
    return user


@pytest.fixture
def outsider(db, django_user_model):
    return django_user_model.objects.create_user("outsider", password="outsider-pass-123")


@pytest.fixture
def member_client(member):
    client = Client()
    client.force_login(member)
    return client


@pytest.fixture
def outsider_client(outsider):
    client = Client()
    client.force_login(outsider)
    return client


@pytest.fixture
def api_client(member):
    client = APIClient()
    client.force_authenticate(member)
    return client


@pytest.fixture
def ingest_secret(app):
    return core_services.create_ingest_key(app)[1]


@pytest.fixture
def upload(client, ingest_secret):
    """POST /api/v1/uploads: a dict or list is sent as JSON, bytes as they are."""

    def send(body, secret=None, content_type="application/json", query="", **extra):
        data = body if isinstance(body, bytes) else orjson.dumps(body)
        return client.post(
            "/api/v1/uploads" + (f"?{query}" if query else ""),
            data=data,
            content_type=content_type,
            HTTP_AUTHORIZATION=f"Bearer {secret or ingest_secret}",
            **extra,
        )

    return send
