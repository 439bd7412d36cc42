"""Ingest end to end, as the user waits for it (issue 36), each beside its reference in the
same run, on PostgreSQL:

- `pprof`: a node-heavy Go heap profile (bench/generate.py's NODE_HEAVY stack tree: 100,000
  samples, deep chains that part early, about a million stack nodes) through `manage.py
  import_snapshot`, from the command's start to its exit (interpreter, Django, the import and
  what runs after the commit), against `go tool pprof -top -sample_index=inuse_space` on the
  same file, from its start to its exit. Target: ≤ 0.5×. Beside both, bench/floor_pprof.py on
  the same file and database (decode, stack tree, inclusive totals, binary COPY; no index): how
  far under pprof anything that keeps the tree can go here.
- `snapshot`: the bench's 1M-row snapshot through `manage.py import_snapshot` (a new app, then
  the same app again: its frames and stack nodes are stored already), against bench/floor.py
  `--totals` on the same file and database (gunzip, orjson, numpy columns, category and
  inclusive call-tree totals, binary COPY of the rows and totals; interpreter start included).
  Target: ≤ 1.2×. And the same file through `POST /api/v1/uploads` to gunicorn with a
  `db_worker` running, from the request's start until the upload reads `done`. Target: ≤ 1.3×.

Every process is timed from its start to its exit with its own peak RSS (pprof_compare's
launcher). The command's progress lines (`phase [bar] seconds`) are kept, so the report shows
where the time goes and how much of it the phases account for. Prints one JSON document.

    python bench/end_to_end.py pprof [--repeat 3] [--var DIR]
    python bench/end_to_end.py snapshot [--rows 1000000] [--repeat 3] [--no-http]
    python bench/end_to_end.py report --write    # docs/performance.md from the saved figures
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH, PYTHON, ROOT, compile_memdash, emit, log, memdash_env, pg_dsn  # noqa: E402
from pprof_compare import go_pprof_top, measured, profile_bytes  # noqa: E402

PG_SERVER = os.environ.get("BENCH_PG_SERVER", "postgres://postgres@127.0.0.1:5432")
MANAGE = str(ROOT / "manage.py")
PROGRESS = re.compile(r": ([\w-]+)\s+\[[# ]*\]\s+([\d.]+)s")


def node_heavy_profile(var_dir: Path, samples: int = 100_000) -> Path:
    """The node-heavy profile, made once and kept (deterministic)."""
    from generate import NODE_HEAVY, Sizes, snapshot_document

    path = var_dir / "data" / f"pprof-node-heavy-{samples}.pb.gz"
    if not path.exists():
        log(f"writing {path.name}")
        path.parent.mkdir(parents=True, exist_ok=True)
        # ~14.5 nodes a sample grown, ~1M of them on the sampled paths; 60,000 functions
        sizes = Sizes(
            rows=samples, nodes=samples * 29 // 2, categories=2000, distinct_frames=60_000
        )
        path.write_bytes(profile_bytes(snapshot_document(sizes, tree_shape=NODE_HEAVY)))
    return path


def progress_phases(stderr: str) -> dict[str, float]:
    """Each phase's seconds, from the command's progress lines (its start and end marks: the
    elapsed time at each phase's first mark, a phase ending where the next begins)."""
    marks: list[tuple[str, float]] = []
    for phase, seconds in PROGRESS.findall(stderr):
        if not marks or marks[-1][0] != phase:
            marks.append((phase, float(seconds)))
        else:
            marks[-1] = (phase, marks[-1][1])
    if not marks:  # the command printed none (it failed before its first phase)
        return {}
    last = max(float(s) for _, s in PROGRESS.findall(stderr))
    ends = [at for _, at in marks[1:]] + [last]
    return {phase: end - at for (phase, at), end in zip(marks, ends, strict=True)}


def cli_import(url: str, var_dir: Path, path: Path, app: str, build: str) -> dict[str, Any]:
    env = memdash_env(url, var_dir, MEMDASH_MAX_PARSE_MEMORY_BYTES=str(64 * 1024**3))
    cmd = [PYTHON, MANAGE, "import_snapshot", str(path), "--app", app, "--build-version", build]
    run = measured(cmd, env)
    phases = progress_phases(run["stderr"])
    out = {key: run[key] for key in ("seconds", "peak_rss_bytes", "returncode")}
    if run["returncode"]:
        out["error"] = run["stderr"].strip()[-400:]
    return {**out, "phases": phases, "phases_total": sum(phases.values())}


def fresh_database(var_dir: Path, name: str) -> str:
    """An empty, migrated database: a clone of a template migrated once a run."""
    from common import clone_database, fresh_memdash_database

    global TEMPLATE
    if TEMPLATE is None:
        TEMPLATE = fresh_memdash_database("postgresql", f"{name}_tpl", var_dir, PG_SERVER)
    return clone_database(TEMPLATE, name, var_dir, PG_SERVER)


TEMPLATE: str | None = None


def make_app(url: str, var_dir: Path, bundle_id: str, platform: str) -> dict[str, Any]:
    from common import run_json

    cmd = [PYTHON, str(BENCH / "servers.py"), "setup", "--app", bundle_id]
    return run_json(cmd + ["--platform", platform], memdash_env(url, var_dir))


def load_average() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def pprof_part(var_dir: Path, repeat: int, prefix: str) -> dict[str, Any]:
    from common import drop_database

    profile = node_heavy_profile(var_dir)
    runs = []
    for n in range(repeat):
        url = fresh_database(var_dir, f"{prefix}_pprof")
        make_app(url, var_dir, "com.example.go", "linux")
        load = load_average()
        go = go_pprof_top(profile)
        memdash = cli_import(url, var_dir, profile, "com.example.go", f"run-{n}")
        floor_cmd = [PYTHON, str(BENCH / "floor_pprof.py"), str(profile), "--dsn", pg_dsn(url)]
        floor = measured(floor_cmd)
        runs.append({"load": load, "go": go, "memdash": memdash, "floor": floor_figures(floor)})
        log(f"pprof run {n}: memdash {memdash['seconds']:.2f} s, go {go.get('seconds')} s")
        drop_database(url, PG_SERVER)
    return {"profile": str(profile.name), "bytes": profile.stat().st_size, "runs": runs}


def floor_figures(floor: dict[str, Any]) -> dict[str, Any]:
    """A floor process's wall seconds and peak RSS, with the phases it printed (or its error)."""
    printed = [json.loads(line) for line in floor["stdout"].splitlines() if line[:1] == "{"]
    phases = printed[-1]["phases"] if printed else floor["stderr"][-300:]
    return {key: floor[key] for key in ("seconds", "peak_rss_bytes")} | {"phases": phases}


def http_upload(url: str, var_dir: Path, path: Path) -> dict[str, Any]:
    """POST the file to gunicorn with one db_worker; from the request's start until the upload
    reads `done` (its snapshot committed, the pages' tables with it)."""
    from common import collect_static
    from servers import make_app as make_app_with_key
    from servers import serving

    collect_static(var_dir)  # DEBUG is off: the pages (and the server's first answer) need them
    secret = make_app_with_key(url, var_dir)["secret"]
    body = path.read_bytes()
    with serving(url, var_dir, web_workers=2, task_workers=1) as running:
        headers = {
            "Authorization": f"Bearer {secret}",
            "Content-Type": "application/json",
            "Content-Encoding": "gzip",
        }
        started = time.perf_counter()
        request = urllib.request.Request(
            f"{running.base_url}/api/v1/uploads", data=body, headers=headers
        )
        with urllib.request.urlopen(request, timeout=600) as response:
            answer = json.loads(response.read())
        accepted = time.perf_counter() - started
        status = answer.get("status")
        detail = f"{running.base_url}/api/v1/uploads/{answer['id']}"
        while status not in ("done", "rejected", "failed"):
            time.sleep(0.05)
            check = urllib.request.Request(
                detail, headers={"Authorization": headers["Authorization"]}
            )
            with urllib.request.urlopen(check, timeout=60) as response:
                status = json.loads(response.read()).get("status")
        return {
            "seconds": time.perf_counter() - started,
            "accepted_seconds": accepted,
            "status": status,
        }


def snapshot_part(var_dir: Path, rows: int, repeat: int, prefix: str, http: bool) -> dict[str, Any]:
    from common import drop_database
    from generate import Sizes
    from run import document_file

    document = document_file(var_dir, Sizes(rows=rows))
    runs = []
    for n in range(repeat):
        url = fresh_database(var_dir, f"{prefix}_snap")
        make_app(url, var_dir, "com.example.chat", "ios")  # its frames and nodes: none yet
        load = load_average()
        floor_cmd = [PYTHON, str(BENCH / "floor.py"), str(document), "--dsn", pg_dsn(url)]
        floor = measured([*floor_cmd, "--totals"])
        run: dict[str, Any] = {
            "load": load,
            "floor": floor_figures(floor),
            "cli_new_app": cli_import(url, var_dir, document, "com.example.chat", f"a{n}"),
            "cli_same_app": cli_import(url, var_dir, document, "com.example.chat", f"b{n}"),
        }  # fmt: skip
        drop_database(url, PG_SERVER)
        if http:
            url = fresh_database(var_dir, f"{prefix}_http")
            run["http"] = http_upload(url, var_dir, document)
            drop_database(url, PG_SERVER)
        runs.append(run)
        log(f"snapshot run {n}: {json.dumps(run)[:300]}")
    return {"document": document.name, "bytes": document.stat().st_size, "runs": runs}


TITLE = "## End to end, as the user waits (issue 36)"


def section(pprof: dict[str, Any] | None, snapshot: dict[str, Any] | None) -> str:
    """The Markdown section of docs/performance.md: each run's figures and ratios (the same
    run's reference), the load average when it started, and the command's phases."""
    mib = 1024 * 1024
    lines = [
        TITLE,
        "",
        "`python bench/end_to_end.py pprof|snapshot --write` on PostgreSQL. Every side is a "
        "process timed from its start to its exit (peak RSS its own); memdash's command includes "
        "the interpreter's and Django's start and what runs after the commit; the phases are "
        "the command's own progress lines (`start` is the process's start-up).",
        "",
        "| what | run | load (1, 5, 15 min) | memdash s | reference s | ratio | target | "
        "memdash MiB | reference MiB | phases (s) | phases sum / wall |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def row(what: str, n: int, load: list[float], md: dict, ref: dict, target: str) -> None:
        phases = md.get("phases") or {}
        shown = ", ".join(f"{p} {v:.2f}" for p, v in phases.items() if v >= 0.005) or "-"
        covered = f"{md['phases_total'] / md['seconds']:.2f}" if phases else "-"
        ratio = md["seconds"] / ref["seconds"] if ref.get("seconds") else float("nan")
        md_mib = md.get("peak_rss_bytes", 0) / mib
        ref_mib = ref.get("peak_rss_bytes", 0) / mib
        lines.append(
            f"| {what} | {n + 1} | {', '.join(map(str, load))} | {md['seconds']:.2f} | "
            f"{ref.get('seconds', float('nan')):.2f} | {ratio:.2f}× | {target} | "
            f"{md_mib:.0f} | {ref_mib:.0f} | {shown} | {covered} |"
        )

    for n, run in enumerate((pprof or {}).get("runs", [])):
        what = "node-heavy pprof: `import_snapshot` vs `go tool pprof -top`"
        row(what, n, run["load"], run["memdash"], run["go"], "≤ 0.5×")
        if "floor" in run:
            row("node-heavy pprof: `import_snapshot` vs floor_pprof.py", n, run["load"],
                run["memdash"], run["floor"], "-")  # fmt: skip
            row("node-heavy pprof: floor_pprof.py vs `go tool pprof -top`", n, run["load"],
                {**run["floor"], "phases": None}, run["go"], "-")  # fmt: skip
    for n, run in enumerate((snapshot or {}).get("runs", [])):
        floor = run["floor"]
        if "cli_new_app" in run:  # a run of the HTTP side alone has none
            row("1M rows: `import_snapshot`, new app vs floor.py --totals", n, run["load"],
                run["cli_new_app"], floor, "≤ 1.2×")  # fmt: skip
            row("1M rows: `import_snapshot`, same app again vs floor", n, run["load"],
                run["cli_same_app"], floor, "≤ 1.2×")  # fmt: skip
        if "http" in run:
            row("1M rows: POST /api/v1/uploads + db_worker until done vs floor", n, run["load"],
                run["http"], floor, "≤ 1.3×")  # fmt: skip
    if pprof:
        lines += ["", f"Profile: {pprof['profile']} ({pprof['bytes'] / mib:.1f} MiB)."]
    if snapshot:
        lines += ["", f"Document: {snapshot['document']} ({snapshot['bytes'] / mib:.1f} MiB)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", choices=["pprof", "snapshot", "report"])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--no-http", action="store_true")
    parser.add_argument("--var", type=Path, default=ROOT / "var" / "bench-e2e")
    parser.add_argument("--db-prefix", default="md_bench_e2e")
    parser.add_argument("--write", action="store_true", help="update docs/performance.md")
    args = parser.parse_args(argv)
    var_dir = args.var.resolve()
    var_dir.mkdir(parents=True, exist_ok=True)
    saved = var_dir / "end-to-end.json"
    results = json.loads(saved.read_text()) if saved.exists() else {}
    if args.part != "report":
        compile_memdash()
    if args.part == "pprof":
        results["pprof"] = pprof_part(var_dir, args.repeat, args.db_prefix)
    elif args.part == "snapshot":
        results["snapshot"] = snapshot_part(
            var_dir, args.rows, args.repeat, args.db_prefix, not args.no_http
        )
    saved.write_text(json.dumps(results, indent=1))
    emit(results)
    if args.write:
        from common import replace_section

        text = section(results.get("pprof"), results.get("snapshot"))
        replace_section(
            ROOT / "docs" / "performance.md",
            TITLE,
            text,
            "### pprof profiles of every size, and real ones",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
