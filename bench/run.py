"""Run memdash's benchmark (issue 8) and write docs/performance.md.

    python bench/run.py                      # the full benchmark (about an hour on 2 cores)
    python bench/run.py --small              # seconds: every part at a tiny scale (CI)
    python bench/run.py --only ingest,pages  # some parts; the others keep their last results
    python bench/run.py --report-only        # rewrite the document from the saved results

Parts: ingest (memdash vs the bare floor on SQLite and PostgreSQL, cold and warm, the
events shape, bytes stored), stream (a 100 MB upload body), pages (API timings on a database of
20 big snapshots on SQLite, 100 on PostgreSQL), cold (the demo's main pages to
DOMContentLoaded in Chromium with an empty cache, through gunicorn: cold_pages.py), others
(build compare, FOOM trend, cycle clusters), load (8 clients through gunicorn and db_worker, at
two upload sizes), growth (10,000 → 1,000,000 rows), pprof (where Go is installed), symbols
(naming 40,000 frames, the job's database writes, a dSYM upload's memory: symbols.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cold_pages import part as part_cold  # noqa: E402
from common import (  # noqa: E402
    DEFAULT_PG_SERVER,
    ROOT,
    Database,
    clone_database,
    collect_static,
    fresh_memdash_database,
    log,
    machine_description,
    median,
    merge_document,
    pg_available,
    pg_dsn,
    pg_url,
    recreate_pg_database,
)
from generate import Sizes, snapshot_document, write_document  # noqa: E402
from report import load_runs  # noqa: E402
from symbols import part as part_symbols  # noqa: E402

PARTS = ("ingest", "stream", "pages", "cold", "others", "load", "growth", "pprof", "symbols")


class Mode:
    """What each part does at each scale."""

    def __init__(self, small: bool):
        self.name = "small" if small else "full"
        if small:
            self.sizes = Sizes(rows=10_000, nodes=2_000, categories=400, events=10_000)
            self.trials = 1
            self.page_snapshots = 2
            self.pg_snapshots = 3
            self.page_requests = 5
            self.stream_sizes = [1_000_000, 5_000_000]
            self.load = {
                "clients": 2,
                "seconds": 3,
                "rows": [1_000],
                "web_workers": 1,
                "task_workers": 1,
                "templates": 2,
            }
            self.growth_rows = [1_000, 10_000]
            self.others_scale = "small"
            self.cold_runs, self.cold_pages = 1, ["login", "builds"]
            self.symbols_zip_mb = 16
        else:
            self.sizes = Sizes()
            self.trials = 3
            self.page_snapshots = 20
            self.pg_snapshots = 100
            self.page_requests = 50
            self.stream_sizes = [10_000_000, 100_000_000]
            self.load = {
                "clients": 8,
                "seconds": 60,
                # issue 19's size, ten times larger, and a Matrix report's (issue 36)
                "rows": [10_000, 100_000, 1_000],
                "web_workers": 3,
                "task_workers": 2,
                "templates": 16,
            }
            self.growth_rows = [10_000, 30_000, 100_000, 300_000, 1_000_000]
            self.others_scale = "full"
            self.cold_runs, self.cold_pages = 5, None  # every page
            self.symbols_zip_mb = 1024


def load_average() -> float:
    return os.getloadavg()[0]


# ---------------------------------------------------------------------------------------------
# Documents


def document_file(var_dir: Path, sizes: Sizes, shape: str = "allocations") -> Path:
    """The generated document for these sizes, made once and kept (deterministic)."""
    count = sizes.rows if shape == "allocations" else sizes.events
    name = (
        f"{shape}-{count}-n{sizes.nodes}-c{sizes.categories}-s{sizes.seed}-v{sizes.variant}"
        f"-{sizes.device_id}.json.gz"
    )
    path = var_dir / "data" / name
    if not path.exists():
        log(f"generating {path.name}")
        write_document(snapshot_document(sizes, shape), path)
    return path


def variant(sizes: Sizes, n: int, **changes: Any) -> Sizes:
    from dataclasses import replace

    return replace(sizes, variant=n, device_id=f"BENCH-DEVICE-{n}", **changes)


# ---------------------------------------------------------------------------------------------
# Parts


def databases(args, var_dir: Path) -> tuple[list[Database], dict[str, str]]:
    """The databases to measure and a migrated template of each (cloned for every use)."""
    dbs: list[Database] = []
    templates: dict[str, str] = {}
    if "sqlite" in args.databases:
        templates["sqlite"] = fresh_memdash_database(
            "sqlite", "md_template", var_dir, args.pg_server
        )
        dbs.append(Database("sqlite", templates["sqlite"], str(var_dir / "floor.sqlite3")))
    if args.pg:
        templates["postgresql"] = fresh_memdash_database(
            "postgresql", f"md_bench_template{args.db_suffix}", var_dir, args.pg_server
        )
        floor_url = recreate_pg_database(args.pg_server, f"md_bench_floor{args.db_suffix}")
        dbs.append(Database("postgresql", templates["postgresql"], pg_dsn(floor_url)))
    return dbs, templates


def part_ingest(mode: Mode, args, var_dir: Path, dbs, templates) -> dict[str, Any]:
    from ingest import measure_ingest, measure_memdash_only, stored_bytes

    cold = document_file(var_dir, mode.sizes)
    warm = document_file(var_dir, variant(mode.sizes, 1))
    events = document_file(var_dir, mode.sizes, "events")
    out: dict[str, Any] = {"ingest": {}, "events": {}, "storage": {}}
    db_name = f"md_bench_ingest{args.db_suffix}"
    for db in dbs:
        result = measure_ingest(
            db,
            templates[db.vendor],
            var_dir,
            args.pg_server,
            cold,
            warm,
            mode.trials,
            mode.sizes.rows,
            db_name,
        )
        data = {"cold": result.summary("cold"), "warm": result.summary("warm")}
        for kind in ("cold", "warm"):
            data[f"{kind}_trials"] = [
                {"memdash": t.memdash["total"], "floor": t.floor["total"]}
                for t in getattr(result, kind)
            ]
        out["ingest"][db.label] = data
        # The memdash database now holds the last trial's cold and warm snapshots.
        last_url = (
            pg_url(args.pg_server, db_name)
            if db.vendor == "postgresql"
            else f"sqlite:///{var_dir / db_name}.sqlite3"
        )
        out["storage"][db.label] = stored_bytes(db, last_url)
        runs = measure_memdash_only(
            db, templates[db.vendor], var_dir, args.pg_server, events, mode.trials, db_name
        )
        events_total = median([r["total"] for r in runs])
        aggregated = data["cold"]["memdash_total"]
        out["events"][db.label] = {
            "events": mode.sizes.events,
            "rows": runs[-1]["counts"].get("rows", 0),
            "events_total": events_total,
            "aggregated_total": aggregated,
            "ratio": events_total / aggregated if aggregated else float("nan"),
            "phases": {
                p: median([r["phases"].get(p, 0.0) for r in runs])
                for p in ("read", "parse", "validate", "store")
            },
            "peak": median([r["peak_rss"] for r in runs]),
            "counts": runs[-1]["counts"],
        }
    return out


def part_pages(mode: Mode, args, var_dir: Path, dbs, templates) -> dict[str, Any]:
    from page_data import from_other_devices, last_snapshot_id, populate, snapshot_count
    from pages import measure_pages

    files = [
        document_file(var_dir, variant(mode.sizes, n)) for n in range(2, 2 + mode.page_snapshots)
    ]
    out: dict[str, Any] = {}
    previous = results_so_far(args).get("pages", {})
    for db in dbs:
        chosen = files
        if db.vendor == "postgresql":  # issue 19: 100 snapshots, from other devices
            chosen = files + from_other_devices(files, mode.pg_snapshots)
        name = f"md_bench_pages{args.db_suffix}"
        url = (
            pg_url(args.pg_server, name)
            if db.vendor == "postgresql"
            else f"sqlite:///{var_dir / name}.sqlite3"
        )
        if args.reuse_data and snapshot_count(url) == len(chosen) and db.label in previous:
            log(f"{db.label}: reusing the {len(chosen)} snapshots already loaded")
            load_s = previous[db.label]["load_seconds"]
        else:
            url = clone_database(templates[db.vendor], name, var_dir, args.pg_server)
            load_s = populate(url, var_dir, chosen)
        if db.vendor == "postgresql":
            import psycopg

            with psycopg.connect(pg_dsn(url), autocommit=True) as conn:
                conn.execute("VACUUM ANALYZE")  # what autovacuum does soon after a big load
        # The last snapshot loaded: the one whose rows sit on top of all the others.
        result = measure_pages(url, var_dir, last_snapshot_id(url), mode.page_requests)
        out[db.label] = {
            "snapshots": len(chosen),
            "rows_each": mode.sizes.rows,
            "load_seconds": load_s,
            "result": result,
        }
    return {"pages": out}


def results_so_far(args) -> dict[str, Any]:
    return json.loads(args.results_file.read_text()) if args.results_file.exists() else {}


def part_stream(mode: Mode, args, var_dir: Path, dbs, templates) -> dict[str, Any]:
    from upload_stream import measure_upload_streaming

    vendor = "postgresql" if args.pg else "sqlite"
    url = clone_database(
        templates[vendor], f"md_bench_stream{args.db_suffix}", var_dir, args.pg_server
    )
    return {"upload_streaming": measure_upload_streaming(url, var_dir, mode.stream_sizes)}


def part_others(mode: Mode, args, var_dir: Path, dbs, templates) -> dict[str, Any]:
    from others import measure_other

    vendor = "postgresql" if args.pg else "sqlite"
    out = dict(results_so_far(args).get("others", {}))
    for kind in args.others.split(","):
        url = clone_database(
            templates[vendor], f"md_bench_{kind}{args.db_suffix}", var_dir, args.pg_server
        )
        out[kind] = measure_other(kind, url, var_dir, mode.others_scale, args.budget)
    return {"others": out}


def part_load(mode: Mode, args, var_dir: Path, dbs, templates) -> dict[str, Any]:
    from load import measure_load

    if not args.pg:
        return {"load": {"skipped": "PostgreSQL is not reachable; the load test needs it"}}
    name = f"md_bench_load{args.db_suffix}"
    sizes = [int(n) for n in args.load_rows.split(",")] if args.load_rows else mode.load["rows"]
    # The sizes not run keep their last figures.
    runs = {
        run["rows_per_upload"]: run
        for run in load_runs(results_so_far(args))
        if "skipped" not in run and run["rows_per_upload"] in mode.load["rows"]
    }
    for rows in sizes:
        url = clone_database(templates["postgresql"], name, var_dir, args.pg_server)
        runs[rows] = measure_load(url, var_dir, **{**mode.load, "rows": rows})
    return {"load": [runs[rows] for rows in mode.load["rows"] if rows in runs]}


def part_growth(mode: Mode, args, var_dir: Path, dbs, templates) -> dict[str, Any]:
    from ingest import memdash_ingest
    from pages import measure_pages

    out: dict[str, Any] = {}
    for db in dbs:
        url = clone_database(
            templates[db.vendor], f"md_bench_growth{args.db_suffix}", var_dir, args.pg_server
        )
        points = []
        for rows in mode.growth_rows:
            sizes = Sizes(
                rows=rows,
                nodes=max(500, rows // 5),
                categories=min(5000, mode.sizes.categories),
                variant=100 + rows % 997,
                device_id=f"GROWTH-{rows}",
            )
            file = document_file(var_dir, sizes)
            log(f"{db.label} growth: {rows:,} rows")
            run = memdash_ingest(url, var_dir, file)
            pages = measure_pages(url, var_dir, run["snapshot_id"], mode.page_requests)
            points.append(
                {
                    "rows": rows,
                    "categories": run["counts"].get("categories", 0),
                    "ingest_total": run["total"],
                    "phases": run["phases"],
                    "pages": {k: v for k, v in pages["memdash"].items() if "p95" in v},
                }
            )
        out[db.label] = points
    return {"growth": out}


def part_pprof(mode: Mode, args, var_dir: Path, dbs, templates) -> dict[str, Any]:
    """The benchmark's allocations as a pprof heap profile: `go tool pprof -top` where Go is
    installed, memdash's own import of the same file in any case (its totals must match)."""
    from pprof_compare import SIZES, compare, ensure_go, suite

    if mode.name == "full":  # Go for the first comparison too, not only the suite's
        ensure_go()
    vendor = "postgresql" if args.pg else "sqlite"
    url = clone_database(
        templates[vendor], f"md_bench_pprof{args.db_suffix}", var_dir, args.pg_server
    )
    out = {"pprof": compare(snapshot_document(mode.sizes), url, var_dir)}
    if mode.name == "full":  # issue 19: every size and the real profiles, on the database
        prefix = f"md_bench_pprofs{args.db_suffix}"
        out["pprof_suite"] = {
            **suite(list(SIZES), [vendor], var_dir, args.pg_server, prefix),
            "vendors": [vendor],
        }
    return out


PART_FUNCTIONS = {
    "ingest": part_ingest,
    "stream": part_stream,
    "pages": part_pages,
    "cold": part_cold,
    "others": part_others,
    "load": part_load,
    "growth": part_growth,
    "pprof": part_pprof,
    "symbols": part_symbols,
}


# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="seconds, every part at a tiny scale")
    parser.add_argument("--only", help=f"comma-separated parts: {', '.join(PARTS)}")
    parser.add_argument("--skip", help="comma-separated parts not to run")
    parser.add_argument("--output", type=Path, help="the Markdown file to write")
    parser.add_argument("--var", type=Path, help="working directory (documents, SQLite files)")
    parser.add_argument(
        "--pg-server",
        default=os.environ.get("BENCH_PG_SERVER", DEFAULT_PG_SERVER),
        help="PostgreSQL server URL (databases md_bench_* are created on it)",
    )
    parser.add_argument("--no-pg", action="store_true", help="SQLite only")
    parser.add_argument(
        "--databases",
        default="sqlite,postgresql",
        help="which databases to measure (comma-separated: sqlite, postgresql)",
    )
    parser.add_argument("--report-only", action="store_true", help="rewrite the document only")
    parser.add_argument(
        "--others",
        default="compare,foom,cycles",
        help="others: which domains (comma-separated; the others keep their last results)",
    )
    parser.add_argument(
        "--budget", type=float, help="others: seconds allowed for loading each domain's data"
    )
    parser.add_argument(
        "--reuse-data",
        action="store_true",
        help="pages: time the database loaded by an earlier run if it is still there",
    )
    parser.add_argument(
        "--no-write", action="store_true", help="measure and keep the results, write no document"
    )
    parser.add_argument(
        "--load-rows", help="load: the upload sizes to run (comma-separated rows; default all)"
    )
    args = parser.parse_args(argv)

    mode = Mode(args.small)
    var_dir = (args.var or ROOT / "var" / ("bench-small" if args.small else "bench")).resolve()
    var_dir.mkdir(parents=True, exist_ok=True)
    output = args.output or (
        var_dir / "performance-small.md" if args.small else ROOT / "docs" / "performance.md"
    )
    results_file = args.results_file = var_dir / f"results-{mode.name}.json"
    # The full run's figures are kept beside the document (committed), so a later run of some
    # parts on a fresh checkout keeps the others' last results.
    kept = output.with_suffix(".json") if not args.small else None
    if not results_file.exists() and kept is not None and kept.exists():
        results_file.write_text(kept.read_text())
    results: dict[str, Any] = json.loads(results_file.read_text()) if results_file.exists() else {}
    args.db_suffix = "_small" if args.small else ""

    if not args.report_only:
        parts = [p for p in (args.only.split(",") if args.only else PARTS) if p]
        parts = [p for p in parts if p not in (args.skip or "").split(",")]
        unknown = set(parts) - set(PARTS)
        if unknown:
            parser.error(f"unknown parts: {', '.join(sorted(unknown))}")
        wanted = {d.strip() for d in args.databases.split(",") if d.strip()}
        if args.no_pg:
            wanted.discard("postgresql")
        args.pg = "postgresql" in wanted and pg_available(args.pg_server)
        if "postgresql" in wanted and not args.pg:
            log(f"PostgreSQL not reachable at {args.pg_server}: SQLite only")
            wanted = {"sqlite"}
        args.databases = wanted
        started = datetime.now(UTC)
        clock = time.perf_counter()
        collect_static(var_dir)
        dbs, templates = databases(args, var_dir)
        loads = results.get("load_averages", {})
        here = machine_description()
        # The CPU each part ran on: a shared machine's hardware changes between runs, and a
        # run of some parts keeps the others' figures (those before this record: the last
        # machine's).
        earlier = results.get("machine", {}).get("cpu")
        cpus = results.get("part_cpus") or {part: earlier for part in loads if earlier}
        notes = [n for n in results.get("notes", []) if not n.startswith("PostgreSQL")]
        if not args.pg:
            notes.append("PostgreSQL was not measured in this run: SQLite figures only.")
        for part in parts:
            loads[part], cpus[part] = load_average(), here["cpu"]
            log(f"== {part} (load average {loads[part]:.1f})")
            results.update(PART_FUNCTIONS[part](mode, args, var_dir, dbs, templates))
            results_file.write_text(json.dumps(results, indent=1, default=str))
        results.update(
            {
                "mode": mode.name,
                "started": results.get("started")
                if args.only
                else started.strftime("%Y-%m-%d %H:%M UTC"),
                "finished": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "duration_s": (results.get("duration_s", 0) if args.only else 0)
                + time.perf_counter()
                - clock,
                # Described again after the parts: the pprof part installs Go when it is missing.
                "machine": machine_description(),
                "part_cpus": cpus,
                "sizes": {
                    "rows": mode.sizes.rows,
                    "nodes": mode.sizes.nodes,
                    "categories": mode.sizes.categories,
                    "events": mode.sizes.events,
                },
                "load_averages": loads,
                "notes": notes,
            }
        )
        if not results.get("started"):
            results["started"] = started.strftime("%Y-%m-%d %H:%M UTC")
        results_file.write_text(json.dumps(results, indent=1, default=str))

    from report import render

    document = render(results)  # rendered even with --no-write, so a broken report fails CI
    if args.no_write:
        log(f"results in {results_file} (no document written)")
        return 0
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(merge_document(output.read_text() if output.exists() else "", document))
    if kept is not None:
        kept.write_text(json.dumps(results, indent=1, default=str) + "\n")
    log(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
