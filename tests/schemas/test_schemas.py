"""docs/schemas/{sessions,retain-cycles,churn}-v1.schema.json agree with the server's parsers.

Each good document must pass both the schema and the server's own validation (the pure parser,
plus `check_app` which the handler runs on `app`); each bad one must fail both. No database: the
parsers store nothing.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest

from memdash.churn.demo import scenario_entry
from memdash.churn.logic.document import validate_churn_document
from memdash.core.logic.errors import InvalidUpload
from memdash.core.writes.uploads import UploadMeta, check_app, no_progress
from memdash.cycles.logic.parse import parse_json_document
from memdash.ingest.writes.parsers import churn as churn_handler
from memdash.ingest.writes.parsers.sessions import parse_sessions_document
from tests.samples import RETAIN_CYCLES_SPEC_EXAMPLE, SESSIONS_SPEC_EXAMPLE

SCHEMA_DIR = Path(__file__).parents[2] / "docs/schemas"
DELETE = object()  # as a new value in `changed`: remove the key


def load_schema(name: str) -> dict:
    return json.loads((SCHEMA_DIR / f"{name}-v1.schema.json").read_text())


SCHEMAS = {name: load_schema(name) for name in ("sessions", "retain-cycles", "churn")}

# What the handlers check `app` against: the upload key's app.
KEY_META = SimpleNamespace(app=SimpleNamespace(bundle_id="com.example.chat", platform="ios"))


def server_sessions(doc: Any) -> None:
    if isinstance(doc, dict):  # as ingest.parsers.sessions.process does
        check_app(doc.get("app"), KEY_META)
    parse_sessions_document(doc)


def server_cycles(doc: Any) -> None:
    check_app(parse_json_document(doc).app, KEY_META)  # as ingest.parsers.cycles.process_json


def server_churn(doc: Any) -> None:
    check_app(validate_churn_document(doc).app, KEY_META)  # as ingest.parsers.churn.process


SERVER: dict[str, Callable[[Any], None]] = {
    "sessions": server_sessions,
    "retain-cycles": server_cycles,
    "churn": server_churn,
}


def changed(doc: dict, path: tuple, value: Any) -> dict:
    """A deep copy of `doc` with the value at `path` (keys and list indices) replaced."""
    doc = copy.deepcopy(doc)
    *parents, last = path
    target = doc
    for step in parents:
        target = target[step]
    if value is DELETE:
        del target[last]
    else:
        target[last] = value
    return doc


def assert_both_accept(kind: str, doc: dict) -> None:
    jsonschema.validate(doc, SCHEMAS[kind])
    SERVER[kind](doc)


def assert_both_refuse(kind: str, doc: dict) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SCHEMAS[kind])
    with pytest.raises(InvalidUpload):
        SERVER[kind](doc)


@pytest.mark.parametrize("kind", sorted(SCHEMAS))
def test_schema_is_valid_draft_2020_12(kind):
    jsonschema.Draft202012Validator.check_schema(SCHEMAS[kind])


# --- memdash.sessions ----------------------------------------------------------------------------

# Three runs of one device: one still running (no end), one with every optional value null,
# one whose end came from Android's ApplicationExitInfo; plus an unknown key, which is ignored.
SESSIONS_REALISTIC = {
    "format": "memdash.sessions",
    "version": 1,
    "app": {"id": "com.example.chat", "platform": "ios", "name": "Chat"},
    "sessions": [
        {
            "id": "run-1",
            "device": {"id": "D1"},
            "build": {"version": "8.0.4", "number": None, "commit": "9f1c2e7"},
            "started_at": "2026-11-20T08:00:00Z",
        },
        {
            "id": "run-2",
            "device": {"id": "D1", "model": None},
            "build": {"version": "8.0.4"},
            "binary_uuid": None,
            "os": None,
            "boot_time": None,
            "started_at": "2026-11-20T09:00:00.250+01:00",
            "last_seen_at": None,
            "end": {
                "state": "background",
                "active_for_ms": None,
                "crashed": None,
                "os_exit_reason": "",
                "memory_warnings": None,
                "footprint_bytes": None,
            },
            "bot": None,
            "sdk": "memdash-ios 1.2",
        },
        {
            "id": "run-3",
            "device": {"id": "D1", "model": "Pixel 8"},
            "build": {"version": "8.0.4", "number": "104"},
            "started_at": "2026-11-20T10:00:00-05:00",
            "last_seen_at": "2026-11-20T10:30:00-05:00",
            "end": {
                "state": "foreground",
                "os_exit_reason": "LOW_MEMORY",
                "memory_warnings": 2147483647,
                "peak_footprint_bytes": 9223372036854775807,
            },
        },
    ],
}

EMPTY_SESSIONS = {**SESSIONS_SPEC_EXAMPLE, "sessions": []}


@pytest.mark.parametrize("doc", [SESSIONS_SPEC_EXAMPLE, SESSIONS_REALISTIC, EMPTY_SESSIONS])
def test_good_sessions_documents_pass_both(doc):
    assert_both_accept("sessions", doc)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("version",), 2),
        (("version",), "1"),
        (("format",), "memdash.session"),
        (("app",), DELETE),
        (("app", "id"), ""),
        (("sessions",), {"id": "run-1"}),
        (("sessions", 0, "id"), "   "),
        (("sessions", 0, "id"), "x" * 201),
        (("sessions", 0, "device", "id"), DELETE),
        (("sessions", 0, "build"), "8.0.51"),
        (("sessions", 0, "started_at"), DELETE),
        (("sessions", 0, "started_at"), "2026-11-20T10:02:00"),  # no UTC offset
        (("sessions", 0, "boot_time"), 1763621890),
        (("sessions", 0, "end", "state"), "terminated"),
        (("sessions", 0, "end", "state"), DELETE),
        (("sessions", 0, "end", "memory_warnings"), -1),
        (("sessions", 0, "end", "memory_warnings"), 2**31),
        (("sessions", 0, "end", "memory_warnings"), "3"),
        (("sessions", 0, "end", "active_for_ms"), 91.5),
        (("sessions", 0, "end", "footprint_bytes"), 2**63),
        (("sessions", 0, "end", "crashed"), 0),
        (("sessions", 0, "end", "os_exit_reason"), 9),
        (("sessions", 0, "end"), "foreground"),
        (("sessions", 0, "bot"), "no"),
        (("sessions", 0, "os"), "iOS\x0017"),
    ],
)
def test_bad_sessions_documents_fail_both(path, value):
    assert_both_refuse("sessions", changed(SESSIONS_SPEC_EXAMPLE, path, value))


# --- memdash.retain-cycles -----------------------------------------------------------------------

# The cycles of tests/data/cycles/nslog_cycles.txt in the JSON form: a UIKit-only loop, a block
# printed with its address, a transient cycle with a freed `(null)` object (dropped), a link
# without `via`; the build and device come with the upload (absent here), captured_at is null.
CYCLES_REALISTIC = {
    "format": "memdash.retain-cycles",
    "version": 1,
    "app": {"id": "com.example.chat"},
    "captured_at": None,
    "cycles": [
        [
            {"class": "UITransitionView", "via": ["_containerView"]},
            {
                "class": "_UIFullscreenPresentationController",
                "via": ["__presentationControllerToNotifyOnLayoutSubviews"],
            },
        ],
        [
            {"class": "MessageListView", "via": ["_view"]},
            {"class": "<<__NSMallocBlock__:0x1c2a3b4c>>", "via": ["_onReload"]},
            {"class": "ChatViewController", "via": ["self"]},
        ],
        [{"class": "(null)", "via": []}, {"class": "TimerTarget", "via": ["_timer", "_target"]}],
        [{"class": "MyObject"}, {"class": "__NSArrayI", "via": ["_someObject"]}],
    ],
}

EMPTY_CYCLES = {**RETAIN_CYCLES_SPEC_EXAMPLE, "cycles": [], "build": None, "device": None}


@pytest.mark.parametrize("doc", [RETAIN_CYCLES_SPEC_EXAMPLE, CYCLES_REALISTIC, EMPTY_CYCLES])
def test_good_cycles_documents_pass_both(doc):
    assert_both_accept("retain-cycles", doc)


def test_the_realistic_cycles_document_reads_as_intended():
    parsed = parse_json_document(CYCLES_REALISTIC).parsed
    # 4 cycles sent, 1 with a `(null)` object: 3 kept, 1 dropped.
    assert (len(parsed.cycles), parsed.dropped) == (3, 1)
    assert parsed.cycles[1][1] == ("__NSMallocBlock__", ("_onReload",))


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("version",), 2),
        (("version",), "1"),
        (("format",), "memdash.retain_cycles"),
        (("app",), DELETE),
        (("app",), "com.example.chat"),
        (("cycles",), DELETE),
        (("cycles",), {"0": []}),
        (("cycles", 0), []),
        (("cycles", 0), [{"class": "A", "via": []}] * 201),
        (("cycles", 0, 0), "ChatViewController"),
        (("cycles", 0, 0, "class"), DELETE),
        (("cycles", 0, 0, "class"), " "),
        (("cycles", 0, 0, "class"), "Chat\nViewController"),
        (("cycles", 0, 0, "class"), "C" * 256),
        (("cycles", 0, 1, "via"), "_dataSource"),
        (("cycles", 0, 1, "via"), None),
        (("cycles", 0, 1, "via"), [""]),
        (("cycles", 0, 1, "via"), ["_a"] * 51),
        (("build", "version"), 8),
        (("build", "number"), "1" * 65),
        (("build",), "8.0.51"),
        (("device", "id"), "d" * 256),
        (("captured_at",), "2026-11-20T10:12:03"),  # no UTC offset
        (("captured_at",), "yesterday"),
    ],
)
def test_bad_cycles_documents_fail_both(path, value):
    assert_both_refuse("retain-cycles", changed(RETAIN_CYCLES_SPEC_EXAMPLE, path, value))


# --- memdash.churn -------------------------------------------------------------------------------

# docs/formats.md, "Allocator churn (memdash.churn)", as printed there.
CHURN_SPEC_EXAMPLE = {
  "format": "memdash.churn", "version": 1,
  "app": {"id": "com.example.chat", "platform": "ios"},
  "build": {"version": "8.0.4", "number": "104", "commit": "9f1c2e7"},
  "device": {"id": "ci-iphone-12", "model": "iPhone13,2", "os": "17.4"},
  "captured_at": "2026-11-20T10:12:03+00:00",
  "runs": [
    {"id": "run-1", "scenarios": [
      {"name": "open_chat", "thread": "main",
       "start_marker": "openChat.begin", "end_marker": "openChat.end", "elapsed_ms": 412.5,
       "calls": [["malloc", 64], ["realloc", 256], ["free", 64]]},
      {"name": "send_message", "thread": "main",
       "start_marker": "send.begin", "end_marker": "send.end", "elapsed_ms": 88.0,
       "functions": {"malloc": {"count": 120, "bytes": 9600, "log2_bytes": 720.0}}}
    ]}
  ]
}  # fmt: skip


def churn_demo_document() -> dict:
    """Two runs of every demo scenario, as the demo loader builds them (calls for one scenario,
    per-function sums for the others); build and device come with the upload (absent here)."""
    ctx = SimpleNamespace(rng=random.Random(7))
    scenarios = ("open_chat", "scroll_timeline", "send_message")
    return {
        "format": "memdash.churn",
        "version": 1,
        "app": {"id": "com.example.chat", "platform": "ios"},
        "captured_at": "2026-11-20T12:00:00.123456+00:00",
        "runs": [
            {"id": run, "scenarios": [scenario_entry(name, run == 2, ctx) for name in scenarios]}
            for run in (1, 2)
        ],
    }


# A function seen with zero calls, calls of 0 and 1 byte, and nulls for the optional strings.
CHURN_EDGES = {
    "format": "memdash.churn",
    "version": 1,
    "app": {"id": "com.example.chat"},
    "build": {"version": "8.0.4", "number": None},
    "device": None,
    "captured_at": None,
    "runs": [
        {
            "id": "r",
            "scenarios": [
                {
                    "name": "idle",
                    "thread": None,
                    "elapsed_ms": 0,
                    "functions": {
                        "calloc": {"count": 0, "bytes": 0, "log2_bytes": 0.0},
                        # 2 calls of 1 byte: log2(1) = 0 each, so Σ log2 = 0.
                        "malloc": {"count": 2, "bytes": 2, "log2_bytes": 0},
                    },
                },
                {"name": "tiny", "elapsed_ms": 1.5, "calls": [["malloc", 0], ["free", 1]]},
            ],
        }
    ],
}


@pytest.mark.parametrize("doc", [CHURN_SPEC_EXAMPLE, churn_demo_document(), CHURN_EDGES])
def test_good_churn_documents_pass_both(doc):
    assert_both_accept("churn", doc)


SCENARIO = ("runs", 0, "scenarios", 0)  # open_chat, sent as calls
SUMS = ("runs", 0, "scenarios", 1, "functions", "malloc")  # send_message's malloc sums


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("version",), 2),
        (("version",), True),
        (("format",), "memdash.churn.v1"),
        (("app",), DELETE),
        (("build",), {"number": "104"}),
        (("device", "model"), 13),
        (("captured_at",), "2026-11-20 10:12"),
        (("runs",), []),
        (("runs", 0, "id"), DELETE),
        (("runs", 0, "id"), ""),
        (("runs", 0, "scenarios"), []),
        ((*SCENARIO, "name"), DELETE),
        ((*SCENARIO, "thread"), ["main"]),
        ((*SCENARIO, "elapsed_ms"), -0.5),
        ((*SCENARIO, "elapsed_ms"), "412.5"),
        ((*SCENARIO, "calls"), DELETE),  # neither calls nor functions
        ((*SCENARIO, "functions"), {}),  # both
        ((*SCENARIO, "calls", 0), ["malloc"]),
        ((*SCENARIO, "calls", 0), ["malloc", 64, 1]),
        ((*SCENARIO, "calls", 0, 1), -64),
        ((*SCENARIO, "calls", 0, 1), 64.5),
        ((*SCENARIO, "calls", 0, 0), "m" * 101),
        ((*SUMS, "count"), -1),
        ((*SUMS, "bytes"), DELETE),
        ((*SUMS, "log2_bytes"), -1.0),
        ((*SUMS, "count"), 0),  # bytes 9600 and log2_bytes 720 with no calls
        (("runs", 0, "scenarios", 1, "functions"), [["malloc", 64]]),
    ],
)
def test_bad_churn_documents_fail_both(path, value):
    assert_both_refuse("churn", changed(CHURN_SPEC_EXAMPLE, path, value))


@pytest.mark.django_db
def test_the_churn_handler_applies_the_build_version_limit_of_the_schema(app):
    """build.version ≤ 64 is checked by the handler (the column's width), not the parser."""
    meta = UploadMeta(app=app, received_at=datetime(2026, 11, 20, tzinfo=UTC))
    doc = changed(CHURN_SPEC_EXAMPLE, ("build", "version"), "x" * 65)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SCHEMAS["churn"])
    validate_churn_document(doc)  # the pure parser lets it through ...
    with pytest.raises(InvalidUpload, match="at most 64"):  # ... the handler does not
        churn_handler.process(b"", doc, meta, no_progress)
    # The same document with a 64-character version is stored: 1 run of 2 scenarios.
    ok = changed(CHURN_SPEC_EXAMPLE, ("build", "version"), "x" * 64)
    jsonschema.validate(ok, SCHEMAS["churn"])
    result = churn_handler.process(b"", ok, meta, no_progress)
    assert (result.counts["runs"], result.counts["scenario_runs"]) == (1, 2)
