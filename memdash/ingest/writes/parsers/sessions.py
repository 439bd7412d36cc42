"""The `memdash.sessions` v1 format (spec: sessions-v1.md): one upload, any number of app runs.

`parse_sessions_document` checks every value's type and answers `InvalidUpload` with the path of
the first bad one (`sessions[3].end.memory_warnings`), turning the document into plain dataclasses;
it touches no database. `process` (the handler) then hands them to
`memdash.foom.writes.sessions`, which upserts the sessions and classifies what the upload made
classifiable.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.urls import reverse

from memdash.core.logic.errors import InvalidUpload
from memdash.core.logic.numbers import MAX_INT64
from memdash.core.logic.rfc3339 import timestamp_field
from memdash.core.writes.uploads import FormatHandler, Progress, StoreResult, UploadMeta, check_app
from memdash.foom.logic.classify import END_FLAGS, STATES, EndFacts
from memdash.foom.logic.contract import (
    FORMAT,
    MAX_BINARY_UUID,
    MAX_BUILD_FIELD,
    MAX_COUNT,
    MAX_DEVICE_ID,
    MAX_EXIT_REASON,
    MAX_MODEL,
    MAX_SESSION_ID,
    VERSION,
)
from memdash.foom.logic.reports import SessionReport
from memdash.foom.writes.sessions import store_sessions

SUPPORTED_VERSIONS = (VERSION,)


@dataclass(frozen=True)
class SessionsDocument:
    app: Any  # the `app` object as sent; the handler checks it against the key's app
    sessions: list[SessionReport]


# --- typed readers: each answers the value or raises with its path -----------------------------


def _object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidUpload(f"must be an object, got {_type_name(value)}", path)
    return value


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _required_string(obj: dict[str, Any], key: str, path: str, max_length: int) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InvalidUpload(f"must be a non-empty string, got {_type_name(value)}", path)
    return _bounded(value, path, max_length)


def _optional_string(obj: dict[str, Any], key: str, path: str, max_length: int) -> str:
    """Absent or null reads as ''."""
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidUpload(f"must be a string or null, got {_type_name(value)}", path)
    return _bounded(value, path, max_length)


def _bounded(value: str, path: str, max_length: int) -> str:
    if "\x00" in value:  # PostgreSQL text cannot hold it
        raise InvalidUpload("must not contain NUL characters", path)
    if len(value) > max_length:
        raise InvalidUpload(f"must be at most {max_length} characters, got {len(value)}", path)
    return value


def _optional_bool(obj: dict[str, Any], key: str, path: str) -> bool:
    """Absent or null reads as false."""
    value = obj.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InvalidUpload(f"must be true or false, got {_type_name(value)}", path)
    return value


def _int(value: Any, path: str, maximum: int) -> int:
    # bool is an int in Python and 3.0 is a float in JSON: neither is a count.
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidUpload(f"must be an integer, got {_type_name(value)}", path)
    if value < 0:
        raise InvalidUpload(f"must not be negative, got {value}", path)
    if value > maximum:
        raise InvalidUpload(f"must be at most {maximum}, got {value}", path)
    return value


def _optional_int(obj: dict[str, Any], key: str, path: str, maximum: int) -> int | None:
    value = obj.get(key)
    return None if value is None else _int(value, path, maximum)


def _optional_timestamp(obj: dict[str, Any], key: str, path: str) -> datetime | None:
    value = obj.get(key)
    return None if value is None else timestamp_field(value, path)


# --- the document --------------------------------------------------------------------------------


def parse_end(value: Any, path: str) -> EndFacts | None:
    if value is None:
        return None
    end = _object(value, path)
    state = end.get("state")
    if state not in STATES:
        shown = repr(state) if isinstance(state, str) else _type_name(state)
        raise InvalidUpload(f"must be one of {', '.join(STATES)}, got {shown}", f"{path}.state")
    active_for_ms = _optional_int(end, "active_for_ms", f"{path}.active_for_ms", MAX_INT64)
    flags = {flag: _optional_bool(end, flag, f"{path}.{flag}") for flag in END_FLAGS}
    reason = end.get("os_exit_reason")
    if reason is not None and not isinstance(reason, str):
        raise InvalidUpload(
            f"must be a string or null, got {_type_name(reason)}",
            f"{path}.os_exit_reason",
        )
    if reason is not None and not reason.strip():
        reason = None  # "" says as much as null
    if reason is not None:
        reason = _bounded(reason.strip().lower(), f"{path}.os_exit_reason", MAX_EXIT_REASON)
    return EndFacts(
        state=state,
        active_for_ms=active_for_ms,
        os_exit_reason=reason,
        memory_warnings=_optional_int(end, "memory_warnings", f"{path}.memory_warnings", MAX_COUNT),
        footprint_bytes=_optional_int(end, "footprint_bytes", f"{path}.footprint_bytes", MAX_INT64),
        peak_footprint_bytes=_optional_int(
            end, "peak_footprint_bytes", f"{path}.peak_footprint_bytes", MAX_INT64
        ),
        **flags,
    )


def parse_session(value: Any, path: str) -> SessionReport:
    session = _object(value, path)
    session_id = _required_string(session, "id", f"{path}.id", MAX_SESSION_ID)
    device = _object(session.get("device"), f"{path}.device")
    build = _object(session.get("build"), f"{path}.build")
    started_at = timestamp_field(session.get("started_at"), f"{path}.started_at")
    last_seen_at = _optional_timestamp(session, "last_seen_at", f"{path}.last_seen_at")
    if last_seen_at is not None and last_seen_at < started_at:
        raise InvalidUpload("is before started_at", f"{path}.last_seen_at")
    return SessionReport(
        id=session_id,
        device_id=_required_string(device, "id", f"{path}.device.id", MAX_DEVICE_ID),
        device_model=_optional_string(device, "model", f"{path}.device.model", MAX_MODEL),
        build_version=_required_string(build, "version", f"{path}.build.version", MAX_BUILD_FIELD),
        build_number=_optional_string(build, "number", f"{path}.build.number", MAX_BUILD_FIELD),
        build_commit=_optional_string(build, "commit", f"{path}.build.commit", MAX_BUILD_FIELD),
        binary_uuid=_optional_string(
            session, "binary_uuid", f"{path}.binary_uuid", MAX_BINARY_UUID
        ),
        os=_optional_string(session, "os", f"{path}.os", MAX_MODEL),
        boot_time=_optional_timestamp(session, "boot_time", f"{path}.boot_time"),
        started_at=started_at,
        last_seen_at=last_seen_at,
        end=parse_end(session.get("end"), f"{path}.end"),
        bot=_optional_bool(session, "bot", f"{path}.bot"),
        pid=_optional_int(session, "pid", f"{path}.pid", MAX_COUNT),
    )


def parse_sessions_document(doc: Any) -> SessionsDocument:
    """The whole upload, checked; nothing is stored. Raises InvalidUpload at the first offence."""
    top = _object(doc, "")
    if top.get("format") != FORMAT:
        raise InvalidUpload(f"must be {FORMAT!r}", "format")
    version = top.get("version")
    if type(version) is not int or version not in SUPPORTED_VERSIONS:  # not 1.0, not true
        raise InvalidUpload(
            f"unsupported version {version!r}; supported: "
            + ", ".join(map(str, SUPPORTED_VERSIONS)),
            "version",
        )
    raw_sessions = top.get("sessions")
    if not isinstance(raw_sessions, list):
        raise InvalidUpload(f"must be a list, got {_type_name(raw_sessions)}", "sessions")
    sessions: list[SessionReport] = []
    first_index: dict[str, int] = {}
    for index, raw in enumerate(raw_sessions):
        parsed = parse_session(raw, f"sessions[{index}]")
        if parsed.id in first_index:
            raise InvalidUpload(
                f"duplicate session id {parsed.id!r} (also sessions[{first_index[parsed.id]}]); "
                "send each session once per upload",
                f"sessions[{index}].id",
            )
        first_index[parsed.id] = index
        sessions.append(parsed)
    return SessionsDocument(app=top.get("app"), sessions=sessions)


# --- the handler ---------------------------------------------------------------------------------


def detect(raw: bytes, doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("format") == FORMAT


def process(raw: bytes, doc: Any, meta: UploadMeta, progress: Progress) -> StoreResult:
    """Check the whole document first (nothing is written before), then store and classify."""
    if isinstance(doc, dict):
        check_app(doc.get("app"), meta)
    parsed = parse_sessions_document(doc)
    outcome = store_sessions(meta.app, parsed.sessions, meta.received_at, progress)
    return StoreResult(
        kind="sessions",
        url=reverse("foom:app_foom", args=[meta.app.pk]),
        counts=outcome.counts(),
    )


HANDLER = FormatHandler(
    name=FORMAT,
    description="memdash session reports (FOOM) JSON",
    detect=detect,
    process=process,
)
