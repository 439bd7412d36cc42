"""Storing cycles in tests without going through the upload API."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memdash.core.writes import apps as core_services
from memdash.cycles.logic.parse import ParsedCycles
from memdash.cycles.writes import store_cycle_report

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def loop(*classes: str) -> tuple:
    """A loop of classes, each reached through an ivar named after it."""
    return tuple((cls, (f"_{cls[0].lower()}{cls[1:]}",)) for cls in classes)


def builds(app, count: int = 5) -> list:
    return [
        core_services.get_or_create_build(app, f"8.0.{i}", str(100 + i))
        for i in range(1, count + 1)
    ]


def store(app, build, cycles, device_key: str = "D-1", dropped: int = 0, hours: int = 0):
    device = core_services.get_or_create_device(app, device_key) if device_key else None
    return store_cycle_report(
        app,
        build,
        device,
        T0 + timedelta(hours=hours),
        ParsedCycles(cycles=list(cycles), dropped=dropped),
        source_format="memdash.retain-cycles",
    )
