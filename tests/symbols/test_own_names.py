"""A lone debug file uploaded without a name is named as the object names itself: an ELF
library by its SONAME, a dylib by its install name (readelf / llvm-objdump in PROVENANCE.md),
so its named frames are the frames of uploads that named the library."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdash.symbols.logic.names import own_name
from memdash.symbols.models import DebugFile
from tests.symbols.helpers import DATA, DSYM_ARM64_UUID, ELF, symbolizer_frames
from tests.symbols.test_symbolication import stored, tree

SO = DATA / "libchat_cache.so"
DYLIB = DATA / "libchat_cache.arm64.dylib"
SO_BUILD_ID = "26f5d723b207a4cd99dda4e63e42e1fdabc273eb"  # `file` in PROVENANCE.md


def test_own_names_from_the_headers(tmp_path):
    assert own_name(str(SO), "elf") == "libchat_cache.so"
    assert own_name(str(DYLIB), "macho") == "libchat_cache.dylib"  # @rpath/libchat_cache.dylib
    assert own_name(str(ELF), "elf") == ""  # an executable has no SONAME
    cut = tmp_path / "cut.so"
    cut.write_bytes(SO.read_bytes()[:200])
    assert own_name(str(cut), "elf") == ""


def post_raw(client, app, secret, path: Path, query: str = ""):
    """The file as a raw body with no name, as `curl --data-binary @file` without ?filename=."""
    return client.post(
        f"/api/v1/apps/{app.pk}/debug-files{query}",
        data=path.read_bytes(),
        content_type="application/octet-stream",
        HTTP_AUTHORIZATION=f"Bearer {secret}",
    )


@pytest.mark.django_db
def test_lone_files_are_named_by_their_own_name(client, app, ingest_secret):
    so = post_raw(client, app, ingest_secret, SO).json()["objects"]
    dylib = post_raw(client, app, ingest_secret, DYLIB).json()["objects"]
    assert [(o["image"], o["code_id"]) for o in so] == [("libchat_cache.so", SO_BUILD_ID)]
    assert [(o["image"], o["debug_id"]) for o in dylib] == [
        ("libchat_cache.dylib", DSYM_ARM64_UUID.lower())
    ]
    # A name given with the upload still wins; an executable has none of its own.
    DebugFile.objects.all().delete()
    named = post_raw(client, app, ingest_secret, SO, "?name=libchat.so").json()["objects"]
    assert named[0]["image"] == "libchat.so"
    executable = post_raw(client, app, ingest_secret, ELF).json()["objects"]
    assert executable[0]["image"] == executable[0]["debug_id"]


def document(frames: list, stacks: list, captured_at: str) -> dict:
    return {
        "format": "memdash.snapshot", "version": 1,
        "app": {"id": "com.example.chat", "platform": "ios"},
        "build": {"version": "3.0", "number": "1"}, "captured_at": captured_at,
        "images": [{"name": "libchat_cache.so", "uuid": SO_BUILD_ID, "load_address": "0x7000000000",
                    "arch": "x86_64"}],
        "frames": frames, "stacks": stacks,
        "allocations": [{"category": "Malloc 64 Bytes", "stack": len(stacks) - 1,
                         "persistent": 1, "persistent_bytes": 64}],
    }  # fmt: skip


@pytest.mark.django_db
def test_frames_named_through_the_soname_merge_with_frames_named_on_the_device(
    client, app, ingest_secret, upload, django_capture_on_commit_callbacks
):
    main, store_image = symbolizer_frames("libchat_cache.so", 0x11AE)[0][0], "store_image"
    assert symbolizer_frames("libchat_cache.so", 0x1197)[0][0] == store_image
    addresses = stored(upload, document(
        [{"image": 0, "address": hex(0x7000000000 + o)} for o in (0x11AE, 0x1197)],
        [[None, 0], [0, 1]], "2026-11-20T10:00:00+00:00",
    ))  # fmt: skip
    names = stored(upload, document(
        [{"symbol": s, "image": 0} for s in (main, store_image)],
        [[None, 0], [0, 1]], "2026-11-20T11:00:00+00:00",
    ))  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        assert post_raw(client, app, ingest_secret, SO).status_code == 201
    assert (
        tree(addresses)
        == tree(names)
        == {
            (main,): (64, False),
            (main, store_image): (64, False),
        }
    )
