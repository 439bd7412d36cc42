"""The pages about names: the banner of a mostly unsymbolicated snapshot, the missing debug files
of a snapshot and of a build (with the upload command), and the app's debug files."""

from __future__ import annotations

import re

import pytest

from memdash.allocations.models import Snapshot
from memdash.core.models import Membership
from memdash.core.writes import apps as core_services
from memdash.symbols.logic.names import debug_file_kind
from tests.symbols.documents import by_address
from tests.symbols.helpers import ELF, ELF_BUILD_ID, ELF_DEBUG_ID
from tests.symbols.test_symbolication import post_debug_file, stored


@pytest.mark.django_db
def test_missing_then_named(
    client, member_client, app, ingest_secret, upload, django_capture_on_commit_callbacks
):
    snapshot = stored(upload, by_address())
    page = member_client.get(snapshot.get_absolute_url()).content.decode()
    # 704 of 17,088 bytes are on stacks through unnamed frames: not "mostly", but said.
    assert 'id="unsymbolicated"' not in page and "missing debug files" in page
    missing = member_client.get(f"/snapshots/{snapshot.pk}/symbols/").content.decode()
    assert "chat_cache.elf" in missing and ELF_DEBUG_ID.upper() in missing
    assert "x86_64" in missing and "704" in missing
    assert f"upload_debug_files --app {app.bundle_id}" in missing
    api = member_client.get(f"/api/v1/snapshots/{snapshot.pk}/symbols").json()
    assert api["images"] == [
        {"image": "chat_cache.elf", "debug_id": ELF_DEBUG_ID, "arch": "x86_64", "system": False,
         "frames": 4, "bytes": 704, "snapshots": 1, "debug_file": None},
    ]  # fmt: skip
    build_page = member_client.get(
        f"/apps/{app.pk}/builds/{snapshot.build_id}/symbols/"
    ).content.decode()
    assert "chat_cache.elf" in build_page
    # The build's page links to it.
    build_detail = member_client.get(f"/apps/{app.pk}/builds/{snapshot.build_id}/").content
    link = f'href="/apps/{app.pk}/builds/{snapshot.build_id}/symbols/" id="missing-debug-files"'
    assert link in build_detail.decode()

    post_debug_file(client, app, ingest_secret, ELF, django_capture_on_commit_callbacks)
    named = member_client.get(f"/snapshots/{snapshot.pk}/symbols/").content.decode()
    assert 'id="all-named"' in named
    files = member_client.get(f"/apps/{app.pk}/debug-files/").content.decode()
    assert ELF_DEBUG_ID in files and "chat_cache.elf" in files
    assert str(snapshot.build) in files  # the builds that use it


@pytest.mark.django_db
def test_a_mostly_unsymbolicated_snapshot_says_so(member_client, upload):
    doc = by_address()
    doc["allocations"] = [r for r in doc["allocations"] if r.get("stack") is not None]
    snapshot = stored(upload, doc)
    assert Snapshot.objects.get(pk=snapshot.pk).unsymbolicated_bytes == 704
    page = member_client.get(snapshot.get_absolute_url()).content.decode()
    assert 'id="unsymbolicated"' in page and "100% of this snapshot" in page


@pytest.mark.django_db
def test_pages_are_for_members_only(outsider_client, upload, app):
    snapshot = stored(upload, by_address())
    assert outsider_client.get(f"/snapshots/{snapshot.pk}/symbols/").status_code == 404
    assert outsider_client.get(f"/apps/{app.pk}/debug-files/").status_code == 404


def _missing_page(member_client, snapshot: Snapshot) -> str:
    return member_client.get(f"/snapshots/{snapshot.pk}/symbols/").content.decode()


def _commands(page: str) -> list[str]:
    return re.findall(r'<pre class="command[^"]*">(.*?)</pre>', page, re.S)


@pytest.mark.django_db
def test_the_upload_command_of_an_android_library_is_the_so(member, member_client, upload):
    """An Android app's `libchat.so`: the unstripped .so (or its .sym) under its own name, never
    a dSYM; with the build id readelf shows (its first 16 bytes: tests/symbols/helpers.py)."""
    android = core_services.get_or_create_app("com.example.chat", "android", "Chat")
    core_services.add_member(android, member, Membership.ADMIN)
    secret = core_services.create_ingest_key(android)[1]
    doc = by_address()
    doc["app"]["platform"] = "android"
    doc["images"][0]["name"] = "libchat.so"
    snapshot = stored(lambda body: upload(body, secret=secret), doc)
    page = _missing_page(member_client, snapshot)
    (command,) = _commands(page)
    assert command.splitlines() == [
        'python manage.py upload_debug_files --app com.example.chat --name "libchat.so" '
        '"libchat.so"',
        'curl -H "Authorization: Bearer $MEMDASH_KEY" --data-binary @"libchat.so" \\',
        f'     "http://testserver/api/v1/apps/{android.pk}/debug-files'
        '?name=libchat.so&amp;filename=libchat.so"',
    ]
    assert 'Breakpad <span class="mono">libchat.so.sym' in page
    assert f'starts with <span class="mono">{ELF_BUILD_ID[:32]}</span>' in page
    assert ".dSYM" not in page and "mdfind" not in page


@pytest.mark.django_db
def test_the_upload_command_of_an_ios_image_is_its_dsym(member_client, upload):
    doc = by_address()
    doc["images"][0]["name"] = "Chat"  # the app's executable: no suffix, an iOS app
    snapshot = stored(upload, doc)
    page = _missing_page(member_client, snapshot)
    (command,) = _commands(page)
    assert command.splitlines() == [
        'python manage.py upload_debug_files --app com.example.chat "Chat.dSYM"',
        'curl -H "Authorization: Bearer $MEMDASH_KEY" --data-binary @"Chat.dSYM.zip" \\',
        f'     "http://testserver/api/v1/apps/{snapshot.app_id}/debug-files'
        '?filename=Chat.dSYM.zip"',
    ]
    assert f'mdfind "com_apple_xcode_dsym_uuids == {ELF_DEBUG_ID.upper()}"' in page
    assert "readelf" not in page


@pytest.mark.django_db
def test_the_kind_of_debug_file_an_image_needs():
    assert [
        debug_file_kind(name, platform)
        for name, platform in [
            ("libchat.so", "ios"),  # the name says ELF, whatever the app
            ("libc.so.6", "other"),
            ("chat_cache.elf", "ios"),
            ("libchat.dylib", "android"),  # the name says Mach-O
            ("Chat", "ios"),  # no suffix: the platform
            ("Chat", "macos"),
            ("app_process64", "android"),
            ("chat-server", "linux"),
        ]
    ] == ["elf", "elf", "elf", "dsym", "dsym", "dsym", "elf", "elf"]


@pytest.mark.django_db
def test_the_upload_example_names_the_platforms_debug_file(member_client, app, member):
    ios = member_client.get(f"/apps/{app.pk}/debug-files/").content.decode()
    assert "upload_debug_files --app com.example.chat --platform ios Chat.app.dSYM" in ios
    android = core_services.get_or_create_app("com.example.chat", "android", "Chat for Android")
    core_services.add_member(android, member)
    page = member_client.get(f"/apps/{android.pk}/debug-files/").content.decode()
    # the bundle id names both apps now: the platform says which
    assert "upload_debug_files --app com.example.chat --platform android libchat.so" in page
    assert "dSYM" not in page
