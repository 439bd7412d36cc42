"""The same allocations as a pprof heap profile, for a comparison with `go tool pprof -top`.

`profile_bytes(doc)` writes a memdash.snapshot document's allocation rows as a gzip-compressed
profile.proto (sample types alloc_objects/alloc_space/inuse_objects/inuse_space; one function
and one location per frame; a sample per row with its stack leaf first and a `bytes` label).
Then, on a machine with Go, `go tool pprof -top -sample_index=inuse_space` reads it and its
time and total are set beside memdash's own import of the same file (through the upload
service, as any pprof upload) and memdash's statistics. Without Go only memdash's side runs.

`suite` (issue 19) does that for generated profiles of 10,000, 100,000 and 1,000,000 samples
and for the real profiles of tests/data/pprof, on SQLite and PostgreSQL, each side in a child
process of its own (started through a small launcher, `LAUNCHER`, whose os.wait4 gives the
child's own wall time and peak RSS). `go tool pprof -top` is measured from start to exit.
memdash twice, as a long-running worker meets an upload and as a process started for it: the
import alone (from reading the file to the committed rows; memory: its peak RSS less the
worker's RSS before the file) and the whole worker process (interpreter, Django and the app's
start included; memory: its peak RSS). It installs Go with apt-get (golang-go) when it is
missing and it can, and prints the ratios (targets: memdash ≤ 1/5 of pprof's time and ≤ 1/3 of
its peak memory), medians of `--repeat` runs. It writes no document.

    python bench/pprof_compare.py suite [--sizes 10000,100000] [--databases sqlite] \
        [--repeat 3] [--var DIR] [--db-prefix md_bench_pprof_me]
    python bench/pprof_compare.py worker --profile F.pb.gz       # child: memdash's import
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH, PYTHON, ROOT, emit, log, memdash_env, proc_status, run_json  # noqa: E402

# --- A minimal protobuf writer (varints and length-delimited fields are all pprof needs) ----


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64 as two's complement, as protobuf does
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field_varint(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def field_bytes(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def packed(number: int, values: list[int]) -> bytes:
    return field_bytes(number, b"".join(varint(v) for v in values))


class Strings:
    def __init__(self) -> None:
        self.index: dict[str, int] = {"": 0}
        self.table: list[str] = [""]

    def __call__(self, text: str) -> int:
        found = self.index.get(text)
        if found is None:
            found = self.index[text] = len(self.table)
            self.table.append(text)
        return found


def frame_name(frame: Any, images: list[dict]) -> str:
    if isinstance(frame, str):
        return frame
    if frame.get("symbol"):
        return frame["symbol"]
    image = images[frame["image"]]["name"] if frame.get("image") is not None else "?"
    return f"{image} + {frame.get('address')}"


def profile_bytes(doc: dict[str, Any]) -> bytes:
    """The document's allocation rows as a gzip-compressed pprof profile."""
    s = Strings()
    images = doc.get("images") or []
    parts: list[bytes] = []
    for kind, unit in (
        ("alloc_objects", "count"),
        ("alloc_space", "bytes"),
        ("inuse_objects", "count"),
        ("inuse_space", "bytes"),
    ):
        parts.append(field_bytes(1, field_varint(1, s(kind)) + field_varint(2, s(unit))))
    parents = [parent for parent, _ in doc["stacks"]]
    frames_of = [frame for _, frame in doc["stacks"]]
    for row in doc["allocations"]:
        p, pb = row.get("persistent", 0), row.get("persistent_bytes", 0)
        t, tb = row.get("transient", 0), row.get("transient_bytes", 0)
        locations = []
        node = row.get("stack")
        while node is not None:
            locations.append(frames_of[node] + 1)
            node = parents[node]
        size = pb // p if p else (tb // t if t else 0)
        label = field_varint(1, s("bytes")) + field_varint(3, size)
        sample = packed(1, locations) + packed(2, [p + t, pb + tb, p, pb]) + field_bytes(3, label)
        parts.append(field_bytes(2, sample))
    for i, frame in enumerate(doc["frames"]):
        line = field_varint(1, i + 1)
        parts.append(field_bytes(4, field_varint(1, i + 1) + field_bytes(4, line)))
        name = s(frame_name(frame, images))
        parts.append(field_bytes(5, field_varint(1, i + 1) + field_varint(2, name)))
    # Fields in number order, as Go writes them: the string table after the functions.
    period_type = field_bytes(11, field_varint(1, s("space")) + field_varint(2, s("bytes")))
    parts += [field_bytes(6, text.encode()) for text in s.table]
    parts += [field_varint(9, 1_763_633_523 * 10**9), period_type, field_varint(12, 1)]
    return gzip.compress(b"".join(parts), 6, mtime=0)


# --- memdash's side ----------------------------------------------------------------------------


PHASES = (("convert", 0.0), ("store", 0.0), ("store", 1.0))  # pprof's progress marks
PHASE_NAMES = ("receive", "read", "pprof", "store", "after")
nan = float("nan")


def worker(profile: Path, build: str) -> dict[str, Any]:
    from common import setup_django, warm_worker

    setup_django()
    from memdash.allocations.models import Snapshot
    from memdash.core.writes import apps as core_services
    from memdash.ingest.tasks import process_upload
    from memdash.ingest.writes.uploads import receive_upload

    app = core_services.get_or_create_app("com.example.pprof", "linux")
    warm_worker()
    before = proc_status(os.getpid())
    marks: dict[tuple[str, float], tuple[float, int]] = {}

    def progress(phase: str, done: float) -> None:  # when each phase starts, the peak RSS then
        marks.setdefault((phase, done), (time.perf_counter(), proc_status(os.getpid())["VmHWM"]))

    started = time.perf_counter()
    with open(profile, "rb") as stream:
        upload, _ = receive_upload(
            app, iter([stream.read()]), fields={"build_version": build}, run=False
        )
    received = time.perf_counter()
    upload = process_upload(upload, progress)
    finished = time.perf_counter()
    memory = {
        "rss_before_bytes": before["VmRSS"],  # Django, numpy and the app, before the file
        "peak_rss_bytes": proc_status(os.getpid())["VmHWM"],
    }
    # A profile.proto's import: receiving the file; reading it back (gunzip); memdash's pprof
    # code (decode and convert, to the parsed snapshot); the shared store; then the commit and
    # what follows it. The peak RSS before the store is the pprof code's.
    at = [started, received] + [marks.get(m, (nan, 0))[0] for m in PHASES] + [finished]
    spans = [b - a for a, b in zip(at, at[1:], strict=False)]
    memory["phase_seconds"] = dict(zip(PHASE_NAMES, spans, strict=True))
    memory["pprof_peak_rss_bytes"] = marks.get(PHASES[1], (nan, 0))[1]
    if upload.status != "done":
        error = f"{upload.status}: {upload.error_path}: {upload.error}"
        return {"error": error, "file_to_refusal_seconds": finished - started, **memory}
    snapshot = Snapshot.objects.get(pk=upload.result_id)
    return {
        "import_seconds": finished - received,
        "file_to_committed_seconds": finished - started,
        **memory,
        "persistent_bytes": snapshot.persistent_bytes,
        "persistent": snapshot.persistent,
        "rows": snapshot.row_count,
        "stack_nodes": snapshot.stack_node_count,
    }


TOTAL = re.compile(r"of ([\d.]+)([kMGT]?B) total")
UNITS = {"B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}


# A child's peak RSS cannot be read from os.wait4 here: a process started from this one (fork
# or vfork, then exec) reports at least this process's own RSS at that moment (Linux keeps the
# old address space's high-water mark across exec), so a small `go tool pprof` run showed this
# script's 140 MiB. This launcher, a bare interpreter of a few MiB, starts the child instead
# and reports the child's wall time and ru_maxrss, floored only by its own few MiB.
LAUNCHER = """
import os, sys, time
started = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
code = os.waitstatus_to_exitcode(status)
with open(sys.argv[1], "w") as out:
    out.write(f"{time.perf_counter() - started} {usage.ru_maxrss} {code}")
"""


def measured(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a child to its end: wall seconds, its own peak RSS (ru_maxrss through LAUNCHER),
    exit code and output."""
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.NamedTemporaryFile("r") as result,
    ):
        launcher = [PYTHON, "-I", "-S", "-c", LAUNCHER, result.name]
        proc = subprocess.run(launcher + cmd, stdout=out, stderr=err, env=env, cwd=ROOT)
        seconds, maxrss_kib, returncode = result.read().split() or ("nan", "0", proc.returncode)
        out.seek(0)
        err.seek(0)
        return {
            "seconds": float(seconds),
            "peak_rss_bytes": int(maxrss_kib) * 1024,
            "returncode": int(returncode),
            # paths as the repository names them, not as this machine does (they reach the report)
            "stdout": out.read().decode(errors="replace").replace(f"{ROOT}/", ""),
            "stderr": err.read().decode(errors="replace").replace(f"{ROOT}/", ""),
        }


def go_pprof_top(profile: Path) -> dict[str, Any]:
    go = shutil.which("go")
    if not go:
        return {"skipped": "Go is not installed (`which go` finds nothing)"}
    run = measured([go, "tool", "pprof", "-top", "-sample_index=inuse_space", str(profile)])
    match = TOTAL.search(run["stdout"] + run["stderr"])
    total = float(match.group(1)) * UNITS[match.group(2)] if match else None
    result = {key: run[key] for key in ("seconds", "peak_rss_bytes", "returncode")}
    if run["returncode"]:
        result["error"] = run["stderr"].strip()[-300:]
    return {**result, "inuse_space_total": total}


def compare(doc: dict[str, Any], url: str, var_dir: Path) -> dict[str, Any]:
    path = var_dir / "data" / f"pprof-{len(doc['allocations'])}.pb.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    path.write_bytes(profile_bytes(doc))
    written = time.perf_counter() - started
    expected = sum(r.get("persistent_bytes", 0) for r in doc["allocations"])
    memdash = run_json(
        [PYTHON, str(BENCH / "pprof_compare.py"), "worker", "--profile", str(path)],
        memdash_env(url, var_dir),
    )
    return {
        "profile_bytes": path.stat().st_size,
        "write_seconds": written,
        "document_inuse_space": expected,
        "memdash": memdash,
        "go_pprof": go_pprof_top(path),
    }


# --- issue 19: every size, both databases, time and peak memory of both sides ------------------

SIZES = (10_000, 100_000, 1_000_000)
REAL = ROOT / "tests" / "data" / "pprof"
TIME_TARGET, MEMORY_TARGET = 1 / 5, 1 / 3


@functools.cache  # once a run: what the first call did is what the report says
def ensure_go() -> tuple[str | None, str]:
    """`go`, installed through the system package manager (golang-go) when missing and this
    process may: (its path or None, what was done)."""
    if shutil.which("go"):
        return shutil.which("go"), "Go is installed"
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return None, "Go is missing and cannot be installed here (needs root and apt-get)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for step in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "golang-go"]):
        log(" ".join(step))
        proc = subprocess.run(step, env=env, capture_output=True, text=True, timeout=1800)
        if proc.returncode:
            return None, f"`{' '.join(step)}` failed: {proc.stderr.strip()[-300:]}"
    go = shutil.which("go")
    return go, "Go installed by this run (apt-get install golang-go)" if go else "no `go` after apt"


def generated_profile(samples: int, var_dir: Path) -> Path:
    """A profile of `samples` samples from the benchmark's generator, made once and kept: about
    one distinct stack in five samples, as in the issue's 100,000-sample Go profile."""
    from generate import Sizes, snapshot_document

    nodes, categories = min(2 * samples, 1_000_000), max(50, min(5_000, samples // 20))
    path = var_dir / "data" / f"pprof-suite-{samples}-n{nodes}-c{categories}.pb.gz"
    if not path.exists():
        log(f"writing {path.name}")
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = snapshot_document(Sizes(rows=samples, nodes=nodes, categories=categories))
        path.write_bytes(profile_bytes(doc))
    return path


def memdash_import(profile: Path, url: str, var_dir: Path) -> dict[str, Any]:
    # The worker's memory budget (ingest.parse_memory) is lifted: this measures what it takes.
    env = memdash_env(url, var_dir, MEMDASH_MAX_PARSE_MEMORY_BYTES=str(64 * 1024**3))
    run = measured(
        [PYTHON, str(BENCH / "pprof_compare.py"), "worker", "--profile", str(profile)], env
    )
    lines = [line for line in run["stdout"].splitlines() if line.startswith("{")]
    if run["returncode"] or not lines:
        return {"error": (run["stderr"] or run["stdout"]).strip()[-500:]}
    return {
        **json.loads(lines[-1]),
        "process_seconds": run["seconds"],  # interpreter, Django and the app's start included
        "process_peak_rss_bytes": run["peak_rss_bytes"],
    }


def store_floor(url: str, imported: dict[str, Any]) -> dict[str, Any]:
    """The bare store of as many rows and stack nodes as memdash stored (bench/store_floor.py),
    on the same database; nothing when the import failed."""
    from common import pg_dsn

    if "error" in imported:
        return {"error": "no import to measure against"}
    counts = ["--rows", str(imported["rows"]), "--nodes", str(imported["stack_nodes"])]
    return run_json([PYTHON, str(BENCH / "store_floor.py"), "--dsn", pg_dsn(url), *counts])


def medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The runs' median of each number (the machine is shared: one run can be far off); other
    values as the first run has them. A run that failed is reported alone."""
    failed = [run for run in runs if "error" in run]
    if failed or len(runs) == 1:
        return failed[0] if failed else runs[0]
    out = dict(runs[0])
    for key, value in runs[0].items():
        if isinstance(value, dict):  # (phase_seconds)
            out[key] = medians([run[key] for run in runs])
        elif isinstance(value, int | float) and not isinstance(value, bool):
            middle = statistics.median_low if isinstance(value, int) else statistics.median
            out[key] = middle(run[key] for run in runs)
    return {**out, "runs": len(runs)}


def suite(
    sizes: list[int],
    vendors: list[str],
    var_dir: Path,
    pg_server: str,
    prefix: str = "md_bench_pprof",
    repeat: int = 1,
) -> dict[str, Any]:
    from common import clone_database, drop_database, fresh_memdash_database

    go, go_note = ensure_go()
    log(go_note)
    files = [(f"generated, {n:,} samples", generated_profile(n, var_dir)) for n in sizes]
    files += [(f"tests/data/pprof/{p.name}", p) for p in sorted(REAL.iterdir()) if p.is_file()]
    templates = {
        vendor: fresh_memdash_database(vendor, f"{prefix}_tpl_{vendor}", var_dir, pg_server)
        for vendor in vendors
    }
    results = []
    for label, path in files:
        entry: dict[str, Any] = {"profile": label, "bytes": path.stat().st_size}
        runs: dict[str, list[dict[str, Any]]] = {"go": [], **{vendor: [] for vendor in vendors}}
        for _ in range(repeat):  # the sides in turn, so that a busy moment hits both
            log(f"go tool pprof -top: {label}")
            runs["go"].append(go_pprof_top(path) if go else {"skipped": go_note})
            for vendor in vendors:
                log(f"memdash on {vendor}: {label}")
                url = clone_database(templates[vendor], f"{prefix}_{vendor}", var_dir, pg_server)
                runs[vendor].append(memdash_import(path, url, var_dir))
                if vendor == "postgresql" and label.startswith("generated"):
                    runs.setdefault("floor", []).append(store_floor(url, runs[vendor][-1]))
                drop_database(url, pg_server)
        entry.update({side: medians(side_runs) for side, side_runs in runs.items()})
        results.append(entry)
    for url in templates.values():
        drop_database(url, pg_server)
    return {"go": go_note, "repeat": repeat, "results": results}


def ratio_rows(report: dict[str, Any], vendors: list[str]) -> list[str]:
    """One line per profile and database: both sides' time and peak RSS, and the ratios, for
    the import alone and for memdash's whole worker process."""
    mib = 1024 * 1024
    lines = [
        f"{'profile':30} {'db':4} {'import s':>8} {'process s':>9} {'pprof s':>8} {'time ×':>6} "
        f"{'proc ×':>6} {'peak MiB':>8} {'base MiB':>8} {'import MiB':>10} {'pprof MiB':>9} "
        f"{'mem ×':>5} {'imp ×':>5}  note"
    ]
    for entry in report["results"]:
        go = entry["go"]
        go_s, go_rss = go.get("seconds"), go.get("peak_rss_bytes")
        for vendor in vendors:
            md = entry[vendor]
            seconds = md.get("file_to_committed_seconds", md.get("file_to_refusal_seconds"))
            process_s = md.get("process_seconds", float("nan"))
            peak, base = md.get("peak_rss_bytes"), md.get("rss_before_bytes", 0)
            note = md.get("error", "")[:50] or f"{md.get('rows', 0):,} rows"
            if "skipped" in go or "error" in go:
                note += f"; pprof: {go.get('skipped') or go.get('error', '')[:50]}"
            if seconds is None or peak is None:
                lines.append(f"{entry['profile'][-30:]:30} {vendor[:4]:4} {note}")
                continue

            def x(a: float, b: float | None) -> str:
                return f"{a / b:.2f}" if b else "-"

            lines.append(
                f"{entry['profile'][-30:]:30} {vendor[:4]:4} {seconds:8.3f} {process_s:9.2f} "
                f"{go_s if go_s is not None else float('nan'):8.3f} {x(seconds, go_s):>6} "
                f"{x(process_s, go_s):>6} {peak / mib:8.0f} {base / mib:8.0f} "
                f"{(peak - base) / mib:10.0f} {(go_rss or 0) / mib:9.0f} {x(peak, go_rss):>5} "
                f"{x(peak - base, go_rss):>5}  {note}"
            )
    lines += [
        f"targets: × ≤ {TIME_TARGET:.2f} for time, ≤ {MEMORY_TARGET:.2f} for memory; medians of "
        f"{report.get('repeat', 1)} run(s) each.",
        "time × = import (file read to rows committed) / pprof's run; proc × = memdash's whole "
        "worker process (interpreter, Django and app start included) / pprof's run.",
        "mem × = the worker's peak RSS / pprof's; imp × = (peak − base) / pprof's, base being "
        "the worker's RSS before it reads the file (a running worker's baseline).",
    ]
    return lines


def phase_rows(report: dict[str, Any], vendors: list[str]) -> list[str]:
    """Where memdash's import time goes (see `worker`), and its peak RSS by the pprof code's
    end and in all."""
    mib = 1024 * 1024
    lines = [f"{'profile':30} {'db':4} " + " ".join(f"{p:>7}" for p in PHASE_NAMES) + " (s)"]
    lines[0] += f" {'pprof peak':>10} {'peak MiB':>8}"
    for entry in report["results"]:
        for vendor in vendors:
            md = entry[vendor]
            if "phase_seconds" not in md or "error" in md:
                continue
            spans = " ".join(f"{md['phase_seconds'].get(p, nan):7.3f}" for p in PHASE_NAMES)
            lines.append(
                f"{entry['profile'][-30:]:30} {vendor[:4]:4} {spans}     "
                f"{md['pprof_peak_rss_bytes'] / mib:10.0f} {md['peak_rss_bytes'] / mib:8.0f}"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("worker")
    w.add_argument("--profile", type=Path, required=True)
    w.add_argument("--build", default="pprof-bench")
    s = sub.add_parser("suite", help="every size and the real profiles, both sides measured")
    s.add_argument("--sizes", default=",".join(str(n) for n in SIZES))
    s.add_argument("--databases", default="sqlite,postgresql")
    s.add_argument("--var", type=Path, default=ROOT / "var" / "bench-pprof")
    s.add_argument(
        "--pg-server",
        default=os.environ.get("BENCH_PG_SERVER", "postgres://postgres@127.0.0.1:5432"),
    )
    s.add_argument("--repeat", type=int, default=1, help="runs of each side; medians reported")
    s.add_argument(
        "--db-prefix",
        default="md_bench_pprof",
        help="names of the databases it creates and drops (a run beside another needs its own)",
    )
    args = parser.parse_args(argv)
    if args.command == "worker":
        emit(worker(args.profile, args.build))
        return 0
    vendors = [v.strip() for v in args.databases.split(",") if v.strip()]
    var_dir = args.var.resolve()
    var_dir.mkdir(parents=True, exist_ok=True)
    sizes = [int(n) for n in args.sizes.split(",") if n.strip()]
    report = suite(sizes, vendors, var_dir, args.pg_server, args.db_prefix, args.repeat)
    (var_dir / "pprof-suite.json").write_text(json.dumps(report, indent=1))
    print(report["go"])
    print("\n".join(ratio_rows(report, vendors) + [""] + phase_rows(report, vendors)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
