"""Demo of the OS's own word beside the heuristic: MetricKit for the iOS app, and an Android
variant of the app with its runs and their ApplicationExitInfo records. Both go through the
ingest service as uploads, in memdash's wrappers (MetricKit one per device and build, naming
the device).

iOS: each device's day becomes one `MXMetricPayload`, its exit counts taken from how the demo's
runs of that day ended, so 8.0.4's memory-limit kills rise with its FOOMs. A few disagree, as in
the field: about one FOOM in eight was a watchdog kill by the OS's word (the app hung, no hang
flag reached the monitor), a few crashes were memory kills, and half the runs killed while
inactive were killed for memory.

Android: `com.example.chat` for Android, three builds, with a monitor that passes the OS's exit
reason as `os_exit_reason` for most runs (rules 1 and 2) and leaves it out for the others (rules
3–15). The disagreements to find: Android 17's memory limiter kills with REASON_OTHER and a
`MemoryLimiter:AnonSwap` description, which rule 2 calls `os_kill` (missed memory kills); and
ANRs the monitor did not flag, which rule 15 calls FOOMs (false FOOMs).
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any

from memdash.core.models import Membership
from memdash.core.writes import apps as core_services
from memdash.foom.models import Session
from memdash.ingest.demo.diagnostics import load_diagnostics
from memdash.ingest.demo.matrix import upload

if TYPE_CHECKING:
    from memdash.core.demo import DemoContext

# --- iOS: MetricKit ------------------------------------------------------------------------------

# How a run's class shows in MetricKit: (foreground?, reason key), by the OS's word.
IOS_EXIT = {
    "foom": (True, "cumulativeMemoryResourceLimitExitCount"),
    "background_oom": (False, "cumulativeMemoryPressureExitCount"),
    "crash": (True, "cumulativeBadAccessExitCount"),
    "app_hang": (True, "cumulativeAppWatchdogExitCount"),
    "user_quit": (True, "cumulativeNormalAppExitCount"),
    "exit": (True, "cumulativeNormalAppExitCount"),
    "thermal_kill": (True, "cumulativeCPUResourceLimitExitCount"),
    "inactive_kill": (True, "cumulativeAbnormalExitCount"),
    "excluded": (True, "cumulativeNormalAppExitCount"),
}
OTHERWISE = (False, "cumulativeNormalAppExitCount")  # upgrades, reboots: ended in the background
MEMORY_LIMIT = "cumulativeMemoryResourceLimitExitCount"
WATCHDOG = "cumulativeAppWatchdogExitCount"
# What the OS says instead of the heuristic, for a share of a class's runs: about one FOOM in
# eight was a watchdog kill, a few crashes and half the inactive kills were memory kills.
OS_SAYS_OTHERWISE = {
    "foom": (1 / 8, WATCHDOG),
    "crash": (0.05, MEMORY_LIMIT),
    "inactive_kill": (0.5, MEMORY_LIMIT),
}


def metrickit_payload(
    day: date, version: str, number: str, model: str, os: str, runs: list[dict[str, Any]],
    rng: random.Random,
) -> dict[str, Any]:  # fmt: skip
    """One device's day as `MXMetricPayload.jsonRepresentation()` writes it."""
    foreground: dict[str, int] = defaultdict(int)
    background: dict[str, int] = defaultdict(int)
    for run in runs:
        in_front, key = IOS_EXIT.get(run["classification"], OTHERWISE)
        share, instead = OS_SAYS_OTHERWISE.get(run["classification"], (0.0, key))
        if rng.random() < share:
            key = instead
        (foreground if in_front else background)[key] += 1
    peak = max((r["peak_footprint_bytes"] or 0) for r in runs)
    suspended = [
        r["footprint_bytes"] for r in runs if r["end_state"] in ("background", "suspended")
    ]
    start = datetime.combine(day, time(0, 0), UTC)
    payload: dict[str, Any] = {
        "timeStampBegin": f"{start:%Y-%m-%d %H:%M:%S} +0000",
        "timeStampEnd": f"{start + timedelta(hours=23, minutes=59):%Y-%m-%d %H:%M:%S} +0000",
        "appVersion": version,
        "metaData": {
            "appBuildVersion": number,
            "osVersion": f"iPhone OS {os}",
            "regionFormat": "US",
            "platformArchitecture": "arm64e",
            "deviceType": model,
            "bundleIdentifier": "com.example.chat",
        },
        "applicationExitMetrics": {
            "foregroundExitData": dict(foreground),
            "backgroundExitData": dict(background),
        },
        "cpuMetrics": {"cumulativeCPUTime": f"{rng.randint(20, 400)} sec"},
    }
    if peak:
        memory: dict[str, Any] = {"peakMemoryUsage": f"{peak // 1000} kB"}
        if suspended:
            average = sum(suspended) / len(suspended) * 0.3  # what is left once suspended
            memory["averageSuspendedMemory"] = {
                "averageValue": f"{int(average // 1000)} kB",
                "standardDeviation": 0,
                "sampleCount": len(suspended),
            }
        payload["memoryMetrics"] = memory
    return payload


def load_metrickit(ctx: DemoContext) -> None:
    """A payload per device and day of the demo's runs, one upload per build and device (the
    wrapper names the device, as an app relaying its own payloads does: the agreement then
    compares the runs of the devices that sent MetricKit)."""
    days: dict[tuple[int, str, date], list[dict[str, Any]]] = defaultdict(list)
    runs = (
        Session.objects.filter(app=ctx.app)
        .exclude(classification="pending")
        .order_by("build_id", "device__device_key", "started_at")
        .values(
            "build_id", "device__device_key", "device__model", "os", "started_day",
            "classification", "end_state", "footprint_bytes", "peak_footprint_bytes",
        )
    )  # fmt: skip
    for run in runs:
        days[(run["build_id"], run["device__device_key"], run["started_day"])].append(dict(run))
    for build in ctx.builds:
        devices = sorted({device for build_id, device, _ in days if build_id == build.pk})
        for device in devices:
            payloads = [
                metrickit_payload(
                    day, build.version, build.number, day_runs[-1]["device__model"],
                    day_runs[-1]["os"], day_runs, ctx.rng,
                )
                for (build_id, key, day), day_runs in days.items()
                if build_id == build.pk and key == device
            ]  # fmt: skip
            doc = {
                "format": "memdash.metrickit",
                "version": 1,
                "app": {"id": ctx.app.bundle_id, "platform": ctx.app.platform},
                "device": {"id": device},
                "payloads": payloads,
            }
            upload(ctx, doc, f"metrickit-{build.version}-{device}.json", {})


# --- Android: sessions and ApplicationExitInfo ----------------------------------------------------

ANDROID_BUILDS = [("8.0.3", "103"), ("8.0.4", "104"), ("8.0.5", "105")]
ANDROID_DEVICES = 60
RUNS_PER_DEVICE = 8
# model, Android version, whether its memory limiter is on (Android 17)
ANDROID_MODELS = [
    ("Pixel 9", "17", True),
    ("Pixel 6", "15", False),
    ("Pixel 8", "17", True),
    ("SM-S921B", "16", False),
]
LIMITER = "MemoryLimiter:AnonSwap"
REASON_CODES = {"low_memory": 3, "crash": 4, "anr": 6, "user_requested": 10, "other": 13}


@dataclass(frozen=True)
class Death:
    """How a run really ended: the OS's record, and what the monitor knew."""

    reason: str
    foreground: bool
    description: str = ""


def _death(rng: random.Random, memory_share: float, limiter: bool) -> Death:
    roll = rng.random()
    if roll < memory_share:
        if limiter and rng.random() < 0.6:
            return Death("other", True, LIMITER)
        return Death("low_memory", True)
    roll -= memory_share
    for share, death in (
        (0.02, Death("crash", True)),
        (0.03, Death("anr", True)),
        (0.2, Death("user_requested", True)),
    ):
        if roll < share:
            return death
        roll -= share
    return Death("low_memory", False)  # a cached process reclaimed in the background


def _android_run(
    rng: random.Random, sid: str, pid: int, device: tuple[str, str, str], build: tuple[str, str],
    start: datetime, death: Death,
) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
    """A run as the sessions format says it, and its exit as ApplicationExitInfo says it."""
    active_ms = int(rng.uniform(30_000, 1_500_000))
    died = start + timedelta(milliseconds=active_ms)
    reported = rng.random() < 0.6  # the monitor read the OS's reason at the next launch
    end: dict[str, Any] = {
        "state": "foreground" if death.foreground else "background",
        "active_for_ms": active_ms,
    }
    if reported:
        end["os_exit_reason"] = death.reason
    elif death.reason == "crash":
        end["crashed"] = True
    elif death.reason == "anr" and rng.random() < 0.2:
        end["main_thread_blocked"] = True  # most ANRs pass unflagged: rule 15 calls them FOOMs
    elif death.reason == "user_requested":
        end["user_quit"] = True
    run = {
        "id": sid, "pid": pid, "device": {"id": device[0], "model": device[1]},
        "build": {"version": build[0], "number": build[1]}, "os": device[2],
        "started_at": start.isoformat(), "last_seen_at": (died - timedelta(seconds=5)).isoformat(),
        "end": end,
    }  # fmt: skip
    memory = death.reason == "low_memory" or death.description == LIMITER
    pss_kb = int(
        rng.uniform(550_000, 900_000)
        if memory and death.foreground
        else rng.uniform(90_000, 300_000)
    )
    exit_info = {
        "pid": pid, "processName": "com.example.chat", "reason": REASON_CODES[death.reason],
        "importance": 100 if death.foreground else 400, "description": death.description or None,
        "timestamp": int(died.timestamp() * 1000), "pss": pss_kb, "rss": int(pss_kb * 1.3),
        "status": 0, "definingUid": 10234, "packageUid": 10234, "realUid": 10234,
    }  # fmt: skip
    return run, exit_info


def load_android(ctx: DemoContext) -> None:
    app = core_services.get_or_create_app("com.example.chat", "android", "Chat for Android")
    core_services.add_member(app, ctx.user, Membership.ADMIN)
    builds = [core_services.get_or_create_build(app, v, n) for v, n in ANDROID_BUILDS]
    android = replace(ctx, app=app, builds=builds, devices=[])
    rng = random.Random(17)
    devices = [
        (f"A-{5000 + i}", *ANDROID_MODELS[i % len(ANDROID_MODELS)][:2])
        for i in range(ANDROID_DEVICES)
    ]
    limiter = {model for model, _, on in ANDROID_MODELS if on}
    pids = iter(rng.sample(range(2_000, 32_000), len(builds) * ANDROID_DEVICES * RUNS_PER_DEVICE))
    for index, build in enumerate(builds):
        week = ctx.build_date(ctx.builds[2 + index])  # released with the iOS 8.0.3 … 8.0.5
        memory_share = 0.06 if build.version == "8.0.4" else 0.02
        runs, exits = [], []
        for device in devices:
            starts = sorted(
                week + timedelta(seconds=rng.uniform(0, 7 * 86_400)) for _ in range(RUNS_PER_DEVICE)
            )
            for start in starts:
                death = _death(rng, memory_share, device[1] in limiter)
                sid = f"{device[0]}-{build.number}-{start:%m%d%H%M%S}"
                run, exit_info = _android_run(
                    rng, sid, next(pids), device, (build.version, build.number), start, death
                )
                runs.append(run)
                exits.append(exit_info)
        sessions = {
            "format": "memdash.sessions", "version": 1,
            "app": {"id": app.bundle_id, "platform": app.platform}, "sessions": runs,
        }  # fmt: skip
        upload(android, sessions, f"android-sessions-{build.version}.json", {})
        exits.sort(key=lambda e: -e["timestamp"])  # newest first, as the platform answers
        wrapper = {
            "format": "memdash.exitinfo", "version": 1,
            "app": {"id": app.bundle_id, "platform": app.platform},
            "build": {"version": build.version, "number": build.number}, "exits": exits,
        }  # fmt: skip
        upload(android, wrapper, f"android-exitinfo-{build.version}.json", {})


def load(ctx: DemoContext) -> None:
    load_metrickit(ctx)
    load_diagnostics(ctx)
    load_android(ctx)
