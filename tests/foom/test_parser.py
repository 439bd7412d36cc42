"""The sessions-v1 parser: every type checked, the path of the first bad value named."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta

import pytest

from memdash.core.logic.errors import InvalidUpload
from memdash.foom.logic.classify import EndFacts
from memdash.ingest.writes.parsers.sessions import parse_sessions_document
from tests.samples import SESSIONS_SPEC_EXAMPLE

# The spec's example run, its UUID without the ellipsis the spec prints in it.
SPEC_SESSION = {**copy.deepcopy(SESSIONS_SPEC_EXAMPLE["sessions"][0]), "binary_uuid": "6A1F0C2D"}


def document(*sessions: dict) -> dict:
    return {
        "format": "memdash.sessions",
        "version": 1,
        "app": {"id": "com.example.chat", "platform": "ios"},
        "sessions": [copy.deepcopy(s) for s in sessions] or [copy.deepcopy(SPEC_SESSION)],
    }


def session(**changes) -> dict:
    value = copy.deepcopy(SPEC_SESSION)
    value.update(changes)
    return value


def session_with_end(**changes) -> dict:
    value = copy.deepcopy(SPEC_SESSION)
    value["end"].update(changes)
    return value


def refused(doc: dict) -> InvalidUpload:
    with pytest.raises(InvalidUpload) as caught:
        parse_sessions_document(doc)
    return caught.value


def test_the_spec_example_parses():
    parsed = parse_sessions_document(document())
    assert parsed.app == {"id": "com.example.chat", "platform": "ios"}
    (s,) = parsed.sessions
    assert s.id == "5f0c3e1a-5d0b-4a5e-9d1e-2b8f6c7e9a10"
    assert (s.device_id, s.device_model) == ("A1B2", "iPhone14,5")
    assert (s.build_version, s.build_number, s.build_commit) == ("8.0.51", "2741", "")
    assert (s.binary_uuid, s.os, s.bot) == ("6A1F0C2D", "17.4.1", False)
    assert s.boot_time == datetime(2026, 11, 20, 6, 58, 10, tzinfo=UTC)
    assert s.started_at == datetime(2026, 11, 20, 10, 2, tzinfo=UTC)
    assert s.last_seen_at == datetime(2026, 11, 20, 10, 14, 41, tzinfo=UTC)
    assert s.end == EndFacts(
        state="foreground",
        active_for_ms=91000,
        memory_warnings=3,
        footprint_bytes=1523580928,
        peak_footprint_bytes=1602224128,
    )
    assert s.run_facts().end == s.end


def test_optional_values_may_be_absent_or_null():
    minimal = {
        "id": "s1",
        "device": {"id": "d1"},
        "build": {"version": "1.0"},
        "started_at": "2026-11-20T10:02:00Z",
        "end": {"state": "background", "crashed": None, "os_exit_reason": ""},
    }
    (s,) = parse_sessions_document(document(minimal)).sessions
    assert (s.device_model, s.build_number, s.binary_uuid, s.os) == ("", "", "", "")
    assert (s.boot_time, s.last_seen_at, s.bot) == (None, None, False)
    assert s.end == EndFacts(state="background", active_for_ms=None, os_exit_reason=None)


def test_end_absent_or_null_means_not_ended_yet():
    without = session()
    del without["end"]
    assert parse_sessions_document(document(without)).sessions[0].end is None
    assert parse_sessions_document(document(session(end=None))).sessions[0].end is None


def test_offsets_are_kept():
    (s,) = parse_sessions_document(
        document(session(started_at="2026-11-20T12:02:00+02:00"))
    ).sessions
    assert s.started_at.utcoffset() == timedelta(hours=2)
    assert s.started_at == datetime(2026, 11, 20, 10, 2, tzinfo=UTC)


def test_os_exit_reason_is_read_in_lower_case():
    (s,) = parse_sessions_document(document(session_with_end(os_exit_reason="LOW_MEMORY"))).sessions
    assert s.end is not None and s.end.os_exit_reason == "low_memory"


@pytest.mark.parametrize(
    ("bad", "path"),
    [
        (session_with_end(memory_warnings="3"), "sessions[3].end.memory_warnings"),
        (session_with_end(memory_warnings=-1), "sessions[3].end.memory_warnings"),
        (session_with_end(memory_warnings=3.5), "sessions[3].end.memory_warnings"),
        (session_with_end(memory_warnings=True), "sessions[3].end.memory_warnings"),
        (session_with_end(footprint_bytes=2**63), "sessions[3].end.footprint_bytes"),
        (session_with_end(peak_footprint_bytes=[]), "sessions[3].end.peak_footprint_bytes"),
        (session_with_end(crashed="no"), "sessions[3].end.crashed"),
        (session_with_end(main_thread_blocked=0), "sessions[3].end.main_thread_blocked"),
        (session_with_end(user_quit=1), "sessions[3].end.user_quit"),
        (session_with_end(exit_called="false"), "sessions[3].end.exit_called"),
        (session_with_end(debugger={}), "sessions[3].end.debugger"),
        (session_with_end(simulator=[]), "sessions[3].end.simulator"),
        (session_with_end(extension=2), "sessions[3].end.extension"),
        (session_with_end(thermal_critical="yes"), "sessions[3].end.thermal_critical"),
        (session_with_end(os_exit_reason=3), "sessions[3].end.os_exit_reason"),
        (session_with_end(os_exit_reason=["low_memory"]), "sessions[3].end.os_exit_reason"),
        (session_with_end(state="killed"), "sessions[3].end.state"),
        (session_with_end(state=None), "sessions[3].end.state"),
        (session_with_end(active_for_ms=-5), "sessions[3].end.active_for_ms"),
        (session_with_end(active_for_ms="91000"), "sessions[3].end.active_for_ms"),
        (session(end="foreground"), "sessions[3].end"),
        (session(end=[]), "sessions[3].end"),
        (session(id=""), "sessions[3].id"),
        (session(id=17), "sessions[3].id"),
        (session(id=None), "sessions[3].id"),
        (session(id="x" * 201), "sessions[3].id"),
        (session(device=None), "sessions[3].device"),
        (session(device="A1B2"), "sessions[3].device"),
        (session(device={"model": "iPhone14,5"}), "sessions[3].device.id"),
        (session(device={"id": "A1", "model": 5}), "sessions[3].device.model"),
        (session(build=None), "sessions[3].build"),
        (session(build={"number": "2741"}), "sessions[3].build.version"),
        (session(build={"version": "8.0", "number": 2741}), "sessions[3].build.number"),
        (session(build={"version": "8.0", "commit": 1}), "sessions[3].build.commit"),
        (session(binary_uuid=123), "sessions[3].binary_uuid"),
        (session(os=17.4), "sessions[3].os"),
        (session(boot_time="yesterday"), "sessions[3].boot_time"),
        (session(boot_time=1700000000), "sessions[3].boot_time"),
        (session(started_at=None), "sessions[3].started_at"),
        (session(started_at="2026-11-20T10:02:00"), "sessions[3].started_at"),
        (session(started_at="2026-11-20"), "sessions[3].started_at"),
        (session(started_at="0001-01-01T00:00:00+05:00"), "sessions[3].started_at"),
        (session(boot_time="9999-12-31T23:59:59-05:00"), "sessions[3].boot_time"),
        (session(last_seen_at="2026-11-20T09:00:00+00:00"), "sessions[3].last_seen_at"),
        (session(bot="false"), "sessions[3].bot"),
        ("a session", "sessions[3]"),
        (None, "sessions[3]"),
    ],
)
def test_the_first_bad_value_is_named_by_its_path(bad, path):
    fine = [session(id=f"s{i}") for i in range(3)]
    later_bad = session(id="s4", bot="also bad")  # only the first offence is reported
    error = refused(document(*fine, bad, later_bad))
    assert error.path == path
    assert error.message


def test_top_level_is_checked():
    assert refused([]).path == ""
    assert refused({**document(), "format": "memdash.snapshot"}).path == "format"
    assert refused({**document(), "version": 2}).path == "version"
    assert refused({**document(), "version": True}).path == "version"
    assert refused({**document(), "version": 1.0}).path == "version"  # the schema: 1, not 1.0
    assert refused({**document(), "version": "1"}).path == "version"
    assert refused({**document(), "sessions": {"id": "x"}}).path == "sessions"
    missing = document()
    del missing["sessions"]
    assert refused(missing).path == "sessions"


def test_a_session_sent_twice_in_one_upload_is_refused():
    error = refused(document(session(id="a"), session(id="b"), session(id="a")))
    assert error.path == "sessions[2].id"
    assert "sessions[0]" in error.message


def test_an_empty_list_is_a_valid_upload():
    doc = document()
    doc["sessions"] = []
    assert parse_sessions_document(doc).sessions == []


def test_unknown_keys_are_ignored():
    extra = session(thermal_state="nominal")
    extra["end"]["cpu_time_ms"] = 12
    (s,) = parse_sessions_document(document(extra)).sessions
    assert s.id == SPEC_SESSION["id"]


def test_strings_are_bounded_and_free_of_nul():
    assert refused(document(session(device={"id": "A\x00B"}))).path == "sessions[0].device.id"
    assert (
        refused(document(session(build={"version": "8" * 65}))).path == "sessions[0].build.version"
    )
    assert refused(document(session(os="x" * 129))).path == "sessions[0].os"
