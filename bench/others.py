"""Pages of the other domains at scale: build compare over 200 snapshots, the FOOM trend over
100 builds and 1,000,000 sessions, the retain-cycle cluster list with 10,000 clusters.

Data goes in through memdash's own doors (the snapshot store service, the upload service for
the sessions and retain-cycles formats), so what is timed is what a real server would hold.
A domain that is not there (yet) is skipped with a note, never failed. Loading stops early when
it would take longer than its time budget on this machine; the figures then say at what scale
they were measured.

    python bench/others.py worker compare|foom|cycles [--scale small|full]   # child: JSON out
"""

from __future__ import annotations

import argparse
import gzip
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH, PYTHON, emit, log, memdash_env, run_json  # noqa: E402
from generate import Sizes, snapshot_document  # noqa: E402
from pages import sample  # noqa: E402

SCALES: dict[str, dict[str, Any]] = {
    "full": {
        "compare_snapshots": 200,
        "compare_rows": 20_000,
        "foom_builds": 100,
        "foom_devices": 10_000,
        "foom_days": 100,
        "cycles_clusters": 10_000,
        "budget_s": 1500,
        "requests": 50,
    },
    "small": {
        "compare_snapshots": 4,
        "compare_rows": 1_000,
        "foom_builds": 3,
        "foom_devices": 20,
        "foom_days": 3,
        "cycles_clusters": 30,
        "budget_s": 60,
        "requests": 5,
    },
}
BUNDLE = "com.example.chat"


def _bench_client():
    from django.contrib.auth import get_user_model
    from django.test import Client

    user_model = get_user_model()
    user = user_model.objects.filter(
        username="bench"
    ).first() or user_model.objects.create_superuser("bench", "bench@example.com", "bench-pass-123")
    client = Client()
    client.force_login(user)
    return client


def _getter(client, url: str, params: dict | None = None):
    def run() -> None:
        response = client.get(url, params or {})
        if response.status_code != 200:
            raise RuntimeError(
                f"GET {url} answered {response.status_code}: {response.content[:300]!r}"
            )
        _ = response.content

    return run


def _time_endpoints(
    client, endpoints: dict[str, tuple[str, dict]], requests: int = 50
) -> dict[str, Any]:
    timings: dict[str, Any] = {}
    for name, (url, params) in endpoints.items():
        fn = _getter(client, url, params)
        try:
            started = time.perf_counter()
            fn()
            first = time.perf_counter() - started
            # A request slower than 2 s gets 10 samples, not 50: the figure is clear by then.
            timings[name] = sample(fn, requests=requests if first < 2 else 10, warmup=2)
            timings[name]["first"] = first
        except RuntimeError as exc:
            timings[name] = {"error": str(exc)}
    return timings


def _missing(module: str) -> str | None:
    import importlib

    try:
        importlib.import_module(module)
    except Exception as exc:  # not written yet, or broken right now
        return f"{module} is not available: {exc.__class__.__name__}: {exc}"
    return None


def _upload_json(app, doc: dict, name: str) -> Any:
    """Through the upload service, as the API would: receive, then process."""
    from memdash.ingest.tasks import process_upload
    from memdash.ingest.writes.uploads import receive_upload

    body = gzip.compress(orjson.dumps(doc), 1, mtime=0)
    upload, _ = receive_upload(app, iter([body]), filename=name, run=False)
    return process_upload(upload)


# ---------------------------------------------------------------------------------------------
# Build compare


def compare_worker(scale: dict[str, Any]) -> dict[str, Any]:
    from common import setup_django

    setup_django()
    reason = _missing("memdash.compare.reads.builds")
    if reason:
        return {"skipped": reason}
    from memdash.allocations.writes.snapshots import store_snapshot_document
    from memdash.core.writes import apps as core_services
    from memdash.core.writes.uploads import UploadMeta

    app = core_services.get_or_create_app(BUNDLE, "ios", "Chat")
    total = scale["compare_snapshots"]
    rows = scale["compare_rows"]
    started = time.perf_counter()
    stored = 0
    for i in range(total):
        base = i % 2 == 0
        sizes = Sizes(
            rows=rows,
            nodes=max(1000, rows // 5),
            categories=5000,
            seed=41,
            variant=i + 1,
            device_id=f"CMP-{i:04d}",
            build_version="9.1.0" if base else "9.2.0",
            build_number="910" if base else "920",
        )
        store_snapshot_document(
            snapshot_document(sizes), UploadMeta(app=app, received_at=datetime.now(UTC))
        )
        stored += 1
        if time.perf_counter() - started > scale["budget_s"]:
            break
    load_s = time.perf_counter() - started
    client = _bench_client()
    params = {"base": "9.1.0:910", "target": "9.2.0:920"}
    timings = _time_endpoints(
        client,
        {
            "api_compare": (f"/api/v1/apps/{app.pk}/compare", params),
            # every category in one answer, not the default page of 500
            "api_compare_all": (f"/api/v1/apps/{app.pk}/compare", {**params, "limit": 10_000}),
        },
        scale["requests"],
    )
    return {
        "snapshots": stored,
        "rows_per_snapshot": rows,
        "load_seconds": load_s,
        "timings": timings,
        "scaled_down": stored < total,
    }


# ---------------------------------------------------------------------------------------------
# FOOM trend


def session_docs(builds: int, devices: int, days: int, seed: int = 5):
    """One sessions document per day: every device runs the app once a day, on the newest
    build it has installed (devices upgrade a few days after a release)."""
    rng = random.Random(seed)
    start = datetime(2026, 6, 1, tzinfo=UTC)
    lag = [rng.randint(0, 4) for _ in range(devices)]
    installed = [0] * devices
    boot = [start - timedelta(days=rng.randint(1, 30)) for _ in range(devices)]
    days_per_build = max(1, days // builds)
    for day in range(days):
        released = min(builds - 1, day // days_per_build)
        sessions = []
        for d in range(devices):
            installed[d] = max(installed[d], max(0, released - lag[d] // days_per_build))
            if rng.random() < 0.05:
                boot[d] = start + timedelta(days=day, hours=rng.randint(0, 5))
            started_at = start + timedelta(days=day, hours=6 + rng.random() * 12)
            roll = rng.random()
            end = {
                "state": "background" if roll < 0.80 else "foreground",
                "active_for_ms": rng.randint(500, 900_000),
                "crashed": 0.80 <= roll < 0.83,
                "main_thread_blocked": False,
                "user_quit": 0.83 <= roll < 0.90,
                "exit_called": False,
                "debugger": False,
                "simulator": False,
                "extension": False,
                "thermal_critical": False,
                "os_exit_reason": None,
                "memory_warnings": rng.randint(0, 4),
                "footprint_bytes": rng.randint(200, 1800) * 1024 * 1024,
                "peak_footprint_bytes": rng.randint(300, 2000) * 1024 * 1024,
            }
            sessions.append(
                {
                    "id": f"s-{d:06d}-{day:04d}",
                    "device": {"id": f"FOOM-{d:06d}", "model": "iPhone14,5"},
                    "build": {"version": f"9.{installed[d]}.0", "number": str(900 + installed[d])},
                    "os": "17.4.1",
                    "boot_time": boot[d].isoformat(),
                    "started_at": started_at.isoformat(),
                    "last_seen_at": (
                        started_at + timedelta(minutes=rng.randint(1, 60))
                    ).isoformat(),
                    "end": end,
                    "bot": False,
                }
            )
        yield {
            "format": "memdash.sessions",
            "version": 1,
            "app": {"id": BUNDLE, "platform": "ios"},
            "sessions": sessions,
        }


def foom_worker(scale: dict[str, Any]) -> dict[str, Any]:
    from common import setup_django

    setup_django()
    reason = _missing("memdash.foom.reads.rates") or _missing("memdash.foom.writes.sessions")
    if reason:
        return {"skipped": reason}
    from memdash.core.writes import apps as core_services

    app = core_services.get_or_create_app(BUNDLE, "ios", "Chat")
    planned = scale["foom_devices"] * scale["foom_days"]
    started = time.perf_counter()
    sessions = 0
    failures = []
    for day, doc in enumerate(
        session_docs(scale["foom_builds"], scale["foom_devices"], scale["foom_days"])
    ):
        upload = _upload_json(app, doc, f"sessions-{day}.json.gz")
        if upload.status != "done":
            failures.append(f"day {day}: {upload.status} {upload.error_path}: {upload.error}")
            break
        sessions += len(doc["sessions"])
        if time.perf_counter() - started > scale["budget_s"]:
            break
    load_s = time.perf_counter() - started
    from memdash.core.models import Build

    builds = Build.objects.filter(app=app).count()
    client = _bench_client()
    timings = _time_endpoints(
        client,
        {
            "api_foom_trend": (f"/api/v1/apps/{app.pk}/foom", {}),
            "foom_page": (f"/apps/{app.pk}/foom/", {}),
        },
        scale["requests"],
    )
    return {
        "sessions": sessions,
        "builds": builds,
        "load_seconds": load_s,
        "sessions_per_s": sessions / load_s if load_s else 0,
        "timings": timings,
        "failures": failures,
        "scaled_down": sessions < planned,
    }


# ---------------------------------------------------------------------------------------------
# Retain-cycle clusters


def cycle_docs(clusters: int, per_doc: int = 1000, seed: int = 9):
    """Reports holding `clusters` distinct loops of app classes (none contained in another, so
    each is its own cluster), each seen on several devices, with some system classes on the
    way, as the detector reports them."""
    rng = random.Random(seed)
    system = ["__NSMallocBlock__", "NSTimer", "__NSDictionaryM", "UIView", "NSMutableArray"]
    seen: list[list[dict]] = []
    made = 0
    report = 0
    while made < clusters:
        cycles = []
        for _ in range(min(per_doc, clusters - made)):
            a, b = f"BenchController{made}", f"BenchDataSource{made}"
            loop = [{"class": a, "via": ["_dataSource"]}, {"class": b, "via": ["_owner"]}]
            if rng.random() < 0.5:
                loop.insert(1, {"class": rng.choice(system), "via": ["_onUpdate"]})
            cycles.append(loop)
            seen.append(loop)
            made += 1
        cycles += [rng.choice(seen) for _ in range(per_doc // 5)]  # seen again elsewhere
        yield {
            "format": "memdash.retain-cycles",
            "version": 1,
            "app": {"id": BUNDLE, "platform": "ios"},
            "build": {"version": f"9.{report % 5}.0", "number": str(900 + report % 5)},
            "device": {"id": f"CYC-{report:04d}"},
            "captured_at": (datetime(2026, 6, 1, tzinfo=UTC) + timedelta(hours=report)).isoformat(),
            "cycles": cycles,
        }
        report += 1


def cycles_worker(scale: dict[str, Any]) -> dict[str, Any]:
    from common import setup_django

    setup_django()
    reason = _missing("memdash.cycles.reads.clusters") or _missing("memdash.cycles.writes")
    if reason:
        return {"skipped": reason}
    from memdash.core.writes import apps as core_services
    from memdash.cycles.models import Cluster

    app = core_services.get_or_create_app(BUNDLE, "ios", "Chat")
    started = time.perf_counter()
    failures = []
    for i, doc in enumerate(cycle_docs(scale["cycles_clusters"])):
        upload = _upload_json(app, doc, f"cycles-{i}.json.gz")
        if upload.status != "done":
            failures.append(f"report {i}: {upload.status} {upload.error_path}: {upload.error}")
            break
        if time.perf_counter() - started > scale["budget_s"]:
            break
    load_s = time.perf_counter() - started
    clusters = Cluster.objects.filter(app=app, is_current=True).count()
    client = _bench_client()
    timings = _time_endpoints(
        client,
        {
            "api_clusters": (f"/api/v1/apps/{app.pk}/cycles", {}),
            "cluster_page": (f"/apps/{app.pk}/cycles/", {}),
        },
        scale["requests"],
    )
    return {
        "clusters": clusters,
        "load_seconds": load_s,
        "timings": timings,
        "failures": failures,
        "scaled_down": clusters < scale["cycles_clusters"],
    }


WORKERS = {"compare": compare_worker, "foom": foom_worker, "cycles": cycles_worker}


def measure_other(
    kind: str, url: str, var_dir: Path, scale: str, budget: float | None = None
) -> dict[str, Any]:
    log(f"{kind}: loading data and timing its pages ({scale})")
    cmd = [PYTHON, str(BENCH / "others.py"), "worker", kind, "--scale", scale]
    if budget:
        cmd += ["--budget", str(budget)]
    try:
        return run_json(
            cmd,
            memdash_env(url, var_dir),
            timeout=3 * 3600,
        )
    except RuntimeError as exc:
        return {"skipped": f"the {kind} benchmark failed: {str(exc)[-1500:]}"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("worker")
    w.add_argument("kind", choices=sorted(WORKERS))
    w.add_argument("--scale", choices=sorted(SCALES), default="full")
    w.add_argument("--budget", type=float, help="seconds allowed for loading the data")
    args = parser.parse_args(argv)
    scale = dict(SCALES[args.scale])
    if args.budget:
        scale["budget_s"] = args.budget
    emit(WORKERS[args.kind](scale))
    return 0


if __name__ == "__main__":
    sys.exit(main())
