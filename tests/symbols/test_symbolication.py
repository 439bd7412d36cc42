"""Frames named when a debug file arrives, retroactively and at ingest: the same path by name
and by address is one path in the stored call tree, the build's tree and the responsible
callers; the inlined call is its own node; what is still unnamed is counted per image."""

from __future__ import annotations

import pytest

from memdash.allocations.models import CallTreeNode, CategoryTotal, Frame, Snapshot, SnapshotImage
from memdash.allocations.reads.calltree.query import CallTreeQuery
from memdash.allocations.reads.calltree.trees import build_call_tree_for
from memdash.symbols.models import DebugFile, SymbolicationJob
from tests.symbols.documents import DECODE, by_address, by_name
from tests.symbols.helpers import BREAKPAD, ELF, ELF_DEBUG_ID


def post_debug_file(client, app, secret, path, captured):
    """The file as its raw body, named by `?filename=` as `curl --data-binary` would send it."""
    with captured(execute=True):
        return client.post(
            f"/api/v1/apps/{app.pk}/debug-files?filename={path.name}",
            data=path.read_bytes(),
            content_type="application/octet-stream",
            HTTP_AUTHORIZATION=f"Bearer {secret}",
        )


def stored(upload, doc) -> Snapshot:
    response = upload(doc)
    assert response.status_code == 202, response.json()
    return Snapshot.objects.get(pk=response.json()["snapshot"]["id"])


def tree(snapshot: Snapshot) -> dict[tuple[str, ...], tuple[int, bool]]:
    """path of labels from the root -> (inclusive bytes, inlined) of the stored call tree."""
    nodes = {n.node_id: n for n in CallTreeNode.objects.filter(snapshot_id=snapshot.pk)}
    frames = {f.id: f for f in Frame.objects.filter(id__in=[n.frame_id for n in nodes.values()])}

    def path(node) -> tuple[str, ...]:
        above = path(nodes[node.parent_id]) if node.parent_id is not None else ()
        return (*above, frames[node.frame_id].label)

    return {path(n): (n.persistent_bytes, frames[n.frame_id].inlined) for n in nodes.values()}


@pytest.mark.django_db
def test_a_debug_file_names_stored_frames_and_merges_paths(
    client, app, ingest_secret, upload, django_capture_on_commit_callbacks
):
    address = stored(upload, by_address())
    name = stored(upload, by_name())
    before = tree(address)
    assert ("chat_cache.elf + 0x11be",) in before and ("main",) not in before
    image = SnapshotImage.objects.get(snapshot_id=address.pk, name="chat_cache.elf")
    assert (image.debug_id, image.arch) == (ELF_DEBUG_ID, "x86_64")
    assert (image.unsymbolicated_frames, image.unsymbolicated_bytes) == (4, 704)
    assert Snapshot.objects.get(pk=address.pk).unsymbolicated_bytes == 704

    response = post_debug_file(client, app, ingest_secret, ELF, django_capture_on_commit_callbacks)
    assert response.status_code == 202, response.json()
    body = response.json()
    assert [(o["image"], o["arch"], o["debug_id"], o["outcome"]) for o in body["objects"]] == [
        ("chat_cache.elf", "x86_64", ELF_DEBUG_ID, "stored")
    ]
    job = SymbolicationJob.objects.get(pk=body["symbolication"]["id"])
    assert (job.state, job.snapshots_total, job.snapshots_done, job.frames_named) == (
        "done",
        1,
        1,
        4,
    )

    after = tree(address)
    # 0x116d and 0x117d are both in decode: one node; scaled_size, inlined, is its own node.
    assert after == {
        ("main",): (704, False),
        ("main", "store_image"): (704, False),
        ("main", "store_image", DECODE): (704, False),
        ("main", "store_image", DECODE, "scaled_size"): (640, True),
        ("main", "store_image", DECODE, "scaled_size", "malloc"): (640, False),
        ("main", "store_image", DECODE, "memcpy"): (64, False),
    }
    # The named snapshot's path and the symbolicated one are the same stack nodes.
    roots = {n.node_id for n in CallTreeNode.objects.filter(parent_id__isnull=True)}
    assert len(roots) == 1
    main = Frame.objects.get(
        id=CallTreeNode.objects.filter(snapshot_id=name.pk, parent_id=None).get().frame_id
    )
    assert (main.symbol, main.file, main.line) == ("main", "/src/chat_cache.cpp", 38)
    summed = build_call_tree_for(address.build, CallTreeQuery(aggregate="sum"))
    build_roots, _ = summed.children(None, 0, 10)
    assert [(v.symbol, v.bytes) for v in build_roots] == [("(no stack)", 16384), ("main", 1024)]
    # The responsible caller (first frame outside a system image) is now a name.
    caller = CategoryTotal.objects.get(snapshot_id=address.pk, category__name="Malloc 64 Bytes")
    assert caller.responsible_caller == "scaled_size"
    image = SnapshotImage.objects.get(snapshot_id=address.pk, name="chat_cache.elf")
    assert (image.unsymbolicated_frames, image.unsymbolicated_bytes) == (0, 0)
    snapshot = Snapshot.objects.get(pk=address.pk)
    assert (snapshot.unsymbolicated_bytes, snapshot.symbols_version) == (0, 1)
    assert (snapshot.persistent, snapshot.persistent_bytes) == (12, 704 + 16384)


@pytest.mark.django_db
def test_a_snapshot_stored_after_the_debug_file_is_named_at_ingest_the_same_way(
    client, app, ingest_secret, upload, django_capture_on_commit_callbacks
):
    first = stored(upload, by_address())
    post_debug_file(client, app, ingest_secret, ELF, django_capture_on_commit_callbacks)
    later = stored(upload, by_address(captured_at="2026-11-21T10:00:00+00:00"))
    assert tree(later) == tree(first)

    def nodes(snapshot: Snapshot) -> set[tuple[int, int]]:
        return set(
            CallTreeNode.objects.filter(snapshot_id=snapshot.pk).values_list("node_id", "frame_id")
        )

    assert nodes(later) == nodes(first)
    assert Snapshot.objects.get(pk=later.pk).symbols_version == 0  # named as it was stored


@pytest.mark.django_db
def test_the_same_file_again_is_the_same_object_and_a_sym_of_it_is_kept_once(
    client, app, ingest_secret, django_capture_on_commit_callbacks
):
    first = post_debug_file(client, app, ingest_secret, ELF, django_capture_on_commit_callbacks)
    again = post_debug_file(client, app, ingest_secret, ELF, django_capture_on_commit_callbacks)
    sym = post_debug_file(client, app, ingest_secret, BREAKPAD, django_capture_on_commit_callbacks)
    assert (first.status_code, again.status_code, sym.status_code) == (202, 202, 202)
    assert again.json()["objects"][0]["outcome"] == "same"
    assert sym.json()["objects"][0]["outcome"] == "kept"  # the ELF has lines too
    assert again.json()["symbolication"] is None
    assert DebugFile.objects.filter(app=app).count() == 1
