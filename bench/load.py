"""Concurrent uploads: N clients send 10,000-row snapshots for a fixed time through gunicorn,
with tasks queued in PostgreSQL and run by `manage.py db_worker` processes, as production runs.

Each upload has its own device and session, so its own bytes: a few generated documents with
the number written in. Their gzip is made before the clock starts (in devices, not on the
server: gzip at the clients' rate took nearly half a core from the server being measured), as
many as the clients could send at a million rows a second; past those, a client makes its next
body as it goes, so the clients send for the whole time whatever the rate.
Every client also re-sends, now and then, a body it sent before: the answer must be the same
upload, never a second snapshot. At the end (after the queue drained) the database is checked:
every accepted upload is done, each has exactly one snapshot, no snapshot is left without an
upload, and no request failed.
"""

from __future__ import annotations

import functools
import gzip
import http.client
import itertools
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import log, pg_dsn  # noqa: E402
from generate import Sizes, snapshot_document  # noqa: E402
from servers import Running, make_app, serving  # noqa: E402

PLACEHOLDER = b"@@@@@@@@"
SENT_ROWS_PER_S = 1_000_000  # bodies made ahead: what clients could send in that time, at most


def make_templates(count: int, rows: int, seed: int = 31) -> list[bytes]:
    """`count` snapshot documents (same app and code, other rows) as JSON whose device id and
    session hold a placeholder, so each upload gets distinct bytes for the price of a gzip."""
    templates = []
    for variant in range(1, count + 1):
        sizes = Sizes(
            rows=rows,
            nodes=max(1000, rows // 5),
            categories=min(5000, max(200, rows // 20)),
            seed=seed,
            variant=variant,
        )
        doc = snapshot_document(sizes)
        doc["device"]["id"] = f"LOAD-{PLACEHOLDER.decode()}"
        doc["session"] = f"{PLACEHOLDER.decode()}-0000-4000-8000-000000000000"
        templates.append(orjson.dumps(doc))
    return templates


def body_for(templates: list[bytes], n: int) -> bytes:
    """Upload number `n`: a device and session of its own, gzip as a monitor sends it."""
    raw = templates[n % len(templates)].replace(PLACEHOLDER, f"{n:08d}".encode())
    return gzip.compress(raw, 1, mtime=0)  # zlib lets other threads run meanwhile


def prepare_bodies(templates: list[bytes], count: int) -> list[bytes]:
    """The bodies of uploads 0 … count-1, made by a process per core."""
    with multiprocessing.get_context("fork").Pool(os.cpu_count()) as pool:
        return pool.map(functools.partial(body_for, templates), range(count), chunksize=64)


class Bodies:
    """Upload number `n`'s body: made before the clock for the first ones, else now."""

    def __init__(self, templates: list[bytes], prepared: list[bytes]):
        self.templates, self.prepared = templates, prepared

    def __call__(self, n: int) -> bytes:
        return self.prepared[n] if n < len(self.prepared) else body_for(self.templates, n)


_made: dict[tuple[int, int, int], Bodies] = {}


def bodies_for(templates: int, rows: int, count: int) -> Bodies:
    """The bodies of a run; made once per process (bench/citus.py measures several runs)."""
    key = (templates, rows, count)
    if key not in _made:
        log(f"load: generating {templates} documents of {rows} rows")
        documents = make_templates(templates, rows)
        log(f"load: gzipping {count} bodies before the clock starts")
        _made[key] = Bodies(documents, prepare_bodies(documents, count))
    return _made[key]


@dataclass
class ClientLog:
    sent: int = 0
    repeats: int = 0
    errors: list[str] = field(default_factory=list)
    accepted: dict[int, int] = field(default_factory=dict)  # upload number -> upload id
    repeat_mismatches: list[str] = field(default_factory=list)


def client_loop(
    base_url: str,
    secret: str,
    bodies: Bodies,
    numbers: Iterator[int],
    deadline: float,
    log_: ClientLog,
    retry: bool = False,
) -> None:
    """Send new uploads until the deadline; every tenth request re-sends this client's first
    accepted body, which must come back as the same upload. With `retry`, a request that
    fails is sent again a second later, as a device retries (its errors are still counted)."""
    conn = http.client.HTTPConnection(base_url.removeprefix("http://"), timeout=120)
    headers = {
        "Content-Type": "application/json",
        "Content-Encoding": "gzip",
        "Authorization": f"Bearer {secret}",
    }
    first: tuple[int, bytes] | None = None
    again: tuple[int, bytes] | None = None  # the failed request to send again (`retry`)
    while time.monotonic() < deadline:
        repeat = again is None and first is not None and log_.sent % 10 == 9
        if again is not None:
            (n, body), again = again, None
        elif repeat:
            n, body = first
        else:
            n = next(numbers)
            body = bodies(n)
        try:
            conn.request("POST", "/api/v1/uploads", body=body, headers=headers)
            response = conn.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException) as exc:
            log_.errors.append(f"upload {n}: {exc!r}")
            conn.close()
            conn = http.client.HTTPConnection(base_url.removeprefix("http://"), timeout=120)
            if retry and not repeat:
                again = (n, body)
                time.sleep(1)
            continue
        log_.sent += 1
        if response.status not in (200, 202):
            log_.errors.append(f"upload {n}: HTTP {response.status} {payload[:200]!r}")
            if retry and not repeat:
                again = (n, body)
                time.sleep(1)
            continue
        upload_id = orjson.loads(payload)["id"]
        if repeat:
            log_.repeats += 1
            if upload_id != log_.accepted[n]:
                log_.repeat_mismatches.append(f"upload {n}: {upload_id} != {log_.accepted[n]}")
        else:
            log_.accepted[n] = upload_id
            if first is None:
                first = (n, body)
    conn.close()


def wait_for_queue(dsn: str, upload_ids: set[int], timeout: float) -> float:
    """Seconds until every upload is finished (done, rejected or failed)."""
    import psycopg

    started = time.monotonic()
    with psycopg.connect(dsn, autocommit=True) as conn:
        while time.monotonic() - started < timeout:
            pending = conn.execute(
                "SELECT count(*) FROM ingest_upload WHERE id = ANY(%s) "
                "AND status NOT IN ('done', 'rejected', 'failed')",
                [list(upload_ids)],
            ).fetchone()[0]
            if pending == 0:
                return time.monotonic() - started
            time.sleep(0.5)
    raise RuntimeError(f"uploads still pending after {timeout} s")


def last_snapshot_id(dsn: str) -> int:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute("SELECT coalesce(max(id), 0) FROM snapshots_snapshot").fetchone()[0]


def check_database(dsn: str, upload_ids: set[int], after_id: int = 0) -> dict[str, Any]:
    """What this run stored: its uploads, and the snapshots newer than `after_id` (a database
    used by an earlier run keeps that run's)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        statuses = dict(
            conn.execute(
                "SELECT status, count(*) FROM ingest_upload WHERE id = ANY(%s) GROUP BY status",
                [list(upload_ids)],
            ).fetchall()
        )
        uploads_total = conn.execute("SELECT count(*) FROM ingest_upload").fetchone()[0]
        snapshots = conn.execute(
            "SELECT count(*) FROM snapshots_snapshot WHERE id > %s", [after_id]
        ).fetchone()[0]
        doubled = conn.execute(
            "SELECT count(*) FROM (SELECT upload_id FROM snapshots_snapshot WHERE id > %s "
            "GROUP BY upload_id HAVING count(*) > 1) d",
            [after_id],
        ).fetchone()[0]
        orphans = conn.execute(
            "SELECT count(*) FROM snapshots_snapshot WHERE id > %s AND (upload_id IS NULL "
            "OR upload_id <> ALL(%s))",
            [after_id, list(upload_ids)],
        ).fetchone()[0]
        # the uploads with a snapshot, matched here: on Citus a subquery correlating the uploads
        # (a reference table) with the snapshots (distributed) is refused
        stored = conn.execute(
            "SELECT DISTINCT upload_id FROM snapshots_snapshot WHERE upload_id = ANY(%s)",
            [list(upload_ids)],
        ).fetchall()
        missing = len(upload_ids - {row[0] for row in stored})
        rows = conn.execute(
            "SELECT coalesce(sum(row_count), 0) FROM snapshots_snapshot WHERE id > %s", [after_id]
        ).fetchone()[0]
        window = conn.execute(
            "SELECT extract(epoch FROM max(finished_at) - min(created_at)) FROM ingest_upload "
            "WHERE id = ANY(%s)",
            [list(upload_ids)],
        ).fetchone()[0]
    return {
        "statuses": statuses,
        "uploads_in_database": uploads_total,
        "snapshots": snapshots,
        "doubled": doubled,
        "orphan_snapshots": orphans,
        "uploads_without_snapshot": missing,
        "rows_stored": int(rows),
        "processing_window": float(window or 0),
    }


def measure_load(
    url: str,
    var_dir: Path,
    *,
    clients: int = 8,
    seconds: float = 60,
    rows: int = 10_000,
    web_workers: int = 3,
    task_workers: int = 2,
    templates: int = 16,
    during: Callable[[Running, float], dict[str, Any]] | None = None,
    retry: bool = False,
    env: dict[str, str] | None = None,
    prepared: int | None = None,
) -> dict[str, Any]:
    """`during(running, deadline)`, if given, runs in a thread of its own while the clients
    send (what happens to the cluster meanwhile: bench/citus.py); its answer is the result's
    `during`. `env`: more settings for the servers. `prepared`: at most this many bodies made
    before the clock (the rest as the clients go)."""
    secret = make_app(url, var_dir)["secret"]
    count = int(seconds * SENT_ROWS_PER_S / rows)
    bodies = bodies_for(templates, rows, min(count, prepared) if prepared else count)
    after_id = last_snapshot_id(pg_dsn(url))
    numbers = itertools.count()  # shared by the clients: next() on it is atomic
    logs = [ClientLog() for _ in range(clients)]
    during_result: dict[str, Any] = {}
    with serving(
        url, var_dir, web_workers=web_workers, task_workers=task_workers, env=env
    ) as running:
        deadline = time.monotonic() + seconds
        started = time.monotonic()
        threads = [
            threading.Thread(
                target=client_loop,
                args=(running.base_url, secret, bodies, numbers, deadline, logs[i], retry),
            )
            for i in range(clients)
        ]
        if during is not None:
            threads.append(
                threading.Thread(target=lambda: during_result.update(during(running, deadline)))
            )
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        sending = time.monotonic() - started
        accepted = {uid for lg in logs for uid in lg.accepted.values()}
        log(f"load: {len(accepted)} uploads accepted in {sending:.0f} s; waiting for the queue")
        drain = wait_for_queue(pg_dsn(url), accepted, timeout=1800) if accepted else 0.0
    checks = check_database(pg_dsn(url), accepted, after_id)
    errors = [e for lg in logs for e in lg.errors]
    mismatches = [m for lg in logs for m in lg.repeat_mismatches]
    uploads = len(accepted)
    return {
        "clients": clients,
        "seconds": sending,
        "rows_per_upload": rows,
        "web_workers": web_workers,
        "task_workers": task_workers,
        "requests": sum(lg.sent for lg in logs),
        "uploads_accepted": uploads,
        "repeats_sent": sum(lg.repeats for lg in logs),
        "repeat_mismatches": mismatches,
        "errors": errors[:20],
        "error_count": len(errors),
        "drain_seconds": drain,
        "accepted_per_s": uploads / sending if sending else 0,
        "processed_per_s": uploads / checks["processing_window"]
        if checks["processing_window"]
        else 0,
        "rows_per_s": checks["rows_stored"] / checks["processing_window"]
        if checks["processing_window"]
        else 0,
        "during": during_result,
        "ok": (retry or not errors)
        and not mismatches
        and checks["doubled"] == 0
        and checks["orphan_snapshots"] == 0
        and checks["uploads_without_snapshot"] == 0
        and checks["statuses"].get("done", 0) == uploads
        and checks["snapshots"] == uploads,
        **checks,
    }
