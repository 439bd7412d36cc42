"""Fixtures of the FOOM tests: an Android variant of the test app, with its ingest key."""

from __future__ import annotations

import pytest

from memdash.core.models import Membership
from memdash.core.writes import apps as core_services


@pytest.fixture
def android(db, member):
    app = core_services.get_or_create_app("com.example.chat", "android", "Chat for Android")
    core_services.add_member(app, member, Membership.ADMIN)
    return app


@pytest.fixture
def android_secret(android):
    return core_services.create_ingest_key(android)[1]
