"""Symbolication, side by side with its targets:

- naming 40,000 distinct frames of one image once its symcache exists (target: 2 s): a Breakpad
  .sym of 40,000 functions (generated here: a benchmark input, not a test expectation) is turned
  into a symcache by `memdash.symbols.objects`, then a snapshot of 40,000 address frames, each a
  leaf under a 3-frame path, is named by `symbolicate_parsed` with the `Symbolicator` (lookup,
  demangling, stack rebuild, row remap: everything the ingest and the job do before writing);
- uploading a large dSYM zip (1 GB by default) through the API to one gunicorn worker: its
  resident memory grows by a few MB, not by the body (peak RSS over the request, VmHWM, minus RSS
  before), since the body, the unpacking and the hashing all stream.

    .venv/bin/python bench/symbols.py [--zip-mb 1024] [--var var/bench-symbols]
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

from common import collect_static, log, memdash_env, migrate, proc_status, setup_django  # noqa: E402
from servers import make_app, serving  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DSYM_ZIP = ROOT / "tests" / "data" / "symbols" / "libchat_cache.dylib.dSYM.zip"
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


def measure_naming() -> dict[str, Any]:
    from memdash.allocations.document import FrameInfo, ImageInfo, ParsedSnapshot
    from memdash.allocations.symbolicate import symbolicate_parsed
    from memdash.symbols.lookup import demangle, open_symcache
    from memdash.symbols.objects import read_objects
    from memdash.symbols.selectors import Symbolicator

    with tempfile.TemporaryDirectory() as folder:
        sym = Path(folder) / "Chat.sym"
        big_sym(sym, FRAMES)
        started = time.perf_counter()
        found = read_objects(sym, sym, sym.name, "breakpad", "", Path(folder))
        symcache_seconds = time.perf_counter() - started
        debug_file = type("F", (), {"symcache_path": str(found[0].symcache), "image_name": "Chat"})
        parsed = ParsedSnapshot(
            app_id="", platform="", app_name="", build_version="", build_number="",
            build_commit="", captured_at=datetime.now(UTC),
            images=[ImageInfo("Chat", UUID, 0)],
        )  # fmt: skip
        parsed.frames = [FrameInfo(symbol=s, image="Chat") for s in ("main", "run", "loop")]
        parsed.stack_parents, parsed.stack_frames = [None, 0, 1], [0, 1, 2]
        for n in range(FRAMES):
            offset = 0x10000 + n * 0x40 + 0x10
            parsed.frames.append(FrameInfo(image="Chat", offset=offset, debug_id=UUID))
            parsed.stack_parents.append(2)
            parsed.stack_frames.append(len(parsed.frames) - 1)
            parsed.rows[("Malloc 64 Bytes", len(parsed.stack_parents) - 1, None, None)] = [
                1, 64, 0, 0,
            ]  # fmt: skip
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
    with open(path, "rb") as body:
        conn.request(
            "POST", f"/api/v1/apps/{app_id}/debug-files?filename=Chat.app.dSYM.zip", body=body,
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
        post(running.base_url, DSYM_ZIP, made["app_id"], made["secret"])  # warm up
        before = proc_status(pid)
        status, data, seconds = post(running.base_url, body, made["app_id"], made["secret"])
        after = proc_status(pid)
    return {
        "body_bytes": body.stat().st_size, "status": status,
        "objects": [o.get("outcome") for o in data.get("objects", [])] or data,
        "seconds": round(seconds, 1), "rss_before": before["VmRSS"], "peak_rss": after["VmHWM"],
        "growth": after["VmHWM"] - before["VmRSS"],
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--zip-mb", type=int, default=1024)
    parser.add_argument("--var", default=str(ROOT / "var" / "bench-symbols"))
    parser.add_argument("--skip-upload", action="store_true")
    args = parser.parse_args()
    setup_django()
    print("naming:", measure_naming())
    if not args.skip_upload:
        var_dir = Path(args.var)
        var_dir.mkdir(parents=True, exist_ok=True)
        try:
            print("upload:", measure_upload(var_dir, args.zip_mb))
        finally:
            shutil.rmtree(var_dir / "uploads", ignore_errors=True)


if __name__ == "__main__":
    main()
