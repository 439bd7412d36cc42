"""Small documents whose statistics are worked out by hand in the tests that use them, and the
specs' own examples of the other formats."""

from __future__ import annotations

import copy

SPEC_EXAMPLE = {
    "format": "memdash.snapshot",
    "version": 1,
    "app": {"id": "com.example.chat", "platform": "ios"},
    "build": {"version": "8.0.51", "number": "2741", "commit": "9f1c2e0"},
    "device": {"id": "A1B2", "model": "iPhone14,5", "os": "iOS 17.4.1"},
    "session": "5f0c3e1a-5d0b-4a5e-9d1e-2b8f6c7e9a10",
    "captured_at": "2026-11-20T10:12:03+00:00",
    "images": [
        {"name": "Chat", "uuid": "6A1F", "load_address": "0x100000000"},
        {"name": "UIKitCore", "system": True},
    ],
    "frames": [
        "main",
        {"symbol": "UIApplicationMain", "image": 1},
        "-[ChatViewController viewDidLoad]",
        "-[MessageCell initWithStyle:]",
    ],
    "stacks": [[None, 0], [0, 1], [1, 2], [2, 3]],
    "threads": ["main"],
    "generations": [{"name": "Launch", "at_ms": 0}, {"name": "Open chat", "at_ms": 5320}],
    "allocations": [
        {"category": "MessageCell", "stack": 3, "thread": 0, "generation": 1,
         "persistent": 12, "persistent_bytes": 9216, "transient": 30, "transient_bytes": 23040},
        {"category": "Malloc 48 Bytes", "stack": 2, "generation": 0,
         "persistent": 100, "persistent_bytes": 4800},
        {"category": "VM: CoreAnimation", "stack": 1, "generation": 1,
         "persistent": 2, "persistent_bytes": 4194304, "transient": 1, "transient_bytes": 2097152},
        # Same key as the first row: the two add up (MessageCell p 12+1, 9216+768 bytes).
        {"category": "MessageCell", "stack": 3, "thread": 0, "generation": 1,
         "persistent": 1, "persistent_bytes": 768},
    ],
}  # fmt: skip

EVENTS_EXAMPLE = {
    **{k: v for k, v in SPEC_EXAMPLE.items() if k != "allocations"},
    "generations": [{"name": "G1", "at_ms": 100}],
    "events": [
        {"t_ms": 0, "fn": "malloc", "address": "0x10", "size": 48},
        {"t_ms": 10, "fn": "malloc", "address": "0x20", "size": 48, "stack": 2},
        {"t_ms": 20, "fn": "free", "address": "0x10"},
        {"t_ms": 150, "fn": "calloc", "address": "0x30", "size": 1536},
        {"t_ms": 160, "fn": "realloc", "old_address": "0x20", "address": "0x40", "size": 2048},
        {"t_ms": 170, "fn": "free", "address": "0x999"},
        {"t_ms": 180, "fn": "malloc", "address": "0x30", "size": 16, "category": "Foo", "stack": 3},
        {"t_ms": 190, "fn": "vm_allocate", "address": 20480, "size": 16384, "vm_tag": 51},
        {"t_ms": 200, "fn": "vm_deallocate", "address": 20480},
        {"t_ms": 210, "fn": "vm_allocate", "address": 24576, "size": 4096},
    ],
}  # fmt: skip


# A run of 1000 ms (first event at 0, last at 1000): 100 buckets of 10 ms. Worked out by hand
# in tests/snapshots/test_timeline.py.
TIMELINE_EXAMPLE = {
    **{k: v for k, v in SPEC_EXAMPLE.items() if k != "allocations"},
    "generations": [{"name": "Mark", "at_ms": 300}],
    "events": [
        {"t_ms": 0, "fn": "malloc", "address": "0x10", "size": 100, "category": "A", "stack": 2},
        {"t_ms": 5, "fn": "malloc", "address": "0x20", "size": 50, "category": "B", "thread": 0},
        {"t_ms": 250, "fn": "free", "address": "0x10"},
        {"t_ms": 400, "fn": "malloc", "address": "0x30", "size": 200, "category": "A", "stack": 3},
        {"t_ms": 600, "fn": "realloc", "old_address": "0x20", "address": "0x40", "size": 80,
         "category": "B", "thread": 0},
        {"t_ms": 1000, "fn": "malloc", "address": "0x50", "size": 10, "category": "C"},
    ],
}  # fmt: skip


def timeline_example(**changes) -> dict:
    doc = copy.deepcopy(TIMELINE_EXAMPLE)
    doc.update(changes)
    return doc


def spec_example(**changes) -> dict:
    doc = copy.deepcopy(SPEC_EXAMPLE)
    doc.update(changes)
    return doc


def events_example(**changes) -> dict:
    doc = copy.deepcopy(EVENTS_EXAMPLE)
    doc.update(changes)
    return doc


# shared/spec/sessions-v1.md, as printed there.
SESSIONS_SPEC_EXAMPLE = {
  "format": "memdash.sessions", "version": 1,
  "app": {"id": "com.example.chat", "platform": "ios"},
  "sessions": [
    {
      "id": "5f0c3e1a-5d0b-4a5e-9d1e-2b8f6c7e9a10",
      "device": {"id": "A1B2", "model": "iPhone14,5"},
      "build": {"version": "8.0.51", "number": "2741"},
      "binary_uuid": "6A1F0C2D-…",
      "os": "17.4.1",
      "boot_time": "2026-11-20T06:58:10+00:00",
      "started_at": "2026-11-20T10:02:00+00:00",
      "last_seen_at": "2026-11-20T10:14:41+00:00",
      "end": {
        "state": "foreground",
        "active_for_ms": 91000,
        "crashed": False,
        "main_thread_blocked": False,
        "user_quit": False,
        "exit_called": False,
        "debugger": False,
        "simulator": False,
        "extension": False,
        "thermal_critical": False,
        "os_exit_reason": None,
        "memory_warnings": 3,
        "footprint_bytes": 1523580928,
        "peak_footprint_bytes": 1602224128
      },
      "bot": False
    }
  ]
}  # fmt: skip


# shared/spec/retain-cycles-v1.md, as printed there.
RETAIN_CYCLES_SPEC_EXAMPLE = {
  "format": "memdash.retain-cycles", "version": 1,
  "app": {"id": "com.example.chat", "platform": "ios"},
  "build": {"version": "8.0.51", "number": "2741"},
  "device": {"id": "A1B2"},
  "captured_at": "2026-11-20T10:12:03+00:00",
  "cycles": [
    [
      {"class": "ChatViewController", "via": []},
      {"class": "ChatDataSource", "via": ["_dataSource"]},
      {"class": "__NSMallocBlock__", "via": ["_onUpdate"]}
    ]
  ]
}  # fmt: skip


def retain_cycles_example(**changes) -> dict:
    doc = copy.deepcopy(RETAIN_CYCLES_SPEC_EXAMPLE)
    doc.update(changes)
    return doc
