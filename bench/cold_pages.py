"""Cold pages in a browser: how long the pages a user opens first take to DOMContentLoaded in
headless Chromium with an empty browser cache, served as production serves them (gunicorn,
DEBUG off, static files collected, compressed and served by whitenoise), on the demo data.

Every load is in a new browser context (no cached static file, no cached page; the login's
session cookie alone is carried over). Each page is loaded once untimed (a web process's first
request of a page warms it), then `runs` times; the navigation's own timing is read
(`PerformanceNavigationTiming`, from the start of the navigation): DOMContentLoaded, the first
byte, the load event, and the bytes that came over the wire. Target: ≤ 500 ms to
DOMContentLoaded (issue 16).

    .venv/bin/python bench/cold_pages.py [--runs 5] [--write]  # on its own, on SQLite
    python bench/run.py --only cold                             # a part of the benchmark
    python bench/cold_pages.py setup                            # child: the demo, page paths

With --write, its section ("## Cold pages in a browser", only that one) goes into
docs/performance.md and its figures into docs/performance.json (`cold_pages`), where
`bench/report.py` renders them from.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    BENCH,
    PYTHON,
    ROOT,
    clone_database,
    collect_static,
    emit,
    fresh_memdash_database,
    log,
    memdash_env,
    replace_section,
    run_json,
)

SECTION = "## Cold pages in a browser"
TARGET_MS = 500
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
PERFORMANCE = ROOT / "docs" / "performance.md"
KEPT_RESULTS = ROOT / "docs" / "performance.json"
# The navigation's timing once the page has loaded, and the bytes of it and of what it loaded.
TIMING_JS = """() => {
  const n = performance.getEntriesByType('navigation')[0];
  const resources = performance.getEntriesByType('resource');
  return {dcl: n.domContentLoadedEventEnd, ttfb: n.responseStart, load: n.loadEventEnd,
          bytes: n.transferSize + resources.reduce((sum, r) => sum + r.transferSize, 0),
          requests: 1 + resources.length};
}"""


def demo_pages() -> dict[str, Any]:
    """Child process on DATABASE_URL: load the demo, answer the paths of the main pages and a
    session of the demo user (its cookie: production's is Secure, which a browser would not
    send back over the benchmark's plain HTTP, so the harness sets it)."""
    from common import setup_django

    setup_django()
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore
    from django.urls import reverse

    from memdash.allocations.models import Snapshot, Timeline
    from memdash.cycles.models import Cluster
    from memdash.ingest.models import Upload
    from memdash.leaks.models import LeakGroup
    from memdash.site.demo import load_demo

    ctx = load_demo(0)
    if ctx is None:
        raise SystemExit("the demo is loaded already: measure on a fresh database")
    app = ctx.app.pk
    build = ctx.leaking_build
    snapshot = Snapshot.objects.filter(build=build).order_by("pk").first()
    assert snapshot is not None
    other = Snapshot.objects.filter(build=ctx.builds[2]).order_by("pk").first()
    assert other is not None
    timed = Timeline.objects.filter(snapshot__build__app=ctx.app).values_list("snapshot", flat=True)
    cluster = Cluster.objects.filter(app=ctx.app).order_by("pk").first()
    group = LeakGroup.objects.filter(app=ctx.app).order_by("pk").first()
    upload = Upload.objects.filter(app=ctx.app).order_by("pk").first()
    assert cluster is not None and group is not None and timed.exists()
    session = SessionStore()
    session[SESSION_KEY] = str(ctx.user.pk)
    # the backend that signs users in (the first one, axes', only refuses locked-out logins)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = ctx.user.get_session_auth_hash()
    session.save()
    pages = {
        "login": reverse("login"),
        "apps": reverse("core:app_list"),
        "builds": reverse("snapshots:app_detail", args=[app]),
        "build": reverse("snapshots:build_detail", args=[app, build.pk]),
        "snapshot": reverse("snapshots:snapshot_detail", args=[snapshot.pk]),
        "allocations list": reverse("snapshots:allocations", args=[snapshot.pk]),
        "build allocations list": reverse("snapshots:build_allocations", args=[app, build.pk]),
        "snapshot with a timeline": reverse("snapshots:snapshot_detail", args=[timed.first()]),
        "generations": reverse("snapshots:generations", args=[snapshot.pk]),
        "call tree": reverse("snapshots:calltree", args=[snapshot.pk]),
        "build call tree": reverse("snapshots:build_calltree", args=[app, build.pk]),
        "generation diff": reverse("compare:generation_diff", args=[app, snapshot.pk]),
        "snapshot diff": reverse("compare:snapshot_diff", args=[app])
        + f"?base={other.pk}&target={snapshot.pk}",
        "build compare": reverse("compare:build_compare", args=[app]),
        "trends": reverse("compare:trends", args=[app]),
        "FOOM": reverse("foom:app_foom", args=[app]),
        "FOOM of a build": reverse("foom:build_foom", args=[app, build.pk]),
        "OS exits": reverse("foom:os_exits", args=[app]),
        "retain cycles": reverse("cycles:cluster_list", args=[app]),
        "retain cycle cluster": reverse("cycles:cluster_detail", args=[app, cluster.pk]),
        "leaks": reverse("leaks:group_list", args=[app]),
        "leak group": reverse("leaks:group_detail", args=[app, group.pk]),
        "LeakCanary traces": reverse("leaks:trace_list", args=[app]),
        "churn": reverse("churn:app_churn", args=[app]),
        "uploads": reverse("ingest:upload_list", args=[app]),
        "alerts": reverse("alerts:app_alerts", args=[app]),
        "debug files": reverse("snapshots:debug_files", args=[app]),
        "app settings": reverse("site:app_settings", args=[app]),
    }
    if upload is not None:  # the demo stores some of its data through the upload door
        pages["upload"] = reverse("ingest:upload_detail", args=[upload.pk])
    cookie = {"name": settings.SESSION_COOKIE_NAME, "value": session.session_key}
    return {"pages": pages, "cookie": cookie}


def measure(base_url: str, setup: dict[str, Any], runs: int, only: list[str] | None = None) -> dict:
    """Each page `runs` times in a new context (after one untimed load), logged in but for the
    login page."""
    from playwright.sync_api import sync_playwright

    pages = {k: v for k, v in setup["pages"].items() if not only or k in only}
    out = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        cookie = {**setup["cookie"], "url": base_url}
        for name, path in pages.items():
            loads = []
            for i in range(runs + 1):
                context = browser.new_context(viewport={"width": 1280, "height": 900})
                if name != "login":
                    context.add_cookies([cookie])
                tab = context.new_page()
                response = tab.goto(base_url + path, wait_until="load")
                if response is None or response.status != 200:
                    raise RuntimeError(f"{path} answered {response and response.status}")
                if name != "login" and "/login/" in tab.url:
                    raise RuntimeError(f"{path} asked to sign in: the session was not taken")
                if i:  # the first load warms the server
                    loads.append(tab.evaluate(TIMING_JS))
                context.close()
            out.append({"page": name, "path": path, "loads": loads})
            log(f"{name}: DOMContentLoaded {statistics.median(x['dcl'] for x in loads):.0f} ms")
        browser.close()
    return {"runs": runs, "pages": out}


def measure_cold_pages(url: str, var_dir: Path, runs: int, only: list[str] | None = None) -> dict:
    """The demo in the (migrated, empty) database `url`, served by gunicorn, measured."""
    from servers import serving

    collect_static(var_dir)
    setup = run_json([PYTHON, str(BENCH / "cold_pages.py"), "setup"], memdash_env(url, var_dir))
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0]
    with serving(url, var_dir, web_workers=2) as running:
        result = measure(running.base_url, setup, runs, only)
    database = "PostgreSQL" if url.startswith("postgres") else "SQLite"
    return {**result, "started": started, "load": load, "database": database}


def part(mode: Any, args: Any, var_dir: Path, dbs: Any, templates: dict[str, str]) -> dict:
    """`bench/run.py`'s `cold` part: a copy of the run's migrated database, the mode's pages
    (every one in the full run) and runs."""
    vendor = "postgresql" if args.pg else "sqlite"
    name = f"md_bench_cold{args.db_suffix}"
    url = clone_database(templates[vendor], name, var_dir, args.pg_server)
    return {"cold_pages": measure_cold_pages(url, var_dir, mode.cold_runs, mode.cold_pages)}


def _stats(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def worst_page(cold: dict[str, Any]) -> tuple[str, float]:
    """The page with the slowest median DOMContentLoaded, and that median (ms)."""
    medians = {p["page"]: statistics.median(x["dcl"] for x in p["loads"]) for p in cold["pages"]}
    name = max(medians, key=lambda k: medians[k])
    return name, medians[name]


def target_rows(cold: dict[str, Any]) -> list[list[str]]:
    """The row of the report's "Targets" table (none when this part was not measured)."""
    if not cold or not cold.get("pages"):
        return []
    name, worst = worst_page(cold)
    return [
        [
            f"cold page in Chromium to DOMContentLoaded, {len(cold['pages'])} main pages, median "
            f"of {cold['runs']} (slowest: {name})",
            f"≤ {TARGET_MS} ms",
            f"{worst:.0f} ms",
            "—",
            "met" if worst <= TARGET_MS else "**missed**",
        ]
    ]


def section(cold: dict[str, Any]) -> list[str]:
    """The section's lines (empty when this part was not measured)."""
    if not cold or not cold.get("pages"):
        return []
    rows = []
    for p in cold["pages"]:
        loads = p["loads"]
        dcl, low, high = _stats([x["dcl"] for x in loads])
        rows.append(
            f"| {p['page']} | **{dcl:.0f} ms** ({low:.0f} to {high:.0f}) "
            f"| {statistics.median(x['ttfb'] for x in loads):.0f} ms "
            f"| {statistics.median(x['load'] for x in loads):.0f} ms "
            f"| {statistics.median(x['bytes'] for x in loads) / 1024:.0f} KiB in "
            f"{loads[0]['requests']} | {'met' if dcl <= TARGET_MS else '**missed**'} |"
        )
    slowest, worst = worst_page(cold)
    verdict = (
        "met on every page"
        if worst <= TARGET_MS
        else f"**missed** (slowest: {slowest}, {worst:.0f} ms)"
    )
    return [
        SECTION,
        "",
        f"Measured by `bench/cold_pages.py` on {cold['started']}, load average (1 min) "
        f"{cold['load']:.1f} when it started (2 cores shared with other work): the demo "
        f"(`load_demo`) on {cold['database']}, served by gunicorn (2 workers, DEBUG off, static "
        "files collected, compressed and served by whitenoise), loaded in headless Chromium with "
        "an empty cache each time (a new browser context per load), signed in. Median of "
        f"{cold['runs']} loads after an untimed one, from the start of the navigation; "
        f"target ≤ {TARGET_MS} ms to DOMContentLoaded: {verdict}. Bytes are those over the wire "
        "(compressed) by the load event, in that many requests.",
        "",
        f"| page | DOMContentLoaded | first byte | load event | transferred | ≤ {TARGET_MS} ms |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", choices=["setup"], help="child: the demo's pages")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--var", type=Path, help="working directory (default var/bench-cold)")
    parser.add_argument("--write", action="store_true", help="write docs/performance.md")
    args = parser.parse_args(argv)
    if args.command == "setup":
        emit(demo_pages())
        return 0
    clock = time.perf_counter()
    var_dir = (args.var or ROOT / "var" / "bench-cold").resolve()
    var_dir.mkdir(parents=True, exist_ok=True)
    url = fresh_memdash_database("sqlite", "md_cold_pages", var_dir, "")
    cold = measure_cold_pages(url, var_dir, args.runs)
    lines = section(cold)
    print("\n".join(lines))
    log(f"measured in {time.perf_counter() - clock:.0f} s")
    if args.write:  # this section alone, after "Pages" the first time, and its figures
        replace_section(PERFORMANCE, SECTION, "\n".join(lines), after="## Pages")
        kept = json.loads(KEPT_RESULTS.read_text()) if KEPT_RESULTS.exists() else {}
        kept["cold_pages"] = cold
        KEPT_RESULTS.write_text(json.dumps(kept, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
