"""Does the upload API stream a big body to storage? Send gzip bodies of two sizes to a gunicorn
worker and compare how much its resident memory grew (peak RSS over the request, from
/proc/<pid>/status VmHWM, minus its RSS before). Tasks are queued in the database and no task
worker runs, so what is measured is the request alone: receive, hash, store, queue.

Each body size gets a fresh server so each peak belongs to one request.
"""

from __future__ import annotations

import gzip
import http.client
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import orjson  # noqa: E402
from common import log, proc_status  # noqa: E402
from generate import Sizes, snapshot_document  # noqa: E402
from servers import make_app, serving  # noqa: E402

ROW_BYTES_ESTIMATE = 125  # JSON bytes per generated row, stacks and frames included


def write_body(path: Path, target_bytes: int, seed: int) -> int:
    """A real snapshot as a gzip stream of at least `target_bytes`: the JSON is stored with
    gzip level 0 (so the gzip is as large as the JSON, and the size is what is asked) and, if
    still short, followed by a second gzip member of JSON whitespace, which a reader that
    accepts several members (as memdash's does) reads as the same document."""
    if path.exists() and path.stat().st_size >= target_bytes:
        return path.stat().st_size
    rows = max(1000, target_bytes // ROW_BYTES_ESTIMATE)
    doc = snapshot_document(
        Sizes(
            rows=rows,
            nodes=max(1000, rows // 5),
            categories=5000,
            seed=seed,
            device_id=f"STREAM-{seed}",
        )
    )
    data = orjson.dumps(doc)
    del doc
    body = gzip.compress(data, compresslevel=0, mtime=0)
    if len(body) < target_bytes:
        body += gzip.compress(b" " * (target_bytes - len(body)), compresslevel=0, mtime=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body)
    return len(body)


def post_file(base_url: str, path: Path, secret: str) -> tuple[int, dict, float]:
    host_port = base_url.removeprefix("http://")
    conn = http.client.HTTPConnection(host_port, timeout=600)
    size = path.stat().st_size
    started = time.perf_counter()
    with open(path, "rb") as body:
        conn.request(
            "POST",
            "/api/v1/uploads",
            body=body,
            headers={
                "Content-Type": "application/json",
                "Content-Encoding": "gzip",
                "Content-Length": str(size),
                "Authorization": f"Bearer {secret}",
            },
        )
        response = conn.getresponse()
        payload = response.read()
    elapsed = time.perf_counter() - started
    conn.close()
    try:
        data = orjson.loads(payload)
    except orjson.JSONDecodeError:
        data = {"raw": payload[:200].decode(errors="replace")}
    return response.status, data, elapsed


def measure_one(url: str, var_dir: Path, body: Path, secret: str) -> dict[str, Any]:
    with serving(url, var_dir, web_workers=1, task_workers=0) as running:
        pids = running.web_worker_pids()
        if len(pids) != 1:
            raise RuntimeError(f"expected one gunicorn worker, found {pids}")
        pid = pids[0]
        # Warm the worker up (imports, URL resolver, first DB connection) with a tiny upload.
        tiny = var_dir / "tiny-body.json.gz"
        write_body(tiny, 1, seed=99)
        post_file(running.base_url, tiny, secret)
        before = proc_status(pid)
        status, data, elapsed = post_file(running.base_url, body, secret)
        after = proc_status(pid)
    size = body.stat().st_size
    return {
        "body_bytes": size,
        "status": status,
        "upload_status": data.get("status"),
        "seconds": elapsed,
        "mb_per_s": size / elapsed / 1e6 if elapsed else 0,
        "rss_before": before["VmRSS"],
        "peak_rss": after["VmHWM"],
        "growth": after["VmHWM"] - before["VmRSS"],
    }


def measure_upload_streaming(
    url: str, var_dir: Path, sizes: list[int], secret: str | None = None
) -> list[dict[str, Any]]:
    secret = secret or make_app(url, var_dir)["secret"]
    results = []
    for i, target in enumerate(sizes):
        body = var_dir / "bodies" / f"stream-{target}.json.gz"
        log(f"upload streaming: writing a {target / 1e6:.0f} MB body")
        write_body(body, target, seed=200 + i)
        log(f"upload streaming: sending {body.stat().st_size / 1e6:.0f} MB")
        results.append(measure_one(url, var_dir, body, secret))
    return results
