"""The platform as the pages write it ("iOS", "Android"), in the app list and each app's header;
the API keeps the names the uploads use ("ios")."""

from __future__ import annotations

import re

import pytest

from memdash.core.models import PLATFORM_NAMES, PLATFORMS
from memdash.core.writes import apps as core_services

pytestmark = pytest.mark.django_db


def test_every_platform_has_its_written_name():
    assert set(PLATFORM_NAMES) == set(PLATFORMS)
    assert (PLATFORM_NAMES["ios"], PLATFORM_NAMES["android"]) == ("iOS", "Android")


def test_the_list_and_the_header_write_the_platform(member_client, app, member):
    android = core_services.get_or_create_app("com.example.chat", "android", "Chat for Android")
    core_services.add_member(android, member)
    listing = member_client.get("/").content.decode()
    cells = re.findall(r"<td>(iOS|Android|ios|android)</td>", listing)
    assert sorted(cells) == ["Android", "iOS"]
    header = member_client.get(f"/apps/{android.pk}/cycles/").content.decode()
    assert '<span class="app-name">Chat for Android <small>Android</small></span>' in header
    apps = member_client.get("/api/v1/apps").json()
    assert {a["platform"] for a in apps} == {"ios", "android"}
