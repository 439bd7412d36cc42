"""The runs of an Android variant of the test app and the OS's records of their exits
(tests/data/exitinfo/exits.json, PROVENANCE.md there), for the exit and page tests."""

from __future__ import annotations

import json
from pathlib import Path

EXITS = json.loads((Path(__file__).parents[1] / "data" / "exitinfo" / "exits.json").read_text())
DAY = "2026-10-23"


def android_run(sid: str, start: str, seen: str, end: dict | None, pid: int | None = None) -> dict:
    run = {
        "id": sid,
        "device": {"id": "P1", "model": "Pixel 9"},
        "build": {"version": "8.0.4", "number": "104"},
        "os": "17",
        "boot_time": f"{DAY}T01:00:00Z",
        "started_at": f"{DAY}T{start}:00Z",
        "last_seen_at": f"{DAY}T{seen}:00Z",
        "end": end,
    }
    if pid is not None:
        run["pid"] = pid
    return run


def fg(**facts) -> dict:
    return {"state": "foreground", "active_for_ms": 600_000, **facts}


def android_sessions() -> dict:
    """The runs the exits of exits.json ended, on one device, and the next launch:
    - run-3700 (no pid: its exit names it in processStateSummary): the user quit (rule 5);
    - run-3800: the monitor passed low_memory (rule 1, FOOM), the OS agrees;
    - run-3900: ended in the background (rule 12), the OS reclaimed it for memory;
    - run-4100: no flag reached the monitor (rule 15, FOOM), the OS says ANR;
    - run-4242: the monitor passed REASON_OTHER (rule 2, os_kill), the OS's description says
      the memory limiter killed it."""
    return {
        "format": "memdash.sessions",
        "version": 1,
        "app": {"id": "com.example.chat", "platform": "android"},
        "sessions": [
            android_run("run-3700", "06:30", "06:59", fg(user_quit=True)),
            android_run("run-3800", "07:30", "07:59", fg(os_exit_reason="low_memory"), 3800),
            android_run("run-3900", "08:30", "08:40", {"state": "background"}, 3900),
            android_run("run-4100", "09:30", "09:59", fg(), 4100),
            android_run("run-4242", "10:30", "10:59", fg(os_exit_reason="other"), 4242),
            android_run("run-next", "11:30", "11:31", None, 5000),
        ],
    }
