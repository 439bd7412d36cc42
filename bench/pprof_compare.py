"""The same allocations as a pprof heap profile, for a comparison with `go tool pprof -top`.

`profile_bytes(doc)` writes a memdash.snapshot document's allocation rows as a gzip-compressed
profile.proto (sample types alloc_objects/alloc_space/inuse_objects/inuse_space; one function
and one location per frame; a sample per row with its stack leaf first and a `bytes` label).
Then, on a machine with Go, `go tool pprof -top -sample_index=inuse_space` reads it and its
time and total are set beside memdash's own import of the same file (through the upload
service, as any pprof upload) and memdash's statistics. Without Go only memdash's side runs.

`suite` (issue 19) does that for generated profiles of 10,000, 100,000 and 1,000,000 samples
and for the real profiles of tests/data/pprof, on SQLite and PostgreSQL, each side in a child
process of its own whose wall time and peak RSS are measured (os.wait4): memdash from reading
the file to the committed rows, `go tool pprof -top` from start to exit. It installs Go with
apt-get (golang-go) when it is missing and it can, and prints the ratios (targets: memdash ≤ 1/5
of pprof's time and ≤ 1/3 of its peak memory). It writes no document.

    python bench/pprof_compare.py suite [--sizes 10000,100000] [--databases sqlite]
    python bench/pprof_compare.py worker --profile F.pb.gz       # child: memdash's import
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
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


def worker(profile: Path, build: str) -> dict[str, Any]:
    from common import setup_django

    setup_django()
    from django.urls import get_resolver

    from memdash.allocations.models import Snapshot
    from memdash.core import services as core_services
    from memdash.ingest.services import receive_upload
    from memdash.ingest.tasks import process_upload

    app = core_services.get_or_create_app("com.example.pprof", "linux")
    # What a worker that has run before has done once: the URL resolver is built (a stored
    # snapshot's link needs it; building it takes a tenth of a second).
    assert get_resolver().reverse_dict
    before = proc_status(os.getpid())
    started = time.perf_counter()
    with open(profile, "rb") as stream:
        upload, _ = receive_upload(
            app, iter([stream.read()]), fields={"build_version": build}, run=False
        )
    received = time.perf_counter()
    upload = process_upload(upload)
    finished = time.perf_counter()
    memory = {
        "rss_before_bytes": before["VmRSS"],  # Django, numpy and the app, before the file
        "peak_rss_bytes": proc_status(os.getpid())["VmHWM"],
    }
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


def measured(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a child to its end: wall seconds, its peak RSS (with its own children's: os.wait4's
    rusage), exit code and output."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {
            "seconds": elapsed,
            "peak_rss_bytes": usage.ru_maxrss * 1024,
            "returncode": proc.returncode,
            "stdout": out.read().decode(errors="replace"),
            "stderr": err.read().decode(errors="replace"),
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
    return {**json.loads(lines[-1]), "process_peak_rss_bytes": run["peak_rss_bytes"]}


def suite(sizes: list[int], vendors: list[str], var_dir: Path, pg_server: str) -> dict[str, Any]:
    from common import clone_database, drop_database, fresh_memdash_database

    go, go_note = ensure_go()
    log(go_note)
    files = [(f"generated, {n:,} samples", generated_profile(n, var_dir)) for n in sizes]
    files += [(f"tests/data/pprof/{p.name}", p) for p in sorted(REAL.iterdir()) if p.is_file()]
    templates = {
        vendor: fresh_memdash_database(vendor, f"md_bench_pprof_tpl_{vendor}", var_dir, pg_server)
        for vendor in vendors
    }
    results = []
    for label, path in files:
        log(f"go tool pprof -top: {label}")
        entry: dict[str, Any] = {"profile": label, "bytes": path.stat().st_size}
        entry["go"] = go_pprof_top(path) if go else {"skipped": go_note}
        for vendor in vendors:
            log(f"memdash on {vendor}: {label}")
            url = clone_database(templates[vendor], f"md_bench_pprof_{vendor}", var_dir, pg_server)
            entry[vendor] = memdash_import(path, url, var_dir)
            drop_database(url, pg_server)
        results.append(entry)
    for url in templates.values():
        drop_database(url, pg_server)
    return {"go": go_note, "results": results}


def ratio_rows(report: dict[str, Any], vendors: list[str]) -> list[str]:
    """One line per profile and database: both sides' time and peak RSS, and the ratios."""
    mib = 1024 * 1024
    lines = [
        f"{'profile':34} {'db':10} {'memdash s':>9} {'pprof s':>8} {'time ×':>7} "
        f"{'memdash MiB':>11} {'(before)':>8} {'pprof MiB':>9} {'mem ×':>6}  note"
    ]
    for entry in report["results"]:
        go = entry["go"]
        for vendor in vendors:
            md = entry[vendor]
            seconds = md.get("file_to_committed_seconds", md.get("file_to_refusal_seconds"))
            peak = md.get("process_peak_rss_bytes", md.get("peak_rss_bytes"))
            note = md.get("error", "")[:60] or f"{md.get('rows', 0):,} rows"
            go_s, go_rss = go.get("seconds"), go.get("peak_rss_bytes")
            if "skipped" in go or "error" in go:
                note += f"; pprof: {go.get('skipped') or go.get('error', '')[:60]}"
            if seconds is None or peak is None:
                lines.append(f"{entry['profile']:34} {vendor:10} {note}")
                continue
            time_x = f"{seconds / go_s:.2f}" if go_s else "-"
            mem_x = f"{peak / go_rss:.2f}" if go_rss else "-"
            lines.append(
                f"{entry['profile']:34} {vendor:10} {seconds:9.2f} "
                f"{go_s if go_s is not None else float('nan'):8.2f} {time_x:>7} "
                f"{peak / mib:11.0f} {md.get('rss_before_bytes', 0) / mib:8.0f} "
                f"{(go_rss or 0) / mib:9.0f} {mem_x:>6}  {note}"
            )
    lines.append(
        f"targets: time × ≤ {TIME_TARGET:.2f}, mem × ≤ {MEMORY_TARGET:.2f} (memdash's whole worker "
        "process, Django included: `(before)` is its RSS before it reads the file)"
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
    args = parser.parse_args(argv)
    if args.command == "worker":
        emit(worker(args.profile, args.build))
        return 0
    vendors = [v.strip() for v in args.databases.split(",") if v.strip()]
    var_dir = args.var.resolve()
    var_dir.mkdir(parents=True, exist_ok=True)
    sizes = [int(n) for n in args.sizes.split(",") if n.strip()]
    report = suite(sizes, vendors, var_dir, args.pg_server)
    (var_dir / "pprof-suite.json").write_text(json.dumps(report, indent=1))
    print(report["go"])
    print("\n".join(ratio_rows(report, vendors)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
