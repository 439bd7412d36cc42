"""The pages about names: the banner of a mostly unsymbolicated snapshot, the missing debug files
of a snapshot and of a build (with the upload command), and the app's debug files."""

from __future__ import annotations

import pytest

from memdash.allocations.models import Snapshot
from tests.symbols.documents import by_address
from tests.symbols.helpers import ELF, ELF_DEBUG_ID
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
