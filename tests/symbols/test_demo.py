"""The demo: its Matrix report arrives as image UUIDs and offsets, its debug files name every
frame, and the FOOM snapshot and the snapshot demo's are then one tree (no address-only root)."""

from __future__ import annotations

import pytest

from memdash.allocations import demo as allocations_demo
from memdash.allocations.models import CallTreeNode, CategoryTotal, Frame, Snapshot
from memdash.allocations.reads.calltree.query import CallTreeQuery
from memdash.allocations.reads.calltree.trees import build_call_tree_for
from memdash.ingest.demo import debug_files as demo_symbols
from memdash.ingest.demo import matrix as demo_matrix


@pytest.mark.django_db
def test_the_demo_foom_snapshot_reads_by_name(demo_context, django_capture_on_commit_callbacks):
    ctx = demo_context
    ctx.devices = ctx.devices[:1]  # one device is enough for the story
    allocations_demo.load(ctx)
    demo_matrix.load(ctx)
    foom = Snapshot.objects.get(session_id=demo_matrix.FOOM_SESSION)
    assert foom.unsymbolicated_bytes == foom.persistent_bytes - 13_365_312  # all but no-stack
    with django_capture_on_commit_callbacks(execute=True):
        demo_symbols.load(ctx)

    foom.refresh_from_db()
    assert foom.unsymbolicated_bytes == 0
    frames = Frame.objects.filter(
        id__in=CallTreeNode.objects.filter(snapshot_id=foom.pk).values("frame_id")
    )
    assert all(f.symbol for f in frames)
    callers = dict(
        CategoryTotal.objects.filter(snapshot_id=foom.pk).values_list(
            "category__name", "responsible_caller"
        )
    )
    assert callers[ctx.leaking_category] == "-[ChatImageCache decodeImageData:]"
    roots, _ = build_call_tree_for(ctx.leaking_build, CallTreeQuery()).children(None, 0, 10)
    assert [v.symbol for v in roots] == ["start", "(no stack)"]
    path = []
    node = roots[0].id
    while node is not None and len(path) < 10:
        children, _ = build_call_tree_for(ctx.leaking_build, CallTreeQuery()).children(node, 0, 1)
        path.append(children[0].symbol if children else None)
        node = children[0].id if children else None
    assert path[:9] == [
        "main", "UIApplicationMain", "-[UIApplication _run]", "CFRunLoopRunSpecific",
        "-[ChatViewController viewDidLoad]", "-[ChatImageCache storeImage:forKey:]",
        "-[ChatImageCache decodeImageData:]", "CGImageSourceCreateImageAtIndex",
        "malloc_zone_malloc",
    ]  # fmt: skip
    inlined = Frame.objects.get(symbol="ChatInflatePayload")
    assert (inlined.inlined, inlined.file, inlined.line) == (
        True,
        "Chat/Sync/ChatSyncService.m",
        187,
    )


def build_tree_paths(build) -> list[tuple[str, ...]]:
    """Every path of the build's call tree, from its roots."""
    tree = build_call_tree_for(build, CallTreeQuery())
    paths: list[tuple[str, ...]] = []

    def walk(node, above: tuple[str, ...]) -> None:
        children, _ = tree.children(node, 0, 100)
        for child in children:
            paths.append((*above, child.symbol))
            walk(child.id, (*above, child.symbol))

    walk(None, ())
    return paths


@pytest.mark.django_db
def test_the_demo_build_tree_has_one_path_per_code_path(
    demo_context, django_capture_on_commit_callbacks
):
    """The Matrix report records the snapshot demo's code paths through Matrix's alloc hook;
    once its debug files name the hook, the recording rule drops it: no split path."""
    ctx = demo_context
    ctx.devices = ctx.devices[:1]
    allocations_demo.load(ctx)
    demo_matrix.load(ctx)
    with django_capture_on_commit_callbacks(execute=True):
        demo_symbols.load(ctx)

    paths = build_tree_paths(ctx.leaking_build)
    symbols = [path[-1] for path in paths]
    assert not [s for s in symbols if "event_logging_alloc" in s or s == "_objc_rootAllocWithZone"]
    cell = "-[MessageCell initWithStyle:reuseIdentifier:]"
    assert [p[-1] for p in paths if p[:-1] and p[-2] == cell] == ["malloc_zone_malloc"]
    assert symbols.count("-[ChatDataSource reloadMessages]") == 1
    assert len(paths) == len(set(paths))
    # Every path of the report is one the snapshots have: the leaking build's tree is the
    # other builds' (8.0.3, whose snapshots carry no Matrix report), plus nothing.
    assert set(paths) == set(build_tree_paths(ctx.builds[0]))
