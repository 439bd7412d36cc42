"""Symbolication, side by side with its targets (the `symbols` part of bench/run.py, which keeps
its results with the others' and renders them in docs/performance.md):

- naming 40,000 distinct frames of one image once its symcache exists (target: 2 s): a Breakpad
  .sym of 40,000 functions (generated here: a benchmark input, not a test expectation) is turned
  into a symcache by `memdash.symbols.logic.objects`, then a snapshot of 40,000 address frames,
  each a leaf under a 3-frame path, is named by `symbolicate_parsed` with the `Symbolicator`
  (lookup, demangling, stack rebuild, row remap: everything the ingest and the job do before
  writing);
- the job that names them in a stored snapshot, with its database writes: the same snapshot is
  stored (unnamed) through memdash's store, the .sym uploaded through its services, and the job
  (`allocations.tasks.run_job`) timed: reading the snapshot back, naming, keying by function and
  writing again its frames, stack nodes, rows, call tree, responsible callers and images;
- uploading a large dSYM zip (1 GB in the full run) through the API to one gunicorn worker: its
  resident memory grows by a few MB, not by the body (peak RSS over the request, VmHWM, minus RSS
  before), since the body, the unpacking and the hashing all stream.

    .venv/bin/python bench/run.py --only symbols [--small]  # measure, keep, rewrite the doc
    .venv/bin/python bench/symbols.py worker                 # naming and the job (a child)
"""

from __future__ import annotations

import argparse
import http.client
import shutil
import sys
import tempfile
import time
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    BENCH,
    PYTHON,
    clone_database,
    collect_static,
    emit,
    log,
    memdash_env,
    migrate,
    proc_status,
    run_json,
    setup_django,
)
from servers import make_app, serving  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DSYM_ZIP = ROOT / "tests" / "data" / "symbols" / "libchat_cache.dylib.dSYM.zip"
# The warm-up upload: another image, so that the large zip's objects are new and stored (their
# symcaches made) rather than answered as the same objects again.
WARM_UP = ROOT / "tests" / "data" / "symbols" / "chat_cache.elf"
UUID = "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0"
FRAMES = 40_000


def big_sym(path: Path, functions: int) -> None:
    """A Breakpad .sym with `functions` C++ functions of 64 bytes, each with a line record."""
    with open(path, "w") as out:
        out.write(f"MODULE mac arm64 {UUID.replace('-', '')}0 Chat\nFILE 0 Chat/Generated.cpp\n")
        for n in range(functions):
            start = 0x10000 + n * 0x40
            out.write(f"FUNC {start:x} 40 0 _ZN4chat9Generated{len(str(n)) + 1}f{n}Ev\n")
            out.write(f"{start:x} 40 {n + 1} 0\n")


def snapshot_to_name(frames: int) -> Any:
    """A snapshot of `frames` address frames of the image, each a leaf under main → run → loop,
    one 64-byte allocation on each."""
    from memdash.allocations.logic.document.parse import FrameInfo, ImageInfo, ParsedSnapshot

    parsed = ParsedSnapshot(
        app_id="com.example.bench.symbols", platform="ios", app_name="Chat", build_version="1.0",
        build_number="1", build_commit="", captured_at=datetime.now(UTC),
        images=[ImageInfo("Chat", UUID, 0, False, "arm64")],
    )  # fmt: skip
    parsed.frames = [FrameInfo(symbol=s, image="Chat") for s in ("main", "run", "loop")]
    parsed.stack_parents, parsed.stack_frames = [None, 0, 1], [0, 1, 2]
    for n in range(frames):
        offset = 0x10000 + n * 0x40 + 0x10
        parsed.frames.append(FrameInfo(image="Chat", offset=offset, debug_id=UUID))
        parsed.stack_parents.append(2)
        parsed.stack_frames.append(len(parsed.frames) - 1)
        parsed.rows[("Malloc 64 Bytes", len(parsed.stack_parents) - 1, None, None)] = [
            1, 64, 0, 0,
        ]  # fmt: skip
    return parsed


def measure_naming() -> dict[str, Any]:
    from memdash.allocations.logic.symbolicate import symbolicate_parsed
    from memdash.symbols.logic.lookup import demangle, open_symcache
    from memdash.symbols.logic.objects import read_objects
    from memdash.symbols.reads import Symbolicator

    with tempfile.TemporaryDirectory() as folder:
        sym = Path(folder) / "Chat.sym"
        big_sym(sym, FRAMES)
        started = time.perf_counter()
        found = read_objects(sym, sym, sym.name, "breakpad", "", Path(folder))
        symcache_seconds = time.perf_counter() - started
        debug_file = type("F", (), {"symcache_path": str(found[0].symcache), "image_name": "Chat"})
        parsed = snapshot_to_name(FRAMES)
        demangle.cache_clear()
        open_symcache.cache_clear()
        resolve = Symbolicator({UUID: debug_file})  # type: ignore[dict-item]
        started = time.perf_counter()
        named = symbolicate_parsed(parsed, resolve)
        seconds = time.perf_counter() - started
    sample = next(f for f in parsed.frames if f.symbolicated)
    return {
        "frames": FRAMES, "named": named, "seconds": round(seconds, 3), "target_seconds": 2.0,
        "symcache_seconds": round(symcache_seconds, 3),
        "example": f"{sample.symbol} {sample.file}:{sample.line}",
    }  # fmt: skip


class Timed:
    """Wraps a function of a module for the job's run, adding up the seconds spent in it."""

    def __init__(self, module: Any, name: str) -> None:
        self.module, self.name, self.seconds = module, name, 0.0
        self.original = getattr(module, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return self.original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started

        setattr(module, name, timed)

    def restore(self) -> None:
        setattr(self.module, self.name, self.original)


def measure_job() -> dict[str, Any]:
    """The job naming the stored snapshot's 40,000 frames, database writes included (run in a
    child on its own database: `worker`). Only the job is timed; storing the snapshot and the
    debug file before it are not."""
    from django.db import connection

    from memdash.allocations.models import CallTreeNode, Snapshot
    from memdash.allocations.tasks import run_job
    from memdash.allocations.writes import resymbolicate
    from memdash.allocations.writes.snapshots import store_parsed_snapshot
    from memdash.core.writes import apps as core_services
    from memdash.core.writes.uploads import UploadMeta
    from memdash.symbols.logic.lookup import demangle, open_symcache
    from memdash.symbols.writes import store_debug_files

    app = core_services.get_or_create_app("com.example.bench.symbols", "ios", "Chat")
    snapshot = store_parsed_snapshot(
        snapshot_to_name(FRAMES), UploadMeta(app=app, received_at=datetime.now(UTC))
    )
    with tempfile.TemporaryDirectory() as folder:
        sym = Path(folder) / "Chat.sym"
        big_sym(sym, FRAMES)
        job = store_debug_files(app, sym).job  # queued: MEMDASH_TASKS=database, no worker
    assert job is not None
    demangle.cache_clear()
    open_symcache.cache_clear()
    parts = {name: Timed(resymbolicate, name) for name in
             ("stored_as_parsed", "symbolicate_parsed", "key_by_function")}  # fmt: skip
    started = time.perf_counter()
    job = run_job(job)
    seconds = time.perf_counter() - started
    for part in parts.values():
        part.restore()
    read, name, key = (parts[n].seconds for n in parts)
    nodes = CallTreeNode.objects.filter(snapshot_id=snapshot.pk).count()
    return {
        "database": connection.vendor, "state": job.state, "error": job.error,
        "frames_named": job.frames_named, "snapshots": job.snapshots_done,
        "seconds": round(seconds, 3), "read_seconds": round(read, 3),
        "naming_seconds": round(name, 3), "keying_seconds": round(key, 3),
        "write_seconds": round(seconds - read - name - key, 3), "call_tree_nodes": nodes,
        "unsymbolicated_bytes": Snapshot.objects.get(pk=snapshot.pk).unsymbolicated_bytes,
    }  # fmt: skip


def big_dsym_zip(path: Path, megabytes: int) -> None:
    """The test dSYM plus a filler file inside the bundle, stored (not deflated) so the zip is
    as large as asked; incompressible bytes, so nothing can shortcut it."""
    with zipfile.ZipFile(DSYM_ZIP) as source, zipfile.ZipFile(path, "w") as out:
        for item in source.infolist():
            out.writestr(item, source.read(item))
        chunk = bytes(range(256)) * 4096  # 1 MiB
        with out.open("libchat_cache.dylib.dSYM/Contents/Resources/Relocations.bin", "w") as f:
            for _ in range(megabytes):
                f.write(chunk)


def post(base_url: str, path: Path, app_id: int, secret: str) -> tuple[int, dict, float]:
    conn = http.client.HTTPConnection(base_url.removeprefix("http://"), timeout=1200)
    started = time.perf_counter()
    filename = "Chat.app.dSYM.zip" if path.suffix == ".zip" else path.name
    with open(path, "rb") as body:
        conn.request(
            "POST", f"/api/v1/apps/{app_id}/debug-files?filename={filename}", body=body,
            headers={"Content-Length": str(path.stat().st_size),
                     "Content-Type": "application/octet-stream",
                     "Authorization": f"Bearer {secret}"},
        )  # fmt: skip
        response = conn.getresponse()
        payload = response.read()
    import orjson

    return response.status, orjson.loads(payload), time.perf_counter() - started


def measure_upload(var_dir: Path, megabytes: int) -> dict[str, Any]:
    url = f"sqlite:///{var_dir / 'bench.sqlite3'}"
    migrate(memdash_env(url, var_dir))
    collect_static(var_dir)  # gunicorn serves with the production static storage
    made = make_app(url, var_dir)
    body = var_dir / f"dsym-{megabytes}.zip"
    if not body.exists():
        log(f"symbols: writing a {megabytes} MB dSYM zip")
        big_dsym_zip(body, megabytes)
    with serving(url, var_dir, web_workers=1, task_workers=0) as running:
        pid = running.web_worker_pids()[0]
        post(running.base_url, WARM_UP, made["app_id"], made["secret"])  # warm up
        before = proc_status(pid)
        status, data, seconds = post(running.base_url, body, made["app_id"], made["secret"])
        after = proc_status(pid)
    return {
        "body_bytes": body.stat().st_size, "status": status,
        "objects": [o.get("outcome") for o in data.get("objects", [])] or data,
        "seconds": round(seconds, 1), "rss_before": before["VmRSS"], "peak_rss": after["VmHWM"],
        "growth": after["VmHWM"] - before["VmRSS"],
    }  # fmt: skip


def measure(var_dir: Path, url: str, zip_mb: int) -> dict[str, Any]:
    """The `symbols` part of bench/run.py: naming and the job in a child on `url` (a fresh
    memdash database), the upload through gunicorn on its own SQLite database."""
    log("symbols: naming 40,000 frames, then the job on a stored snapshot")
    env = memdash_env(url, var_dir, MEMDASH_TASKS="database")
    result = run_json([PYTHON, str(BENCH / "symbols.py"), "worker"], env, timeout=1800)
    upload_dir = var_dir / "symbols-upload"
    upload_dir.mkdir(parents=True, exist_ok=True)
    try:
        result["upload"] = measure_upload(upload_dir, zip_mb)
    finally:
        shutil.rmtree(upload_dir / "uploads", ignore_errors=True)
    result["measured"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return result


def part(mode: Any, args: Any, var_dir: Path, dbs: Any, templates: dict[str, str]) -> dict:
    """`bench/run.py`'s `symbols` part: naming and the job on a copy of the run's migrated
    database, and an upload of the mode's dSYM zip size."""
    vendor = "postgresql" if args.pg else "sqlite"
    name = f"md_bench_symbols{args.db_suffix}"
    url = clone_database(templates[vendor], name, var_dir, args.pg_server)
    return {"symbols": measure(var_dir, url, mode.symbols_zip_mb)}


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("worker", help="naming and the job, on the database of DATABASE_URL")
    parser.parse_args()
    setup_django()
    emit({"naming": measure_naming(), "job": measure_job()})


if __name__ == "__main__":
    main()
