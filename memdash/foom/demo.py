"""Demo sessions: a week of runs per build on 150 devices, with a FOOM rate of about 1% that rises
to about 5% in the leaking build (its image cache never evicts) and falls back after the fix.

Runs are stored one build at a time, as the monitors would upload them, so the last run of each
device in a build is first classified after its grace period and then re-classified as an app
upgrade when the next build's runs arrive. A few FOOM runs of every build (more in the leaking one)
get a snapshot with trigger `foom` whose `session` is the run's id, so the FOOM pages can link to
what filled memory.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from memdash.allocations.demo import snapshot_document
from memdash.allocations.writes.snapshots import store_snapshot_document
from memdash.core.models import Build, Device
from memdash.foom.logic.classify import EndFacts
from memdash.foom.logic.reports import SessionReport
from memdash.foom.models import Session
from memdash.foom.writes.sessions import store_sessions

if TYPE_CHECKING:
    from memdash.core.demo import DemoContext

DEVICE_COUNT = 150
RUNS_PER_DEVICE = 8  # per build, over its week
# Model, OS, and the footprint at which jetsam kills a foreground app on it (bytes).
MODELS = [
    ("iPhone14,5", "17.4.1", 3_000 * 2**20),
    ("iPhone12,1", "16.7.2", 2_000 * 2**20),
    ("iPhone15,2", "17.5", 3_000 * 2**20),
    ("iPhone13,2", "17.4.1", 2_800 * 2**20),
    ("iPhone11,8", "16.7.8", 1_400 * 2**20),
]
OS_UPDATES = {"17.4.1": "17.5", "17.5": "17.6", "16.7.2": "16.7.8", "16.7.8": "16.7.10"}
# Share of all runs that end in a FOOM: before the leak, in the leaking build, after the fix.
SHARES_BEFORE = [0.005, 0.0045, 0.005]
SHARE_LEAKING = 0.03
SHARE_FIXED = 0.003
# The FOOM snapshots of the leaking build come from long runs: its cache holds this many times
# the images of a short one, enough to dominate the memory of those runs.
LEAK_GROWTH_IN_LONG_RUNS = 25
SNAPSHOTS_PER_BUILD = 3
SNAPSHOTS_IN_LEAKING_BUILD = 6


def load(ctx: DemoContext) -> None:
    rng = ctx.rng
    devices = _devices(ctx)
    boot = {key: ctx.build_date(ctx.builds[0]) - timedelta(days=3) for key, *_ in devices}
    os_of = {key: os for key, _, os, _ in devices}
    last_run: dict[str, SessionReport] = {}
    leak = ctx.builds.index(ctx.leaking_build)
    for index, build in enumerate(ctx.builds):
        share = (
            SHARES_BEFORE[index % len(SHARES_BEFORE)]
            if index < leak
            else SHARE_LEAKING
            if index == leak
            else SHARE_FIXED
        )
        runs = len(devices) * RUNS_PER_DEVICE
        fooms = set(rng.sample(range(runs), round(share * runs)))  # which runs end in a FOOM
        week = ctx.build_date(build)
        reports: list[SessionReport] = []
        for key, model, _, limit in devices:
            if rng.random() < 0.05:  # an OS update during the week
                os_of[key] = OS_UPDATES.get(os_of[key], os_of[key])
            starts = sorted(
                week + timedelta(seconds=rng.uniform(0, 7 * 86_400)) for _ in range(RUNS_PER_DEVICE)
            )
            for start in starts:
                if rng.random() < 0.03:
                    boot[key] = start - timedelta(minutes=rng.uniform(1, 30))
                end = _end(rng, len(reports) in fooms, limit)
                assert end.active_for_ms is not None  # _end always sets it
                report = SessionReport(
                    id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                    device_id=key,
                    device_model=model,
                    build_version=build.version,
                    build_number=build.number,
                    build_commit=build.commit,
                    binary_uuid="",
                    os=os_of[key],
                    boot_time=boot[key],
                    started_at=start,
                    last_seen_at=start + timedelta(milliseconds=end.active_for_ms + 5_000),
                    end=end,
                    bot=False,
                )
                reports.append(report)
                last_run[key] = report
        if build == ctx.builds[-1]:
            # The newest run of every device has not reported its end yet: pending.
            newest = {r.id for r in last_run.values()}
            reports = [_without_end(r) if r.id in newest else r for r in reports]
        store_sessions(ctx.app, reports, received_at=week + timedelta(days=7))
        _snapshots_for_fooms(ctx, build, reports)


def _devices(ctx: DemoContext) -> list[tuple[str, str, str, int]]:
    """The core demo's four devices, then more of the same models."""
    limits = {model: limit for model, _, limit in MODELS}
    devices = [(d.device_key, d.model, d.os, limits.get(d.model, 2 * 2**30)) for d in ctx.devices]
    for i in range(DEVICE_COUNT - len(devices)):
        model, os, limit = MODELS[i % len(MODELS)]
        devices.append((f"D-{2000 + i}", model, os, limit))
    return devices


def _end(rng: random.Random, foom: bool, limit: int) -> EndFacts:
    """How one run ended: mostly in the background, sometimes a crash or a quit; a FOOM is a
    foreground run that reached the device's memory limit after memory warnings."""
    roll = rng.random()
    active = int(rng.uniform(20_000, 1_200_000))
    footprint = int(limit * rng.uniform(0.2, 0.6))
    if foom:
        return EndFacts(
            state="foreground",
            active_for_ms=active,
            memory_warnings=rng.randint(2, 7),
            footprint_bytes=int(limit * rng.uniform(0.97, 1.0)),
            peak_footprint_bytes=limit,
        )
    common: dict[str, Any] = dict(
        memory_warnings=0, footprint_bytes=footprint, peak_footprint_bytes=footprint
    )
    outcomes: list[tuple[float, dict[str, Any]]] = [
        (0.015, dict(state="foreground", crashed=True)),
        (0.005, dict(state="foreground", main_thread_blocked=True)),
        (0.20, dict(state="foreground", user_quit=True)),
        (0.004, dict(state="foreground", exit_called=True)),
        (0.002, dict(state="foreground", thermal_critical=True)),
        (0.01, dict(state="inactive")),
        (0.004, dict(state="foreground", debugger=True)),
    ]
    for chance, facts in outcomes:
        if roll < chance:
            return EndFacts(active_for_ms=active, **facts, **common)
        roll -= chance
    if roll < 0.003:  # killed during launch: the state was not yet reliable
        return EndFacts(state="foreground", active_for_ms=rng.randint(50, 900), **common)
    return EndFacts(state=rng.choice(["background", "suspended"]), active_for_ms=active, **common)


def _without_end(report: SessionReport) -> SessionReport:
    return replace(report, end=None, last_seen_at=report.started_at + timedelta(minutes=1))


def _snapshots_for_fooms(ctx: DemoContext, build: Build, reports: list[SessionReport]) -> None:
    """Snapshots taken at the last memory warning of some FOOM runs, linked by session id."""
    wanted = SNAPSHOTS_IN_LEAKING_BUILD if build == ctx.leaking_build else SNAPSHOTS_PER_BUILD
    fooms = Session.objects.filter(build=build, classification="foom").order_by("-started_at")
    by_id = {r.id: r for r in reports}
    for session in fooms.select_related("device")[:wanted]:
        report = by_id.get(session.session_id)
        if report is None or report.last_seen_at is None:
            continue
        device: Device = session.device
        captured = report.last_seen_at - timedelta(seconds=10)
        doc = snapshot_document(
            ctx, build, device, captured, trigger="foom", session=session.session_id, scale=1.6
        )
        if build == ctx.leaking_build:
            _grow_leak(doc, ctx.leaking_category, LEAK_GROWTH_IN_LONG_RUNS)
        store_snapshot_document(doc, ctx.meta_for(build, device))


def _grow_leak(doc: dict[str, Any], category: str, factor: int) -> None:
    """What a long run of the leaking build holds: the cache's growth in every generation."""
    for row in doc["allocations"]:
        if row["category"] == category and row["generation"] is not None:
            size = row["persistent_bytes"] // max(row["persistent"], 1)
            row["persistent"] *= factor
            row["persistent_bytes"] = row["persistent"] * size
