"""memdash on a Citus cluster (scripts/citus.sh: a coordinator and two workers on this machine)
beside one PostgreSQL, measured the same way in the same run:

- load: 8 clients × 60 s of 10,000-row uploads through gunicorn and two db_workers (load.py),
  on one PostgreSQL and on the cluster: rows/s, nothing lost or doubled; then the pages' p95 of
  the last snapshot on each (pages.py, 50 requests a page);
- rebalance: the same load on the cluster; 10 s in, a third worker is added
  (`scripts/citus.sh add-worker`: `citus_add_node`) and the rebalancer moves shards onto it
  (`citus_rebalance_start`, waited for), while a client reads pages through gunicorn every
  quarter second: none may fail, nothing lost or doubled;
- restart: the same load; 15 s in, worker 1 is stopped (`pg_ctl -m fast`: its transactions
  cut) and started again 5 s later. Uploads it was storing fail; the clients send again what
  the door refused, as devices do, and the workers' leases (MEMDASH_UPLOAD_LEASE_SECONDS, 20 s
  here) queue again what a lost node held: every upload ends done, once.

On one 2-core machine the three nodes share the cores the single PostgreSQL has alone: these
figures show the cluster's overhead, not its gain (that needs a machine per node).

    python bench/citus.py                          # everything; writes docs/performance.md
    python bench/citus.py --only rebalance --seconds 30
    python bench/citus.py --report-only            # the section again from var/bench/citus.json

Needs the cluster running: `scripts/citus.sh start` (MEMDASH_CITUS_PORT and MEMDASH_CITUS_VAR as
for it; databases md_bench_citus* are made and dropped on it) and PostgreSQL at BENCH_PG_SERVER.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    DEFAULT_PG_SERVER,
    PYTHON,
    ROOT,
    collect_static,
    log,
    machine_description,
    memdash_env,
    migrate,
    percentile,
    pg_dsn,
    recreate_pg_database,
    replace_section,
    run_checked,
)
from load import measure_load  # noqa: E402
from pages import measure_pages  # noqa: E402
from report_citus import citus_section  # noqa: E402
from servers import Running  # noqa: E402

CITUS = str(ROOT / "scripts" / "citus.sh")
PARTS = ("load", "rebalance", "restart")
LEASE_SECONDS = 20
DB_NAME = ["md_bench_citus"]  # --db-name
REUSE: list[bool] = []  # --reuse: the cluster's database as an earlier run left it
PREPARED = 1500  # bodies gzipped before the clock: more than 8 clients sent here in 60 s


def citus(*args: str) -> str:
    return run_checked([CITUS, *args], dict(os.environ))


def cluster_database(name: str, var_dir: Path) -> str:
    """A new database on every node of the cluster, migrated; its URL."""
    citus("dropdb", name)
    url = citus("createdb", name).strip().splitlines()[-1]
    migrate(memdash_env(url, var_dir))
    return url


def plain_database(name: str, var_dir: Path) -> str:
    url = recreate_pg_database(os.environ.get("BENCH_PG_SERVER", DEFAULT_PG_SERVER), name)
    migrate(memdash_env(url, var_dir))
    return url


def query(url: str, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(pg_dsn(url), autocommit=True) as conn:
        cursor = conn.execute(sql, params or [])
        return cursor.fetchall() if cursor.description else []


def shards_per_worker(url: str) -> dict[str, int]:
    rows = query(url, "SELECT nodeport, count(*) FROM citus_shards GROUP BY nodeport ORDER BY 1")
    return {str(port): count for port, count in rows}


def last_snapshot(url: str) -> int:
    return query(url, "SELECT max(id) FROM snapshots_snapshot")[0][0]


def api_token(url: str, var_dir: Path) -> str:
    """A superuser's personal API token, for the page reader."""
    env = memdash_env(url, var_dir)
    code = (
        "from common import setup_django; setup_django()\n"
        "from django.contrib.auth import get_user_model\n"
        "from memdash.core.writes.apps import create_api_token\n"
        "users = get_user_model()\n"
        "user = users.objects.filter(username='bench').first() or "
        "users.objects.create_superuser('bench', 'bench@example.com', 'bench-pass-123')\n"
        "print(create_api_token(user, 'citus bench')[1])\n"
    )
    return run_checked([PYTHON, "-c", code], env).strip().splitlines()[-1]


class PageReader:
    """Reads pages through gunicorn every `every` seconds until stopped: each answer's status
    and time, with the time it was asked."""

    def __init__(self, base_url: str, token: str, paths: list[str], every: float = 0.25):
        self.base_url, self.token, self.paths, self.every = base_url, token, paths, every
        self.samples: list[tuple[float, str, int, float]] = []  # (at, path, status, seconds)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run)

    def run(self) -> None:
        host = self.base_url.removeprefix("http://")
        headers = {"Authorization": f"Token {self.token}"}
        i = 0
        while not self.stopped.is_set():
            path = self.paths[i % len(self.paths)]
            i += 1
            started = time.monotonic()
            conn = http.client.HTTPConnection(host, timeout=60)
            try:
                conn.request("GET", path, headers=headers)
                response = conn.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException):
                status = 0
            finally:
                conn.close()
            self.samples.append((started, path, status, time.monotonic() - started))
            self.stopped.wait(self.every)

    def __enter__(self) -> PageReader:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.thread.join()

    def summary(self, since: float = 0.0, until: float = float("inf")) -> dict[str, Any]:
        chosen = [s for s in self.samples if since <= s[0] <= until]
        times = [s[3] for s in chosen]
        failed = [f"{path}: {status}" for _, path, status, _ in chosen if status != 200]
        return {
            "requests": len(chosen),
            "failed": len(failed),
            "failures": failed[:10],
            "p95": percentile(times, 0.95) if times else None,
            "max": max(times) if times else None,
        }


def page_paths(url: str, timeout: float = 60) -> list[str]:
    """What the reader asks for, once the load has stored a snapshot: the app's builds, the
    build's statistics, and that snapshot's statistics, call tree and generations."""
    waited = time.monotonic() + timeout
    while not (found := query(url, "SELECT min(id) FROM snapshots_snapshot")[0][0]):
        if time.monotonic() > waited:
            raise RuntimeError(f"no snapshot stored within {timeout} s of load")
        time.sleep(0.5)
    app, build = query(
        url, "SELECT app_id, build_id FROM snapshots_snapshot WHERE id = %s", [found]
    )[0]
    return [
        f"/api/v1/apps/{app}/builds",
        f"/api/v1/apps/{app}/builds/{build}/statistics",
        f"/api/v1/snapshots/{found}/statistics",
        f"/api/v1/snapshots/{found}/calltree",
        f"/api/v1/snapshots/{found}/generations",
    ]


# ---------------------------------------------------------------------------------------------
# The parts


_cluster_url: list[str] = []


def the_cluster_database(var_dir: Path) -> str:
    """The cluster's database of this run (made and migrated once; the parts after the first
    find the earlier parts' data in it, as a deployment would)."""
    if not _cluster_url and REUSE:
        _cluster_url.append(citus("createdb", DB_NAME[0]).strip().splitlines()[-1])
    if not _cluster_url:
        _cluster_url.append(cluster_database(DB_NAME[0], var_dir))
    return _cluster_url[0]


def part_load(args: argparse.Namespace, var_dir: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, make in (
        ("PostgreSQL", lambda: plain_database("md_bench_citus_single", var_dir)),
        ("Citus", lambda: the_cluster_database(var_dir)),
    ):
        url = make()
        log(f"citus/load: {label}: {args.clients} clients × {args.seconds:.0f} s")
        load = measure_load(
            url, var_dir, clients=args.clients, seconds=args.seconds, prepared=PREPARED
        )
        query(url, "VACUUM ANALYZE")
        log(f"citus/load: {label}: pages of the last snapshot")
        pages = measure_pages(url, var_dir, last_snapshot(url), requests=args.requests)
        out[label] = {
            "load": load,
            "pages": pages,
            "loadavg": os.getloadavg()[0],
            "shards": shards_per_worker(url) if label == "Citus" else {},
        }
    return out


def part_rebalance(args: argparse.Namespace, var_dir: Path) -> dict[str, Any]:
    url = the_cluster_database(var_dir)
    token = api_token(url, var_dir)
    before = shards_per_worker(url)

    def during(running: Running, deadline: float) -> dict[str, Any]:
        started = time.monotonic()
        with PageReader(running.base_url, token, page_paths(url)) as reader:
            time.sleep(max(0.0, started + 10 - time.monotonic()))
            t_add = time.monotonic()
            citus("add-worker")
            added = time.monotonic() - t_add
            t_move = time.monotonic()
            query(
                url,
                "SELECT citus_rebalance_start(shard_transfer_mode := %s)",
                [args.transfer_mode],
            )
            query(url, "SELECT citus_rebalance_wait()")
            moved = time.monotonic() - t_move
            state = query(url, "SELECT state, details FROM citus_rebalance_status()")
            done_at = time.monotonic()
            time.sleep(max(0.0, deadline - time.monotonic()))
        return {
            "add_node_seconds": added,
            "rebalance_seconds": moved,
            "rebalance_state": str(state[0][0]) if state else "",
            "rebalance_ended_before_clients": done_at < deadline,
            "pages_while_moving": reader.summary(t_move, done_at),
            "pages_throughout": reader.summary(),
        }

    load = measure_load(
        url, var_dir, clients=args.clients, seconds=args.event_seconds, during=during,
        prepared=PREPARED,
    )  # fmt: skip
    return {"load": load, "shards_before": before, "shards_after": shards_per_worker(url),
            "transfer_mode": args.transfer_mode, "loadavg": os.getloadavg()[0]}  # fmt: skip


def part_restart(args: argparse.Namespace, var_dir: Path) -> dict[str, Any]:
    url = the_cluster_database(var_dir)
    token = api_token(url, var_dir)

    def during(running: Running, deadline: float) -> dict[str, Any]:
        started = time.monotonic()
        with PageReader(running.base_url, token, page_paths(url)) as reader:
            time.sleep(max(0.0, started + 15 - time.monotonic()))
            t_stop = time.monotonic()
            citus("restart-worker", "1", "5")
            back = time.monotonic()
            time.sleep(max(0.0, deadline - time.monotonic()))
        return {
            "down_seconds": back - t_stop,
            "pages_before": reader.summary(until=t_stop),
            "pages_while_down": reader.summary(t_stop, back),
            "pages_after": reader.summary(back + 2),
        }

    env = {"MEMDASH_UPLOAD_LEASE_SECONDS": str(LEASE_SECONDS)}
    load = measure_load(
        url, var_dir, clients=args.clients, seconds=args.event_seconds, during=during,
        retry=True, env=env, prepared=PREPARED,
    )  # fmt: skip
    attempts = dict(query(url, "SELECT attempts, count(*) FROM ingest_upload GROUP BY 1"))
    return {"load": load, "attempts": {str(k): v for k, v in attempts.items()},
            "lease_seconds": LEASE_SECONDS, "loadavg": os.getloadavg()[0]}  # fmt: skip


PART_FUNCS = {"load": part_load, "rebalance": part_rebalance, "restart": part_restart}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(PARTS), help=f"some of {', '.join(PARTS)}")
    parser.add_argument("--seconds", type=float, default=60, help="of the side-by-side load")
    parser.add_argument(
        "--event-seconds",
        type=float,
        default=40,
        help="of the loads with a worker added, restarted",
    )
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=50, help="per page, for the p95")
    parser.add_argument("--transfer-mode", default="block_writes",
                        choices=("auto", "force_logical", "block_writes"))  # fmt: skip
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--db-name", default=DB_NAME[0], help="the cluster's database")
    parser.add_argument("--reuse", action="store_true", help="that database as it is, migrated")
    parser.add_argument("--results", type=Path, default=ROOT / "var" / "bench" / "citus.json")
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "performance.md")
    args = parser.parse_args(argv)
    DB_NAME[0] = args.db_name
    REUSE[:] = [True] if args.reuse else []
    results: dict[str, Any] = json.loads(args.results.read_text()) if args.results.exists() else {}
    if not args.report_only:
        var_dir = ROOT / "var" / "bench" / "citus"
        var_dir.mkdir(parents=True, exist_ok=True)
        collect_static(var_dir)  # DEBUG is off: the pages need the collected files
        results["machine"] = machine_description()
        citus("remove-worker")  # a run before left a third worker: start with two
        results["cluster"] = citus("status")
        for part in [p.strip() for p in args.only.split(",") if p.strip()]:
            if part not in PART_FUNCS:
                parser.error(f"--only: {part!r} is none of {', '.join(PARTS)}")
            log(f"citus: {part}")
            started = time.monotonic()
            results[part] = PART_FUNCS[part](args, var_dir)
            results[part]["wall_seconds"] = time.monotonic() - started
            args.results.parent.mkdir(parents=True, exist_ok=True)
            args.results.write_text(json.dumps(results, indent=1, default=str))
    title, text = citus_section(results)
    replace_section(
        args.doc, title, text, after="## Concurrent uploads through gunicorn and task workers"
    )
    log(f"citus: wrote {args.doc}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except subprocess.CalledProcessError as exc:
        sys.exit(f"{exc}")
