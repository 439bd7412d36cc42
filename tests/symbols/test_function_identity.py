"""Every named frame of an app is its function's frame (symbol, image, inlined), as pprof's
`function` granularity and Instruments merge call sites: `main` sent by the device with an
address, a file and a line, and `main` named from a debug file at another offset, are one root
in the snapshot's call tree, the build's and build compare. Snapshots stored under the older
rule (named frames keyed by place) are keyed again by the symbolication job and by
`manage.py resymbolicate`. Bytes below are worked out from the documents' rows."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from memdash.allocations.logic import symbolicate
from memdash.allocations.logic.document.parse import FrameInfo, ParsedSnapshot
from memdash.allocations.logic.symbolicate import FRAME_IDENTITY, frame_id, key_by_function
from memdash.allocations.models import CallTreeNode, Frame, Snapshot
from memdash.allocations.writes import snapshots as services
from memdash.core.logic.numbers import hash64
from memdash.symbols.models import SymbolicationJob
from tests.symbols.documents import LOAD, _doc, by_address
from tests.symbols.helpers import ELF
from tests.symbols.test_symbolication import post_debug_file, stored

SOURCE = "/src/chat_cache.cpp"
MALLOC_64 = "Malloc 64 Bytes"


def named_with_places(version: str = "1.0") -> dict:
    """`main` named by the device at two call sites (lines 38 and 40), with addresses, file and
    line: main@38 → store_image → malloc (5 × 64 B), main@40 → malloc (1 × 64 B)."""
    frames = [
        {"symbol": "main", "image": 0, "address": hex(LOAD + 0x11BE), "file": SOURCE, "line": 38},
        {"symbol": "main", "image": 0, "address": hex(LOAD + 0x11D0), "file": SOURCE, "line": 40},
        {"symbol": "store_image", "image": 0, "address": hex(LOAD + 0x119C), "file": SOURCE,
         "line": 33},
        {"symbol": "malloc", "image": 1},
    ]  # fmt: skip
    stacks = [[None, 0], [0, 2], [1, 3], [None, 1], [3, 3]]
    rows = [
        {"category": MALLOC_64, "stack": 2, "persistent": 5, "persistent_bytes": 320},
        {"category": MALLOC_64, "stack": 4, "persistent": 1, "persistent_bytes": 64},
    ]
    return _doc(version, "2026-11-20T09:00:00+00:00", frames, stacks, rows)


def roots(api_client, url: str) -> list[tuple[str, int]]:
    body = api_client.get(url).json()
    return sorted((v["symbol"], v["bytes"]) for v in body["children"])


def old_frame_id(app_id: int, frame: FrameInfo) -> int:
    """The rule before FRAME_IDENTITY 1: a named frame was keyed by its place too (a frame named
    from a debug file, by function)."""
    if frame.known_id is not None:
        return frame.known_id
    if frame.symbolicated:
        return hash64("f", app_id, frame.symbol, frame.image, None, None, "", None)
    return hash64("f", app_id, frame.symbol, frame.image, frame.offset, frame.address,
                  frame.file, frame.line)  # fmt: skip


def stored_the_old_way(upload, doc, monkeypatch) -> Snapshot:
    """Stored as memdash stored it before named frames were keyed by function."""
    with monkeypatch.context() as patch:
        patch.setattr(symbolicate, "frame_id", old_frame_id)
        patch.setattr(services, "key_by_function", lambda parsed: 0)
        snapshot = stored(upload, doc)
    Snapshot.objects.filter(pk=snapshot.pk).update(frame_identity=0)
    return snapshot


def test_a_function_at_several_call_sites_is_one_frame_and_one_node():
    parsed = ParsedSnapshot("", "", "", "", "", "", captured_at=None)  # type: ignore[arg-type]
    parsed.frames = [
        FrameInfo("main", "Chat", offset=0x10, file=SOURCE, line=38),
        FrameInfo("main", "Chat", offset=0x20, file=SOURCE, line=40),
        FrameInfo("leaf", "Chat", offset=0x30, file=SOURCE, line=7),
        FrameInfo("leaf", "Chat", offset=0x40, line=7),  # no file: agrees on the line
        FrameInfo("", "Chat", offset=0x50),  # no name: keyed by its offset
    ]
    parsed.stack_parents = [None, 0, None, 2, 3]
    parsed.stack_frames = [0, 2, 1, 3, 4]
    parsed.rows = {("c", 1, None, None): [1, 10, 0, 0], ("c", 3, None, None): [2, 20, 0, 0],
                   ("c", 4, None, None): [4, 40, 0, 0]}  # fmt: skip
    assert key_by_function(parsed) == 4
    # main@38 → leaf and main@40 → leaf → <offset 0x50>: one main, one leaf below it.
    assert parsed.stack_parents == [None, 0, 1]
    main, leaf, unnamed = (parsed.frames[i] for i in parsed.stack_frames)
    assert (main.symbol, main.offset, main.file, main.line) == ("main", None, SOURCE, None)
    assert (leaf.symbol, leaf.offset, leaf.file, leaf.line) == ("leaf", None, SOURCE, 7)
    assert unnamed.offset == 0x50
    # the rows of both leaf nodes are one row: 10 + 20 bytes
    assert parsed.rows == {("c", 1, None, None): [3, 30, 0, 0], ("c", 2, None, None): [4, 40, 0, 0]}
    assert frame_id(1, main) == frame_id(1, FrameInfo("main", "Chat"))
    assert key_by_function(parsed) == 0  # keyed already


@pytest.mark.django_db
def test_main_by_name_with_a_line_and_main_named_from_a_debug_file_are_one_root(
    client, api_client, app, ingest_secret, upload, django_capture_on_commit_callbacks
):
    named = stored(upload, named_with_places("1.0"))
    # main@38 and main@40 are one root: 320 + 64 bytes.
    assert roots(api_client, f"/api/v1/snapshots/{named.pk}/calltree") == [("main", 384)]
    main = Frame.objects.get(
        id=CallTreeNode.objects.get(snapshot_id=named.pk, parent_id=None).frame_id
    )
    assert (main.offset, main.address, main.file, main.line) == (None, None, SOURCE, None)

    by_offset = stored(upload, by_address("1.0"))  # named by the job below
    post_debug_file(client, app, ingest_secret, ELF, django_capture_on_commit_callbacks)
    later = stored(upload, by_address("2.0"))  # named at ingest
    # by_address: 640 + 64 bytes under main, 16384 without a stack
    for snapshot in (by_offset, later):
        url = f"/api/v1/snapshots/{snapshot.pk}/calltree"
        assert roots(api_client, url) == [("(no stack)", 16384), ("main", 704)]
    assert CallTreeNode.objects.filter(parent_id=None).values("node_id").distinct().count() == 1

    build = named.build
    url = f"/api/v1/apps/{app.pk}/builds/{build.pk}/calltree?aggregate=sum"
    assert roots(api_client, url) == [("(no stack)", 16384), ("main", 384 + 704)]
    # per snapshot (the default), as the diff below reads 1.0: main's median of 384 and 704;
    # the 16384 bytes without a stack are in one of the two snapshots: (16384 + 0) / 2
    per_snapshot = url.removesuffix("?aggregate=sum")
    assert roots(api_client, per_snapshot) == [("(no stack)", 8192), ("main", 544)]

    refs = {"base": "build:1.0:1", "target": "build:2.0:1", "app": app.pk}
    diff = api_client.get("/api/v1/diff/calltree", refs).json()["nodes"]
    mains = [n for n in diff if n["symbol"] == "main"]
    assert [n["symbol"] for n in diff if "0x" in n["symbol"]] == []
    # 1.0: main is 384 in one snapshot and 704 in the other, median 544; 2.0: 704.
    assert [(n["base_bytes"], n["target_bytes"]) for n in mains] == [(544, 704)]


@pytest.mark.django_db
def test_snapshots_of_the_older_rule_are_keyed_again_by_the_job(
    client, api_client, app, ingest_secret, upload, monkeypatch, django_capture_on_commit_callbacks
):
    old = stored_the_old_way(upload, named_with_places("1.0"), monkeypatch)
    url = f"/api/v1/snapshots/{old.pk}/calltree"
    assert roots(api_client, url) == [("main", 64), ("main", 320)]  # two frames, two roots
    by_offset = stored(upload, by_address("1.0"))
    assert by_offset.frame_identity == FRAME_IDENTITY

    response = post_debug_file(client, app, ingest_secret, ELF, django_capture_on_commit_callbacks)
    job = SymbolicationJob.objects.get(pk=response.json()["symbolication"]["id"])
    # by_offset named (4 frames), the old snapshot keyed again (nothing to name in it)
    assert (job.state, job.snapshots_done, job.frames_named) == ("done", 2, 4)
    old.refresh_from_db()
    assert (old.frame_identity, old.symbols_version) == (FRAME_IDENTITY, 1)
    assert roots(api_client, url) == [("main", 384)]
    build_url = f"/api/v1/apps/{app.pk}/builds/{old.build_id}/calltree?aggregate=sum"
    assert roots(api_client, build_url) == [("(no stack)", 16384), ("main", 384 + 704)]
    # The responsible caller (the first app frame up the heaviest stack, main → store_image →
    # malloc) is store_image's function frame: its one call site's line, 33.
    (row,) = api_client.get(f"/api/v1/snapshots/{old.pk}/statistics").json()["rows"]
    assert (row["responsible_caller"], row["responsible_frame"]["line"]) == ("store_image", 33)


@pytest.mark.django_db
def test_the_resymbolicate_command_keys_older_snapshots(api_client, app, upload, monkeypatch):
    old = stored_the_old_way(upload, named_with_places("1.0"), monkeypatch)
    current = stored(upload, named_with_places("2.0"))
    out = []
    call_command("resymbolicate", "--all", stdout=Writer(out))
    # one snapshot to key (the other is current), no debug file: nothing named
    assert out == ["com.example.chat: 1 of 1 snapshots brought up to date, 0 frames named (done)"]
    assert Snapshot.objects.get(pk=old.pk).frame_identity == FRAME_IDENTITY
    assert roots(api_client, f"/api/v1/snapshots/{old.pk}/calltree") == [("main", 384)]

    def main_of(snapshot: Snapshot) -> int:
        return CallTreeNode.objects.get(snapshot_id=snapshot.pk, parent_id=None).frame_id

    assert main_of(old) == main_of(current)
    out.clear()
    call_command("resymbolicate", "--app", app.bundle_id, stdout=Writer(out))
    assert out == ["com.example.chat: up to date"]


class Writer:
    """A stdout for call_command that keeps its lines."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def write(self, text: str) -> None:
        self.lines += [line for line in text.splitlines() if line]

    def flush(self) -> None:
        pass
