"""The recording rule: a monitor's own allocation hook (Matrix's `event_logging_alloc`,
FBAllocationTracker's `fb_newAlloc`) and the runtime frames below it are dropped before stacks are
keyed, at ingest and by the job that applies debug files to stored snapshots, so an object
allocated by the same code through the hook and without it is one path. Bytes below are worked
out by hand from the documents' rows."""

from __future__ import annotations

import json

import pytest

from memdash.allocations.logic import recording
from memdash.allocations.logic.document.parse import FrameInfo, ParsedSnapshot
from memdash.allocations.logic.recording import RECORDING_RULE, drop_recording_frames
from memdash.allocations.models import Snapshot
from memdash.allocations.tasks import resymbolicate_app
from memdash.allocations.writes import snapshots as services
from memdash.symbols.writes import store_debug_files
from tests.symbols.test_symbolication import tree

MATRIX_HOOK = "+[NSObject(ObjectEventLogging) event_logging_alloc]"  # nsobject_hook.mm
FBAT_HOOK = "+[NSObject(FBAllocationTracker) fb_newAlloc]"  # NSObject+FBAllocationTracker.mm
ROOT_ALLOC = "_objc_rootAllocWithZone"
CELL = "-[MessageCell initWithStyle:reuseIdentifier:]"


def parsed_of(
    symbols: list[str], stacks: list[tuple[int | None, int]], rows: dict
) -> ParsedSnapshot:
    parsed = ParsedSnapshot("", "", "", "", "", "", captured_at=None)  # type: ignore[arg-type]
    parsed.frames = [
        FrameInfo(s, "Chat") if s else FrameInfo("", "Chat", offset=0x40) for s in symbols
    ]
    parsed.stack_parents = [p for p, _ in stacks]
    parsed.stack_frames = [f for _, f in stacks]
    parsed.rows = rows
    return parsed


def paths(parsed: ParsedSnapshot) -> list[tuple[str, ...]]:
    out = []
    for node, frame in enumerate(parsed.stack_frames):
        path = [parsed.frames[frame].symbol or "?"]
        parent = parsed.stack_parents[node]
        while parent is not None:
            path.append(parsed.frames[parsed.stack_frames[parent]].symbol or "?")
            parent = parsed.stack_parents[parent]
        out.append(tuple(reversed(path)))
    return out


def test_the_hook_and_the_runtime_below_it_are_dropped_and_the_paths_merge():
    # cell → malloc (48 B), and cell → hook → _objc_rootAllocWithZone → malloc (768 B)
    parsed = parsed_of(
        [CELL, "malloc_zone_malloc", MATRIX_HOOK, ROOT_ALLOC],
        [(None, 0), (0, 1), (0, 2), (2, 3), (3, 1)],
        {("Malloc 48 Bytes", 1, None, None): [1, 48, 0, 0],
         ("MessageCell", 4, None, None): [1, 768, 0, 0]},
    )  # fmt: skip
    assert drop_recording_frames(parsed, "matrix") == 2
    assert paths(parsed) == [(CELL,), (CELL, "malloc_zone_malloc")]
    assert parsed.rows == {
        ("Malloc 48 Bytes", 1, None, None): [1, 48, 0, 0],
        ("MessageCell", 1, None, None): [1, 768, 0, 0],
    }
    assert drop_recording_frames(parsed, "matrix") == 0  # nothing left to drop


def test_rows_on_a_dropped_node_are_the_callers_and_a_dropped_root_leaves_no_stack():
    parsed = parsed_of(
        [FBAT_HOOK, CELL, ROOT_ALLOC],
        [(None, 0), (0, 2), (None, 1), (2, 0), (3, 2)],
        {("A", 1, None, None): [2, 64, 0, 0], ("B", 4, None, None): [1, 32, 0, 0],
         ("C", None, None, None): [1, 8, 0, 0]},
    )  # fmt: skip
    assert drop_recording_frames(parsed, "memdash.snapshot") == 4
    assert paths(parsed) == [(CELL,)]
    # A was on hook → _objc_rootAllocWithZone at the root: no stack now, with C's row.
    assert parsed.rows == {
        ("A", None, None, None): [2, 64, 0, 0],
        ("B", 0, None, None): [1, 32, 0, 0],
        ("C", None, None, None): [1, 8, 0, 0],
    }


def test_the_runtime_not_below_a_hook_unnamed_frames_and_other_formats_stay():
    stacks = [(None, 0), (0, 1), (None, 2), (2, 1)]
    rows = {("A", 1, None, None): [1, 16, 0, 0], ("B", 3, None, None): [1, 16, 0, 0]}
    parsed = parsed_of([CELL, ROOT_ALLOC, ""], stacks, dict(rows))
    assert drop_recording_frames(parsed, "matrix") == 0
    assert (parsed.stack_parents, parsed.stack_frames) == ([None, 0, None, 2], [0, 1, 2, 1])
    hooked = parsed_of(
        [CELL, MATRIX_HOOK], [(None, 0), (0, 1)], {("A", 1, None, None): [1, 8, 0, 0]}
    )
    assert drop_recording_frames(hooked, "pprof") == 0  # a Go profile has no such frames
    assert paths(hooked) == [(CELL,), (CELL, MATRIX_HOOK)]


def test_the_hook_of_any_category_name_and_only_the_hooks_are_matched():
    hooks = recording.IOS_ALLOCATION_HOOKS.hooks
    for name in (MATRIX_HOOK, "+[NSObject(MatrixAllocHook) event_logging_alloc]", FBAT_HOOK,
                 "+[NSObject(FBAllocationTracker) fb_originalAlloc]"):  # fmt: skip
        assert hooks.fullmatch(name), name
    for name in ("-[Chat event_logging_alloc]", "event_logging_alloc", "+[NSObject alloc]",
                 "-[NSObject(FBAllocationTracker) fb_newDealloc]"):  # fmt: skip
        assert not hooks.fullmatch(name), name


# --- a Matrix report as the importer stores it -------------------------------------------------

APP_UUID = "6A1F0C2D-1B2C-4D5E-8F90-A1B2C3D4E5F6"
OBJC_UUID = "9F2E4D18-6C3B-3A57-B1E0-7D4C2A8F5E93"
MALLOC_UUID = "0A3C7B52-1E4D-3B6A-8F29-5C1D7E9A4B60"
# Hand-written after Breakpad's symbol file format: one FUNC around each offset used below.
SYMS = {
    "Chat": (APP_UUID, {0x1000: "main", 0x2000: CELL, 0x3000: MATRIX_HOOK}),
    "libobjc.A.dylib": (OBJC_UUID, {0x7E14: ROOT_ALLOC}),
    "libsystem_malloc.dylib": (MALLOC_UUID, {0x1B2F0: "malloc_zone_malloc"}),
}


def store_symbols(app, folder) -> None:
    for name, (uuid, functions) in SYMS.items():
        lines = [f"MODULE mac arm64 {uuid.replace('-', '')}0 {name}"]
        lines += [f"FUNC {offset - 0x10:x} 20 0 {f}" for offset, f in functions.items()]
        path = folder / f"{name}.sym"
        path.write_text("\n".join(lines) + "\n")
        store_debug_files(app, path, image_name=path.name, file_name=path.name)


def frames(*places: tuple[str, int]) -> list[dict]:
    return [{"uuid": uuid, "offset": offset} for uuid, offset in places]


def matrix_report() -> dict:
    """Hand-written after Matrix's memory_report_generator.cpp (frames innermost first): 360
    MessageCells allocated through Matrix's hook, and 18000 × 48 B mallocs by the same cell."""
    malloc, root = (MALLOC_UUID, 0x1B2F0), (OBJC_UUID, 0x7E14)
    cell, hook, main = (APP_UUID, 0x2000), (APP_UUID, 0x3000), (APP_UUID, 0x1000)
    return {
        "head": {"protocol_ver": 1, "phone": "iPhone12,1", "os_ver": "16.7.2",
                 "launch_time": 1_763_600_000_000, "report_time": 1_763_600_600_000,
                 "app_uuid": APP_UUID},
        "items": [
            {"tag": "iOS_MemStat", "name": "MessageCell", "size": 360 * 768, "count": 360,
             "stacks": [{"caller": f"{APP_UUID}@{0x2000}", "size": 360 * 768, "count": 360,
                         "frames": frames(malloc, root, hook, cell, main)}]},
            {"tag": "iOS_MemStat", "name": "Malloc 48 Bytes", "size": 18000 * 48,
             "count": 18000,
             "stacks": [{"caller": f"{APP_UUID}@{0x2000}", "size": 18000 * 48, "count": 18000,
                         "frames": frames(malloc, cell, main)}]},
        ],
    }  # fmt: skip


@pytest.mark.django_db
def test_a_matrix_report_named_at_ingest_has_one_path_per_code_path(app, upload, tmp_path):
    store_symbols(app, tmp_path)
    body = json.dumps(matrix_report()).encode()
    response = upload(body, query="build_version=8.0.4&build_number=104")
    assert response.status_code == 202, response.json()
    snapshot = Snapshot.objects.get(pk=response.json()["snapshot"]["id"])
    assert snapshot.recording_rule == RECORDING_RULE
    # 360 × 768 = 276480 and 18000 × 48 = 864000 bytes, all of them through the cell's malloc.
    assert tree(snapshot) == {
        ("main",): (1_140_480, False),
        ("main", CELL): (1_140_480, False),
        ("main", CELL, "malloc_zone_malloc"): (1_140_480, False),
    }


@pytest.mark.django_db
def test_a_snapshot_stored_before_the_rule_is_keyed_again_by_the_job(
    app, upload, tmp_path, monkeypatch
):
    store_symbols(app, tmp_path)
    with monkeypatch.context() as patch:  # stored as memdash stored it before the rule
        patch.setattr(services, "drop_recording_frames", lambda parsed, source_format: 0)
        response = upload(json.dumps(matrix_report()).encode(), query="build_version=8.0.4")
    old = Snapshot.objects.get(pk=response.json()["snapshot"]["id"])
    Snapshot.objects.filter(pk=old.pk).update(recording_rule=0)
    assert (("main", CELL, MATRIX_HOOK, ROOT_ALLOC, "malloc_zone_malloc")) in tree(old)

    job = resymbolicate_app(app)
    assert job is not None and job.state == "done"
    old.refresh_from_db()
    assert (old.recording_rule, old.symbols_version) == (RECORDING_RULE, 1)
    assert tree(old) == {
        ("main",): (1_140_480, False),
        ("main", CELL): (1_140_480, False),
        ("main", CELL, "malloc_zone_malloc"): (1_140_480, False),
    }
    assert resymbolicate_app(app) is None  # keyed: nothing left to do
