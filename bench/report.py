"""docs/performance.md from the benchmark's results (a JSON file kept beside them), so the
document can be rebuilt without measuring again: `python bench/run.py --report-only`."""

from __future__ import annotations

from typing import Any

from cold_pages import section as cold_pages_section
from cold_pages import target_rows as cold_page_targets
from common import ms, secs, table
from report_ingest import ingest_section, ingest_summary_rows, storage_section, stream_section
from report_pprof import pprof_section, pprof_suite_section, pprof_target_rows
from report_symbols import symbols_section

TARGETS = {
    "page_ms": 30,
    "compare_ms": 300,
    "foom_ms": 100,
    "cycles_ms": 100,
}
# Issue 36's load targets: rows a second for snapshots of 10,000 rows and more, uploads a second
# for small ones (a Matrix report's size).
LOAD_ROWS_PER_S = 300_000
LOAD_SMALL_UPLOADS_PER_S = 150
LOAD_SMALL_ROWS = 1_000


def load_target(load: dict[str, Any]) -> tuple[str, bool]:
    """The target of a load run by its upload size, and whether the run met it."""
    if load["rows_per_upload"] <= LOAD_SMALL_ROWS:
        wanted = f"≥ {LOAD_SMALL_UPLOADS_PER_S} uploads/s stored"
        met = load["processed_per_s"] >= LOAD_SMALL_UPLOADS_PER_S
    else:
        wanted, met = (
            f"≥ {LOAD_ROWS_PER_S:,} rows/s processed",
            load["rows_per_s"] >= LOAD_ROWS_PER_S,
        )
    return f"{wanted}; no error, none lost or doubled", met and load["ok"]


def load_runs(r: dict[str, Any]) -> list[dict[str, Any]]:
    """The load part's runs (one per upload size; results before issue 19 hold one)."""
    load = r.get("load")
    if not load:
        return []
    return load if isinstance(load, list) else [load]


def verdict(ok: bool | None) -> str:
    if ok is None:
        return "—"
    return "met" if ok else "**missed**"


def times(a: float, b: float) -> str:
    if not b:
        return "—"
    value = a / b
    return f"{value:.1f}×" if value < 100 else f"{value:,.0f}×"


def _p95(timing: dict | None) -> float | None:
    if not timing or "p95" not in timing:
        return None
    return timing["p95"]


# ---------------------------------------------------------------------------------------------
# Sections


def summary_rows(r: dict[str, Any]) -> list[list[str]]:
    rows: list[list[str]] = ingest_summary_rows(r)
    for label, p in r.get("pages", {}).items():
        result = p.get("result") or {}
        for name, title in (
            ("statistics", "statistics"),
            ("statistics_all", "statistics (every category)"),
            ("calltree_children", "call-tree children"),
            ("generations", "generations"),
        ):
            mine = _p95(result.get("memdash", {}).get(name))
            ref = _p95(result.get("reference", {}).get(name))
            if mine is None:
                continue
            rows.append(
                [
                    f"{title} API, p95 of {result.get('requests', 50)}, {label}, "
                    f"{p['snapshots']} snapshots of {p['rows_each']:,} rows",
                    f"≤ {TARGETS['page_ms']} ms",
                    ms(mine),
                    f"{times(mine, ref)} bare SQL ({ms(ref)})" if ref else "—",
                    verdict(mine * 1000 <= TARGETS["page_ms"]),
                ]
            )
    others = r.get("others", {})
    for kind, key, title, target in (
        ("compare", "api_compare", "build compare", "compare_ms"),
        ("foom", "api_foom_trend", "FOOM trend", "foom_ms"),
        ("cycles", "api_clusters", "cycle clusters list", "cycles_ms"),
    ):
        o = others.get(kind)
        if not o:
            continue
        if "skipped" in o:
            rows.append(
                [title, f"≤ {TARGETS[target]} ms", "skipped: " + o["skipped"][:120], "—", "—"]
            )
            continue
        p95 = _p95(o.get("timings", {}).get(key))
        scale = {
            "compare": f"{o.get('snapshots', 0)} snapshots, a page of 500 categories",
            "foom": f"{o.get('builds', 0)} builds, {o.get('sessions', 0):,} sessions",
            "cycles": f"{o.get('clusters', 0):,} clusters",
        }[kind]
        rows.append(
            [
                f"{title} API ({scale}), p95",
                f"≤ {TARGETS[target]} ms",
                ms(p95) if p95 is not None else "error",
                "—",
                verdict(p95 is not None and p95 * 1000 <= TARGETS[target]),
            ]
        )
        first = o.get("timings", {}).get(key, {}).get("first")
        if kind == "compare" and first is not None:  # issue 19: the first request too
            rows.append(
                [
                    f"{title} API ({scale}), first request",
                    f"≤ {TARGETS[target]} ms",
                    ms(first),
                    "—",
                    verdict(first * 1000 <= TARGETS[target]),
                ]
            )
    for load in load_runs(r):
        if "skipped" in load:
            continue
        wanted, met = load_target(load)
        rows.append(
            [
                f"{load['clients']} clients uploading {load['rows_per_upload']:,}-row snapshots "
                f"for {load['seconds']:.0f} s (gunicorn + {load['task_workers']} db_workers, "
                "PostgreSQL)",
                wanted,
                f"{load['rows_per_s']:,.0f} rows/s ({load['processed_per_s']:.1f} uploads/s); "
                f"{load['uploads_accepted']} uploads, {load['error_count']} errors, "
                f"{load['doubled']} doubled, {load['uploads_without_snapshot']} lost",
                "—",
                verdict(met),
            ]
        )
    rows += pprof_target_rows(r)
    rows += cold_page_targets(r.get("cold_pages", {}))
    return rows


# Not measured by the benchmark but by tests/ingest/test_upload_path.py: its figures are
# written here by hand when that path changes.
PATH_OF_AN_UPLOAD = """\
## Path of an upload

Not a timing: the route one snapshot upload takes through the code and the SQL it costs, kept
short. Measured by `tests/ingest/upload_path.py` (`sys.setprofile` for the calls between
memdash files, `CaptureQueriesContext` for the statements) on the spec's example snapshot sent
to the API with the embedded immediate task backend, from the view to the COPY of its rows.
`tests/ingest/test_upload_path.py` holds the line to this and prints the chain and every
statement (`DATABASE_URL=postgres://…` for PostgreSQL):

```
.venv/bin/pytest -q -s -p no:randomly tests/ingest/test_upload_path.py
```

The line: `ingest/web/views.api_upload_create` (the ingest key, from the header) →
`ingest/writes/uploads.receive_upload` (fields checked, the body streamed to storage while hashed,
its content's identity read back from it, one INSERT of the upload, which also finds a repeat
and, stored by the door that runs it, claims it) → `ingest/tasks.process_upload` on that same
row (read within the cap, detect; the handler and the upload's outcome, written while the claim
holds, in one transaction) → `ingest/writes/parsers/snapshot.process` →
`allocations/writes/snapshots.store_snapshot_document` → `core/writes/bulk.copy_rows`.

| | first snapshot of a build | next snapshot of that build |
|---|---|---|
| calls between files (each caller → callee once; SQLite, PostgreSQL) | 71, 78 | 69, 71 |
| files | 33 | 33 |
| most entries of one file of the line, the engines aside | 2 | 2 |
| entries of the engines (bulk, where_in, rows, columns; SQLite) | 3, 2, 3, 4 | 2, 2, 3, 4 |
| the same on PostgreSQL | 3, 4, 4, 4 | 2, 3, 2, 4 |
| SQL statements besides the bulk loads (SQLite; PostgreSQL) | 25; 36 | 20; 23 |
| of which BEGIN, COMMIT, savepoints (SQLite; PostgreSQL) | 2; 4 | 2; 2 |
| the upload row: reads, writes | 0, 2 | 0, 2 |

The next snapshot's statements (SQLite): the key; the upload's INSERT; BEGIN; the build and
the device (one SELECT each); the snapshot's INSERT; its categories (one SELECT, by one array
of hashes on PostgreSQL); its images (one INSERT, from symbolication: a new snapshot has no
earlier ones to delete, and its unnamed bytes go in with its totals); generations; build
totals (one INSERT … ON CONFLICT of the rows sent as arrays); the snapshot's totals; the
upload's outcome; COMMIT; then the build's summary for build compare (a task: the embedded
default runs it at once, six statements) and the upload's pass for uploads of dead workers
(`tasks.requeue_stale`: an index scan of the `processing` ones past their lease; a process
looks at most every 5 s, here on each upload as after a pause). Frames, stack nodes, rows, the
call tree and the category and generation totals are the bulk loads. A new build, device or
set of categories adds an INSERT and a SELECT each. On PostgreSQL each staged load
(categories when some are new, frames, stack nodes) is a temporary table made or emptied, a
COPY into it and one INSERT … SELECT, but frames and stack nodes are first looked up (all
their ids in one array; past 8,192 a sample of them first), and when the app has them all, as
on its next snapshot, nothing is staged or written for them; the two large tables' partitions
are named by one SELECT each; the upload's transaction is told not to wait for the disk at
its commit (`SET LOCAL synchronous_commit`: a lost one is processed again); and after the
commit the page ranges the rows filled are summarised in a transaction of their own, by a
process at most once a second (the next summary takes the ranges of the uploads between: the
first snapshot here, not the next).

Entered more than twice are only the engines every step of the store uses: the bulk writes
(`core/writes/bulk.py`: categories read by one array and written, frames and stack nodes, rows)
and the reads by many ids they look rows up through (`core/reads/where_in.py`, a file of its own
since issue 31: a call or two more between files), the columns they take (`core/logic/rows.py`:
nodes, rows and totals as numpy columns, laid out as binary COPY data on PostgreSQL) and the
column toolkit (`allocations/logic/columns.py`: the rows checked, image usage over the stack
tree, the nodes). The figures grew with the columnar store (issue
19: its helpers are counted up to the first COPY) from 33 calls over 20 files and 22 statements
for a first snapshot. Before the line was first straightened (the view → services → tasks →
processing hop, the upload row re-read, savepoints around each get-or-create): 33 statements
for a first snapshot (14 of them BEGIN, COMMIT or savepoints), 25 for the next, the upload row
read 3 times and written 3 times.
"""


def path_section() -> list[str]:
    return [*PATH_OF_AN_UPLOAD.splitlines(), ""]


def pages_section(r: dict[str, Any]) -> list[str]:
    pages = r.get("pages", {})
    if not pages:
        return []
    out = ["## Pages", ""]
    out.append(
        "Server time of the JSON API (Django's test Client in one process: middleware, "
        "authentication, view, JSON rendering; no network), p50 and p95 of the requests after "
        "3 warm-up ones. "
        "The reference is bare SQL with the driver alone reading the same pre-aggregated rows "
        "and encoding them with orjson. The statistics API answers a page of 500 categories "
        "by default (largest first, with the summary rows and the count, `next` for the rest); "
        "every category in one answer is timed too, as `?limit=10000`. The snapshot page is the "
        "HTML statistics table (200 rows a page)."
    )
    out.append("")
    names = [
        ("statistics", "statistics (`/api/v1/snapshots/<id>/statistics`: 500 rows, the default)"),
        ("statistics_all", "statistics, every category (`?limit=10000`)"),
        ("calltree_roots", "call-tree roots (`/calltree`)"),
        ("calltree_children", "call-tree children (`/calltree?node=…`, 6 levels down)"),
        ("generations", "generations (`/generations`)"),
        ("snapshot_page", "snapshot page (HTML)"),
    ]
    for label, p in pages.items():
        result = p.get("result") or {}
        out.append(
            f"{label}: database holding {p['snapshots']} snapshots of {p['rows_each']:,} rows "
            f"(loaded in {p.get('load_seconds', 0):.0f} s); timed on snapshot "
            f"{result.get('snapshot_id')} ({result.get('categories', 0):,} categories), "
            f"{result.get('requests', 50)} requests each."
        )
        out.append("")
        rows = []
        for key, title in names:
            mine = result.get("memdash", {}).get(key)
            ref = result.get("reference", {}).get(key)
            if not mine:
                continue
            if "error" in mine:
                rows.append([title, "error: " + mine["error"][:100], "", "", "", ""])
                continue
            rows.append(
                [
                    title,
                    ms(mine["p50"]),
                    ms(mine["p95"]),
                    f"{ms(ref['p50'])} / {ms(ref['p95'])}" if ref else "—",
                    times(mine["p95"], ref["p95"]) if ref else "—",
                    verdict(mine["p95"] * 1000 <= TARGETS["page_ms"])
                    if key != "snapshot_page"
                    else "—",
                ]
            )
        out += table(["endpoint", "p50", "p95", "bare SQL p50 / p95", "p95 ratio", "≤ 30 ms"], rows)
    return out


def others_section(r: dict[str, Any]) -> list[str]:
    others = r.get("others", {})
    if not others:
        return []
    out = ["## Build compare, FOOM trend, retain-cycle clusters", ""]
    out.append(
        "Data loaded through memdash's own services (snapshot store; the upload service for the "
        "sessions and retain-cycles formats), then the API and page timed (50 requests, or 10 "
        "when one takes over 2 s). *First* is the first request, before any warm-up: for build "
        "compare it is the one that makes and stores each build's summary, which later "
        "comparisons read (and which is made again once a build gets a new snapshot). The "
        "compare API answers the 500 biggest growers by default (the gate's verdict always "
        "covers every category); `api_compare_all` asks for every category in one answer "
        "(`?limit=10000`)."
    )
    out.append("")
    rows = []
    for kind, o in others.items():
        if "skipped" in o:
            rows.append([kind, "skipped", o["skipped"][:200], "", "", ""])
            continue
        scale = {
            "compare": f"{o.get('snapshots', 0)} snapshots × "
            f"{o.get('rows_per_snapshot', 0):,} rows, 2 builds",
            "foom": f"{o.get('builds', 0)} builds, {o.get('sessions', 0):,} sessions "
            f"(loaded at {o.get('sessions_per_s', 0):.0f} sessions/s)",
            "cycles": f"{o.get('clusters', 0):,} clusters",
        }[kind]
        if o.get("scaled_down"):
            scale += " — scaled down: loading hit its time budget"
        for name, t in o.get("timings", {}).items():
            if "error" in t:
                rows.append([kind, scale, name, "error: " + t["error"][:120], "", "", ""])
            else:
                first = ms(t["first"]) if "first" in t else "—"
                rows.append([kind, scale, name, first, ms(t["p50"]), ms(t["p95"]), str(t["n"])])
        for failure in o.get("failures", []):
            rows.append([kind, scale, "load failure", failure[:200], "", "", ""])
    return out + table(["domain", "data", "endpoint", "first", "p50", "p95", "requests"], rows)


def load_section(r: dict[str, Any]) -> list[str]:
    runs = load_runs(r)
    if not runs:
        return []
    out = ["## Concurrent uploads through gunicorn and task workers", ""]
    for load in runs:
        out += load_run(load)
    return out


def load_run(load: dict[str, Any]) -> list[str]:
    out: list[str] = []
    if "skipped" in load:
        return out + [f"Skipped: {load['skipped']}", ""]
    out += [f"### {load['rows_per_upload']:,}-row snapshots", ""]
    out.append(
        f"{load['clients']} client threads, each sending its own {load['rows_per_upload']:,}-row "
        f"snapshots (gzip JSON, made before the clock starts) for {load['seconds']:.0f} s, and "
        f"every tenth request a body it had sent before; gunicorn with {load['web_workers']} "
        f"workers, {load['task_workers']} `manage.py db_worker` processes, "
        "`MEMDASH_TASKS=database`, PostgreSQL. Checked afterwards in the database."
    )
    out.append("")
    rows = [
        ["requests sent", str(load["requests"])],
        ["uploads accepted (distinct bodies)", str(load["uploads_accepted"])],
        ["repeats sent (same bytes again)", str(load["repeats_sent"])],
        ["repeats answered with another upload", str(len(load["repeat_mismatches"]))],
        ["request errors", str(load["error_count"])],
        ["uploads by status", ", ".join(f"{k}: {v}" for k, v in load["statuses"].items())],
        ["snapshots stored", str(load["snapshots"])],
        ["uploads with two snapshots (doubled)", str(load["doubled"])],
        ["uploads without a snapshot (lost)", str(load["uploads_without_snapshot"])],
        ["snapshots without an upload", str(load["orphan_snapshots"])],
        ["accepted", f"{load['accepted_per_s']:.1f} uploads/s"],
        [
            "processed (first received → last stored)",
            f"{load['processed_per_s']:.1f} uploads/s, {load['rows_per_s']:,.0f} rows/s",
        ],
        ["queue drained after the clients stopped", secs(load["drain_seconds"])],
        ["verdict", "no error, nothing lost or doubled" if load["ok"] else "**FAILED**"],
    ]
    if load["errors"]:
        rows.append(["first errors", "; ".join(load["errors"][:3])[:300]])
    return out + table(["", ""], rows) + [""]


def growth_section(r: dict[str, Any]) -> list[str]:
    growth = r.get("growth", {})
    if not growth:
        return []
    sizes = [p["rows"] for points in growth.values() for p in points]
    out = [f"## Growth from {min(sizes):,} to {max(sizes):,} rows", ""]
    out.append(
        "Each size is a fresh snapshot (stack nodes = rows / 5, up to 5,000 categories) ingested "
        "into a database that keeps the earlier ones; ingest should grow linearly with the rows "
        "(constant µs per row, once the fixed cost of a small upload is paid), pages should "
        "stay flat. The statistics API answers the first 500 categories of the snapshot, read "
        "in order from an index, so its time does not follow the number of rows either."
    )
    out.append("")
    for label, points in growth.items():
        rows = []
        for p in points:
            pages = p.get("pages", {})
            rows.append(
                [
                    f"{p['rows']:,}",
                    f"{p['categories']:,}",
                    secs(p["ingest_total"]),
                    f"{p['ingest_total'] / p['rows'] * 1e6:.1f} µs",
                    ms(pages["statistics"]["p95"]) if "statistics" in pages else "—",
                    ms(pages["calltree_roots"]["p95"]) if "calltree_roots" in pages else "—",
                    ms(pages["calltree_children"]["p95"]) if "calltree_children" in pages else "—",
                    ms(pages["generations"]["p95"]) if "generations" in pages else "—",
                ]
            )
        out.append(f"{label}:")
        out.append("")
        out += table(
            [
                "rows",
                "categories",
                "ingest",
                "per row",
                "statistics p95",
                "call-tree roots p95",
                "children p95",
                "generations p95",
            ],
            rows,
        )
    return out


def render(r: dict[str, Any]) -> str:
    m = r["machine"]
    lines = [
        "# Performance",
        "",
        "Measured by `bench/` (`python bench/run.py`; `python bench/run.py --small` is the "
        "seconds-long version CI runs). This file is written by that script: do not edit it by "
        "hand, run the benchmark again. Targets come from issues 8 and 19; none is asserted in "
        "a test, since timings on shared machines are noisy: each figure is measured next to "
        "its reference in the same run and reported as a ratio, with the absolute figures.",
        "",
        f"Run: {r['started']} → {r['finished']} ({r['duration_s'] / 60:.0f} min), mode "
        f"`{r['mode']}`. Snapshot: {r['sizes']['rows']:,} allocation rows, "
        f"{r['sizes']['nodes']:,} stack nodes, {r['sizes']['categories']:,} categories; events "
        f"document: {r['sizes']['events']:,} events (`bench/generate.py`, seed 8).",
        "",
        "## Machine",
        "",
    ]
    lines += table(["", ""], [[k, v] for k, v in m.items()])
    cpus = r.get("part_cpus", {})
    if len(set(cpus.values())) > 1:
        lines.append(
            "The parts ran on different machines (this shared machine's hardware is not the "
            "same from one run to the next): "
            + ", ".join(f"{part} on {cpu}" for part, cpu in cpus.items())
            + ". Compare a figure with its reference in the same part (measured together), "
            "not with another part's."
        )
        lines.append("")
    loads = r.get("load_averages", {})
    if loads:
        lines.append(
            "Load average (1 min) when each part started — other work on this shared machine "
            "shows here, and in the spread between trials: "
            + ", ".join(f"{k} {v:.1f}" for k, v in loads.items())
            + "."
        )
        lines.append("")
    lines += ["## Targets", ""]
    lines += table(["what", "target", "measured", "ratio", "verdict"], summary_rows(r))
    for note in r.get("notes", []):
        lines.append(f"- {note}")
    if r.get("notes"):
        lines.append("")
    lines += ingest_section(r)
    lines += storage_section(r)
    lines += stream_section(r)
    lines += path_section()
    lines += symbols_section(r)
    lines += pages_section(r)
    lines += cold_pages_section(r.get("cold_pages", {}))
    lines += others_section(r)
    lines += load_section(r)
    lines += growth_section(r)
    lines += pprof_section(r)
    lines += pprof_suite_section(r)
    lines += [
        "## How to run",
        "",
        "```",
        "python bench/run.py                # everything, writes this file (1-2 hours here)",
        "python bench/run.py --only ingest,pages  # some parts; the others keep their figures",
        "python bench/run.py --small        # seconds; CI runs it (tests/bench)",
        "python bench/run.py --report-only  # rewrite this file from var/bench/results-full.json",
        "```",
        "",
        "PostgreSQL databases `md_bench_*` are created on `BENCH_PG_SERVER` "
        "(default `postgres://postgres@127.0.0.1:5432`) and dropped or reused by later runs; "
        "SQLite files and generated documents go to `var/bench/`.",
        "",
    ]
    return "\n".join(lines)
