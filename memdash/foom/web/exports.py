"""The FOOM pages' tables as CSV rows (`core.web.export`): the app's builds, a build's classes,
categories and FOOM runs, a run's facts and snapshots. Rates go out as fractions (0.0067),
bytes in bytes."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import batched

from memdash.allocations.models import Snapshot
from memdash.core.models import App
from memdash.core.web.export import Cell
from memdash.foom.logic.classify import END_FLAGS, Rate
from memdash.foom.models import Session
from memdash.foom.reads.rates import BuildFoom, DominantCategory, snapshots_by_session

BUILD_HEADERS = [
    "Build",
    "Runs",
    "Classified",
    "Foreground ends",
    "FOOMs",
    "FOOM rate",
    "FOOM rate 95% low",
    "FOOM rate 95% high",
    "Devices",
    "FOOM devices",
    "Per-user rate",
]
CLASS_HEADERS = ["Class", "Runs", "Share"]
CATEGORY_HEADERS = ["Category", "# Persistent", "Persistent bytes", "Share", "Snapshots"]
RUN_HEADERS = [
    "Run",
    "Started",
    "Device model",
    "OS",
    "Memory warnings",
    "Footprint at the end (bytes)",
    "Peak footprint (bytes)",
    "Rule",
    "Rule name",
    "Snapshots",
]


def _rate(rate: Rate | None) -> list[Cell]:
    return [rate.rate, rate.low, rate.high] if rate else [None, None, None]


def build_rows(trend: Iterable[BuildFoom]) -> Iterator[list[Cell]]:
    for row in trend:
        c = row.counts
        user = c.user_rate
        yield [
            str(row.build),
            c.sessions,
            c.classified,
            c.rate_sessions,
            c.foom,
            *_rate(c.session_rate),
            c.classified_devices,
            c.foom_devices,
            user.rate if user else None,
        ]


def class_rows(classes: Iterable[tuple[str, int]], sessions: int) -> Iterator[list[Cell]]:
    for cls, n in classes:
        yield [cls, n, n / sessions if sessions else None]


def category_rows(categories: Iterable[DominantCategory]) -> Iterator[list[Cell]]:
    for c in categories:
        yield [c.name, c.persistent, c.persistent_bytes, c.share, c.snapshots]


def run_rows(app: App, runs: Iterable[Session], chunk: int = 500) -> Iterator[list[Cell]]:
    """Every FOOM run with the snapshots uploaded for it, reading the snapshots a chunk of runs
    at a time."""
    for batch in batched(runs, chunk):
        snapshots = snapshots_by_session(app, [s.session_id for s in batch])
        for s in batch:
            yield [
                s.session_id,
                s.started_at,
                s.device.model,
                s.os,
                s.memory_warnings,
                s.footprint_bytes,
                s.peak_footprint_bytes,
                s.rule,
                s.rule_name,
                " ".join(f"#{snap.pk}" for snap in snapshots.get(s.session_id, [])),
            ]


FACT_HEADERS = ["Fact", "Value"]


def fact_rows(s: Session) -> list[list[Cell]]:
    """A run's facts table, a row a fact: times in ISO 8601, the active time in milliseconds,
    the flags the run raised as the page words them."""
    rows: list[list[Cell]] = [
        ["Build", str(s.build)],
        ["Binary UUID", s.binary_uuid],
        ["Device model", s.device.model],
        ["Device id", s.device.device_key],
        ["Bot", s.bot],
        ["OS", s.os],
        ["Boot time", s.boot_time],
        ["Started", s.started_at],
        ["Last seen", s.last_seen_at],
    ]
    if not s.has_end:
        return [*rows, ["End", "not reported yet"]]
    flags = " ".join(flag.replace("_", " ") for flag in END_FLAGS if getattr(s, flag))
    return [
        *rows,
        ["State at the end", s.end_state],
        ["Active for (ms)", s.active_for_ms],
        ["Flags", flags or "none"],
        ["OS exit reason", s.os_exit_reason],
    ]


SESSION_SNAPSHOT_HEADERS = ["Snapshot", "Captured", "Trigger", "Persistent bytes"]


def session_snapshot_rows(snapshots: Iterable[Snapshot]) -> Iterator[list[Cell]]:
    """The snapshots uploaded for a run, as `selectors.snapshots_by_session` gives them."""
    for snap in snapshots:
        yield [snap.pk, snap.captured_at, snap.trigger, snap.persistent_bytes]
