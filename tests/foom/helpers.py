"""Builders of sessions-v1 documents for the FOOM tests."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

BOOT = "2026-11-01T06:00:00+00:00"
FOREGROUND = {"state": "foreground", "active_for_ms": 60_000}


def ago(days: float = 0, hours: float = 0, minutes: float = 0) -> datetime:
    return timezone.now() - timedelta(days=days, hours=hours, minutes=minutes)


def run(
    sid: str,
    started: datetime,
    device: str = "D1",
    build: tuple[str, str] = ("8.0.51", "2741"),
    end: dict | None = None,
    **extra,
) -> dict:
    """One session; `end` None means the run has not reported its end yet."""
    session = {
        "id": sid,
        "device": {"id": device, "model": extra.pop("model", "iPhone14,5")},
        "build": {"version": build[0], "number": build[1]},
        "os": extra.pop("os", "17.4.1"),
        "boot_time": extra.pop("boot_time", BOOT),
        "started_at": started.isoformat(),
        "last_seen_at": (started + timedelta(minutes=5)).isoformat(),
        "end": end,
    }
    session.update(extra)
    return session


def ended(**facts) -> dict:
    return {**FOREGROUND, **facts}


def sessions_doc(*runs: dict) -> dict:
    return {
        "format": "memdash.sessions",
        "version": 1,
        "app": {"id": "com.example.chat", "platform": "ios"},
        "sessions": list(runs),
    }
