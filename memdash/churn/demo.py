"""Demo churn: three scenarios measured in CI on two devices, four runs each, every build.

In the leaking build the image cache stops evicting, and `open_chat` makes extra large
allocations and reallocations: its churn rises by about 17 %, past the 10 % threshold, while
its elapsed time moves by less than its own run-to-run noise. The fixed build brings it back.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

from memdash.churn.logic.document import validate_churn_document
from memdash.churn.writes import store_churn
from memdash.core.demo import DemoContext

RUNS_PER_DEVICE = 4
CHURN_NOISE = 0.004  # relative spread of call counts from run to run
TIME_NOISE = 0.12  # relative spread of elapsed time from run to run

# function -> [(size of each call, calls)] per scenario
PROFILES: dict[str, dict[str, list[tuple[int, int]]]] = {
    "open_chat": {
        "malloc": [(32, 800), (256, 300), (4096, 40)],
        "free": [(32, 800), (256, 300), (4096, 40)],
        "calloc": [(64, 100)],
        "realloc": [(1024, 30)],
    },
    "scroll_timeline": {
        "malloc": [(48, 1500), (512, 200)],
        "free": [(48, 1500), (512, 200)],
        "realloc": [(2048, 20)],
    },
    "send_message": {
        "malloc": [(64, 400)],
        "calloc": [(128, 50)],
        "free": [(64, 400)],
    },
}
# What the cache adds in the leaking build: 60 images never freed, 40 growing buffers.
LEAK_EXTRA = {"malloc": [(65536, 60)], "realloc": [(16384, 40)]}
ELAPSED_MS = {"open_chat": 420.0, "scroll_timeline": 900.0, "send_message": 120.0}
RAW_CALLS = {"send_message"}  # sent as [fn, bytes] pairs; the others as per-function sums


def jittered(count: int, ctx: DemoContext) -> int:
    return max(0, round(count * (1 + ctx.rng.gauss(0, CHURN_NOISE))))


def profile_for(scenario: str, leaking: bool) -> dict[str, list[tuple[int, int]]]:
    profile = {f: list(classes) for f, classes in PROFILES[scenario].items()}
    if leaking and scenario == "open_chat":
        for function, classes in LEAK_EXTRA.items():
            profile.setdefault(function, []).extend(classes)
    return profile


def scenario_entry(scenario: str, leaking: bool, ctx: DemoContext) -> dict[str, Any]:
    profile = profile_for(scenario, leaking)
    drawn = {f: [(size, jittered(n, ctx)) for size, n in classes] for f, classes in profile.items()}
    slower = 1.08 if leaking and scenario == "open_chat" else 1.0
    entry: dict[str, Any] = {
        "name": scenario,
        "thread": "main",
        "start_marker": f"{scenario}.begin",
        "end_marker": f"{scenario}.end",
        "elapsed_ms": round(
            ELAPSED_MS[scenario] * slower * math.exp(ctx.rng.gauss(0, TIME_NOISE)), 2
        ),
    }
    if scenario in RAW_CALLS:
        entry["calls"] = [
            [function, size] for function, classes in drawn.items() for size, n in classes
            for _ in range(n)
        ]  # fmt: skip
    else:
        entry["functions"] = {
            function: {
                "count": sum(n for _, n in classes),
                "bytes": sum(size * n for size, n in classes),
                "log2_bytes": sum(math.log2(size) * n for size, n in classes),
            }
            for function, classes in drawn.items()
        }
    return entry


def load(ctx: DemoContext) -> None:
    for build in ctx.builds:
        leaking = build.pk == ctx.leaking_build.pk
        for device_index, device in enumerate(ctx.devices[:2]):
            runs = [
                {
                    "id": f"ci-{build.number}-{device.device_key}-{run}",
                    "scenarios": [scenario_entry(s, leaking, ctx) for s in PROFILES],
                }
                for run in range(RUNS_PER_DEVICE)
            ]
            meta = ctx.meta_for(build, device)
            doc = {
                "format": "memdash.churn",
                "version": 1,
                "app": {"id": ctx.app.bundle_id, "platform": ctx.app.platform},
                "build": {"version": build.version, "number": build.number},
                "device": {"id": device.device_key, "model": device.model, "os": device.os},
                "captured_at": (meta.received_at + timedelta(hours=2 + device_index)).isoformat(),
                "runs": runs,
            }
            store_churn(
                ctx.app,
                build,
                device,
                validate_churn_document(doc),
                received_at=meta.received_at,
            )
