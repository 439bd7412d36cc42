"""A snapshot whose call trees are worked out by hand in the tests (see `tree_doc`)."""

from __future__ import annotations

import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def _empty_cache():
    """Trees are cached by snapshot id; test databases reuse ids, so start each test clean."""
    cache.clear()
    yield
    cache.clear()


def tree_doc() -> dict:
    """Frames (app unless marked): 0 main, 1 UIApplicationMain (UIKitCore, system),
    2 -[ChatVC viewDidLoad], 3 malloc (libsystem_malloc, system), 4 -[MessageCell init],
    5 no symbol: Chat at 0x100001a2b, loaded at 0x100000000 -> `Chat + 0x1a2b`.
    Stacks: 0 main; 1 main>UIApplicationMain; 2 ..>viewDidLoad; 3 ..>viewDidLoad>malloc;
    4 ..>viewDidLoad>MessageCell init; 5 main>UIApplicationMain>Chat+0x1a2b.
    Rows (category, stack, thread, generation: persistent/bytes, transient/bytes):
      r1 MessageCell        4  main    1: 12/9216, 30/23040
      r2 Malloc 48 Bytes    3  main    0: 100/4800
      r3 Malloc 48 Bytes    3  worker  1: 10/480, 5/240
      r4 Malloc 48 Bytes    5  worker  -: 2/96        (before the first mark)
      r5 VM: CoreAnimation  -  -       1: 1/16384     (no stack, no thread)
    """
    return {
        "format": "memdash.snapshot",
        "version": 1,
        "app": {"id": "com.example.chat", "platform": "ios"},
        "build": {"version": "8.1.0", "number": "300"},
        "device": {"id": "D1", "model": "iPhone14,5", "os": "iOS 17.4.1"},
        "captured_at": "2026-11-20T10:12:03+00:00",
        "images": [
            {"name": "Chat", "load_address": "0x100000000"},
            {"name": "UIKitCore", "system": True},
            {"name": "libsystem_malloc.dylib", "system": True},
        ],
        "frames": [
            "main",
            {"symbol": "UIApplicationMain", "image": 1},
            "-[ChatVC viewDidLoad]",
            {"symbol": "malloc", "image": 2},
            "-[MessageCell init]",
            {"image": 0, "address": "0x100001a2b"},
        ],
        "stacks": [[None, 0], [0, 1], [1, 2], [2, 3], [2, 4], [1, 5]],
        "threads": ["main", "worker"],
        "generations": [{"name": "Launch", "at_ms": 0}, {"name": "Open chat", "at_ms": 5320}],
        "allocations": [
            {"category": "MessageCell", "stack": 4, "thread": 0, "generation": 1,
             "persistent": 12, "persistent_bytes": 9216, "transient": 30,
             "transient_bytes": 23040},
            {"category": "Malloc 48 Bytes", "stack": 3, "thread": 0, "generation": 0,
             "persistent": 100, "persistent_bytes": 4800},
            {"category": "Malloc 48 Bytes", "stack": 3, "thread": 1, "generation": 1,
             "persistent": 10, "persistent_bytes": 480, "transient": 5, "transient_bytes": 240},
            {"category": "Malloc 48 Bytes", "stack": 5, "thread": 1,
             "persistent": 2, "persistent_bytes": 96},
            {"category": "VM: CoreAnimation", "generation": 1,
             "persistent": 1, "persistent_bytes": 16384},
        ],
    }  # fmt: skip


@pytest.fixture
def tree_snapshot_id(upload) -> int:
    response = upload(tree_doc())
    assert response.status_code == 202, response.json()
    assert response.json()["status"] == "done", response.json()
    return response.json()["snapshot"]["id"]
