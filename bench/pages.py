"""Page timings: the JSON API of the pages a user opens most, on a database holding many big
snapshots, measured as server time (Django's test Client in a child process: the whole request
through middleware, authentication, view and JSON rendering, without a network), p95 of 50
requests after a few warm-up ones. Beside each, a bare SQL reference reading the same
pre-aggregated rows with the database driver alone (and encoding them with orjson).

    python bench/pages.py worker --snapshot ID      # child: JSON of timings
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    BENCH,
    PYTHON,
    emit,
    median,
    memdash_env,
    percentile,
    pg_dsn,
    run_json,
)

REQUESTS = 50
WARMUP = 3


def sample(fn: Callable[[], Any], requests: int = REQUESTS, warmup: int = WARMUP) -> dict:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return {
        "p50": median(times),
        "p95": percentile(times, 0.95),
        "max": max(times),
        "n": len(times),
    }


# ---------------------------------------------------------------------------------------------
# Bare SQL references


def reference_connection(database_url: str):
    """(connection, placeholder) with the driver alone."""
    if database_url.startswith("sqlite"):
        import sqlite3

        return sqlite3.connect(database_url.removeprefix("sqlite:///")), "?"
    import psycopg

    return psycopg.connect(pg_dsn(database_url)), "%s"


def reference_queries(
    database_url: str, snapshot_id: int, requests: int = REQUESTS, depth: int = 6
) -> dict:
    import orjson

    conn, p = reference_connection(database_url)

    def fetch(sql: str, params: list) -> list:
        cur = conn.cursor()
        cur.execute(sql, params)
        rows = cur.fetchall()
        cur.close()
        return rows

    keys = (
        "category", "kind", "persistent", "persistent_bytes", "transient", "transient_bytes",
        "responsible_caller",
    )  # fmt: skip
    # Every read names the snapshot's app, on both sides of a join: on Citus that is what
    # keeps it on the app's worker (else both tables are repartitioned for each read).
    app_id = fetch(f"SELECT app_id FROM snapshots_snapshot WHERE id = {p}", [snapshot_id])[0][0]
    table_sql = (
        "SELECT c.name, c.kind, t.persistent, t.persistent_bytes, t.transient, "
        "t.transient_bytes, t.responsible_caller FROM snapshots_categorytotal t "
        f"JOIN snapshots_category c ON c.id = t.category_id WHERE t.snapshot_id = {p} "
        f"AND t.app_id = {p} AND c.app_id = {p} ORDER BY t.total_bytes DESC, c.name"
    )
    table_params = [snapshot_id, app_id, app_id]

    def statistics_page() -> bytes:
        # What the statistics API answers by default: the first 500 categories, largest
        # first, and the summary stored with the snapshot.
        rows = fetch(f"{table_sql} LIMIT 500", table_params)
        summary = fetch(
            f"SELECT table_summary FROM snapshots_snapshot WHERE id = {p}", [snapshot_id]
        )
        return orjson.dumps(
            {"summary": summary[0][0], "rows": [dict(zip(keys, r, strict=True)) for r in rows]}
        )

    def statistics_all() -> bytes:
        # Every category of the snapshot (`limit=10000`).
        rows = fetch(table_sql, table_params)
        return orjson.dumps([dict(zip(keys, r, strict=True)) for r in rows])

    def children(parent: int | None) -> Callable[[], bytes]:
        where = "n.parent_id IS NULL" if parent is None else f"n.parent_id = {p}"
        params = [snapshot_id, app_id, app_id] + ([] if parent is None else [parent])

        def run() -> bytes:
            rows = fetch(
                'SELECT n.node_id, f.symbol, f.image, f."offset", n.persistent, '
                "n.persistent_bytes, n.transient, n.transient_bytes FROM snapshots_calltreenode n "
                "JOIN snapshots_frame f ON f.id = n.frame_id "
                f"WHERE n.snapshot_id = {p} AND n.app_id = {p} AND f.app_id = {p} AND {where} "
                "ORDER BY n.persistent_bytes + n.transient_bytes DESC LIMIT 100",
                params,
            )
            return orjson.dumps([list(r) for r in rows])

        return run

    def generations() -> bytes:
        # What the generations API answers: the allocations before the first mark (summed
        # from the per-generation totals), then each mark with its stored growth.
        baseline = fetch(
            "SELECT CAST(sum(persistent_bytes) AS BIGINT), CAST(sum(persistent) AS BIGINT) "
            "FROM snapshots_generationcategorytotal "
            f"WHERE snapshot_id = {p} AND app_id = {p} AND generation IS NULL",
            [snapshot_id, app_id],
        )
        marks = fetch(
            'SELECT "index", name, at_ms, growth_bytes, persistent FROM snapshots_generation '
            f'WHERE snapshot_id = {p} AND app_id = {p} ORDER BY "index"',
            [snapshot_id, app_id],
        )
        return orjson.dumps({"baseline": list(baseline[0]), "marks": [list(m) for m in marks]})

    node_id = None  # `depth` levels down the heaviest path, as on memdash's side
    for _ in range(depth):
        where = "parent_id IS NULL" if node_id is None else f"parent_id = {p}"
        found = fetch(
            f"SELECT node_id FROM snapshots_calltreenode WHERE snapshot_id = {p} "
            f"AND app_id = {p} AND {where} "
            "ORDER BY persistent_bytes + transient_bytes DESC LIMIT 1",
            [snapshot_id, app_id] + ([] if node_id is None else [node_id]),
        )
        if not found:
            break
        node_id = found[0][0]
    result = {
        "statistics": sample(statistics_page, requests),
        "statistics_all": sample(statistics_all, requests),
        "calltree_roots": sample(children(None), requests),
        "generations": sample(generations, requests),
    }
    if node_id is not None:
        result["calltree_children"] = sample(children(node_id), requests)
    conn.close()
    return result


# ---------------------------------------------------------------------------------------------
# memdash through Django's test Client


def heaviest_node(client, snapshot_id: int, depth: int) -> str | None:
    """A node `depth` levels down the heaviest path (the one a user expands first)."""
    url = f"/api/v1/snapshots/{snapshot_id}/calltree"
    node = None
    for _ in range(depth):
        response = client.get(url, {"node": node} if node else {})
        if response.status_code != 200:
            return node
        children = response.json().get("children") or []
        if not children:
            return node
        node = children[0]["id"]
    return node


def memdash_pages(snapshot_id: int, requests: int = REQUESTS) -> dict[str, Any]:
    from common import setup_django

    setup_django()
    from django.contrib.auth import get_user_model
    from django.test import Client

    import memdash.wsgi  # noqa: F401  the web process's own start (the loaded code frozen)
    from memdash.allocations.models import Snapshot

    user_model = get_user_model()
    user = user_model.objects.filter(
        username="bench"
    ).first() or user_model.objects.create_superuser("bench", "bench@example.com", "bench-pass-123")
    client = Client()
    client.force_login(user)
    snapshot = Snapshot.objects.get(pk=snapshot_id)

    def getter(url: str, params: dict | None = None) -> Callable[[], None]:
        def run() -> None:
            response = client.get(url, params or {})
            if response.status_code != 200:
                raise SystemExit(f"GET {url} {params} answered {response.status_code}")
            # A streaming or lazy body is part of the server's work too.
            _ = response.content

        return run

    node = heaviest_node(client, snapshot_id, 6)
    endpoints: dict[str, Callable[[], None]] = {
        "statistics": getter(f"/api/v1/snapshots/{snapshot_id}/statistics"),
        "statistics_all": getter(f"/api/v1/snapshots/{snapshot_id}/statistics", {"limit": "10000"}),
        "calltree_roots": getter(f"/api/v1/snapshots/{snapshot_id}/calltree"),
        "generations": getter(f"/api/v1/snapshots/{snapshot_id}/generations"),
        "snapshot_page": getter(f"/snapshots/{snapshot_id}/"),
    }
    if node is not None:
        endpoints["calltree_children"] = getter(
            f"/api/v1/snapshots/{snapshot_id}/calltree", {"node": node}
        )
    timings = {}
    for name, fn in endpoints.items():
        try:
            timings[name] = sample(fn, requests)
        except SystemExit as exc:
            timings[name] = {"error": str(exc)}
    return {
        "snapshot_id": snapshot_id,
        "rows": snapshot.row_count,
        "categories": snapshot.category_count,
        "memdash": timings,
        "requests": requests,
        "reference": reference_queries(os.environ["DATABASE_URL"], snapshot_id, requests),
    }


def measure_pages(
    url: str, var_dir: Path, snapshot_id: int, requests: int = REQUESTS
) -> dict[str, Any]:
    env = memdash_env(url, var_dir)
    cmd = [PYTHON, str(BENCH / "pages.py"), "worker", "--snapshot", str(snapshot_id)]
    return run_json([*cmd, "--requests", str(requests)], env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("worker", help="time the pages of one snapshot (DATABASE_URL)")
    w.add_argument("--snapshot", type=int, required=True)
    w.add_argument("--requests", type=int, default=REQUESTS)
    args = parser.parse_args(argv)
    emit(memdash_pages(args.snapshot, args.requests))
    return 0


if __name__ == "__main__":
    sys.exit(main())
