"""The Allocations List over the generator's 1M-row snapshot: how long a page takes, first and
deep, by each sort and filter, on PostgreSQL (or SQLite), beside a bare floor in the same run.

The snapshot is bench/generate.py's (1,000,000 rows over 5,000 categories and 200,000 stack
nodes), stored by `manage.py import_snapshot` into a fresh database. Measured in one Django
process (DEBUG off), each case a median and p95 of repeated reads after a warm-up:

- `allocation_page` (allocations.reads.allocation_list): the page's query, its categories,
  threads and the responsible callers of its 100 stacks (one recursive query), as the page and
  the API read it, for the first page and for a page reached deep into the list (its cursor
  taken from the 500,000th entry);
- the API through Django's test client (middleware, auth, view, JSON): server time;
- the floor: psycopg alone running the least a page needs, the top 100 rows of the snapshot by
  persistent bytes (`ORDER BY … LIMIT 100`, no union into entries, no names, no stacks).

    .venv/bin/python bench/allocation_list.py [--database postgresql|sqlite] [--write]
    .venv/bin/python bench/allocation_list.py prepare    # only the database (out of the lock)
    .venv/bin/python bench/allocation_list.py worker --snapshot ID   # child: JSON of timings

Run the measuring part alone on a quiet machine: `flock /tmp/memdash-heavy.lock … --reuse`
takes the database `prepare` made.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    BENCH,
    DEFAULT_PG_SERVER,
    PYTHON,
    ROOT,
    emit,
    fresh_memdash_database,
    log,
    median,
    memdash_env,
    percentile,
    pg_dsn,
    replace_section,
    run_checked,
    run_json,
)

PERFORMANCE = ROOT / "docs" / "performance.md"
SECTION = "## Allocations List"
RUNS = int(os.environ.get("LIST_RUNS", "15"))
WARMUP = int(os.environ.get("LIST_WARMUP", "2"))


def timed(work: Callable[[], Any], runs: int = RUNS) -> dict[str, float]:
    for _ in range(WARMUP):
        work()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return {"p50": median(times) * 1000, "p95": percentile(times, 0.95) * 1000}


def floor(database_url: str, snapshot_id: int) -> Callable[[], Any]:
    """The least a first page needs: the snapshot's 100 largest rows, by the driver alone."""
    if database_url.startswith("sqlite"):
        import sqlite3

        conn: Any = sqlite3.connect(database_url.removeprefix("sqlite:///"))
        mark = "?"
    else:
        import psycopg

        conn = psycopg.connect(pg_dsn(database_url))
        mark = "%s"
    sql = (
        "SELECT id, category_id, stack_id, persistent, persistent_bytes FROM "
        f"snapshots_allocationrow WHERE snapshot_id = {mark} "
        "ORDER BY persistent_bytes DESC, id DESC LIMIT 100"
    )

    def run() -> Any:
        cursor = conn.cursor()
        cursor.execute(sql, [snapshot_id])
        rows = cursor.fetchall()
        cursor.close()
        return rows

    return run


def worker(snapshot_id: int) -> dict[str, Any]:
    """Timings of the list's pages over one stored snapshot (this process is a Django one)."""
    import django

    django.setup()
    from dataclasses import replace

    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client

    from memdash.allocations.models import AllocationRow, Snapshot
    from memdash.allocations.reads.allocation_list import ListQuery, allocation_page
    from memdash.core.models import Membership

    snapshot = Snapshot.objects.get(pk=snapshot_id)
    app_id = snapshot.app_id
    rows = AllocationRow.objects.filter(snapshot_id=snapshot_id).count()
    biggest = (
        AllocationRow.objects.filter(snapshot_id=snapshot_id)
        .values_list("category_id", flat=True)
        .order_by("-persistent_bytes")
        .first()
    )
    from memdash.allocations.models import Category

    category = Category.objects.get(pk=biggest).name

    def page(query: ListQuery) -> Callable[[], Any]:
        return lambda: allocation_page(app_id, [snapshot], query)

    # a cursor halfway down the list by size: walk there by the database, not by 5,000 pages
    def deep(query: ListQuery) -> ListQuery:
        half = allocation_page(app_id, [snapshot], replace(query, limit=1000))
        for _ in range(4):  # a few pages on, then jump from the 500,000th by its own cursor
            half = allocation_page(app_id, [snapshot], replace(query, after=half.next, limit=1000))
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT persistent_bytes, id FROM snapshots_allocationrow WHERE snapshot_id = %s "
                "ORDER BY persistent_bytes DESC, id DESC LIMIT 1 OFFSET %s",
                [snapshot_id, rows // 2],
            )
            size, row = cursor.fetchone()
        from memdash.allocations.logic.listing import Cursor

        return replace(query, after=Cursor(size, row, 1))

    by_size = ListQuery()
    cases: dict[str, dict[str, float]] = {}
    cases["first page, by size"] = timed(page(by_size))
    cases["page at the 500,000th row, by size (live)"] = timed(
        page(deep(replace(by_size, lifespan="persistent")))
    )
    first = allocation_page(app_id, [snapshot], by_size)
    cases["next page (cursor of the first)"] = timed(page(replace(by_size, after=first.next)))
    cases["first page, by count ascending"] = timed(
        page(replace(by_size, sort="count", descending=False))
    )  # noqa: E501
    cases["first page, by category name"] = timed(page(replace(by_size, sort="category")))
    cases["first page, by generation"] = timed(page(replace(by_size, sort="generation")))
    cases["first page, by responsible caller"] = timed(page(replace(by_size, sort="caller")), 5)
    cases["one category (its rows only)"] = timed(page(replace(by_size, category=category)))
    cases["search `cell` (categories, callers, libraries)"] = timed(
        page(replace(by_size, search="cell"))
    )
    cases["Created & Destroyed, generation 2"] = timed(
        page(replace(by_size, lifespan="transient", generation=2))
    )
    user = User.objects.create_user("bench-list", password="x" * 20)
    Membership.objects.create(user=user, app_id=app_id, role="viewer")
    client = Client()
    client.force_login(user)
    url = f"/api/v1/snapshots/{snapshot_id}/allocations"
    cases["API: first page (server time)"] = timed(lambda: client.get(url).content)
    cases["floor: 100 largest rows, driver alone"] = timed(
        floor(os.environ["DATABASE_URL"], snapshot_id)
    )
    return {"rows": rows, "cases": cases}


def prepare(vendor: str, var_dir: Path, rows: int) -> tuple[str, int]:
    """A fresh database holding the generator's snapshot; its URL and the snapshot's id."""
    document = var_dir / f"list-{rows}.json.gz"
    if not document.exists():
        log(f"generating {rows:,} rows")
        run_checked(
            [PYTHON, str(BENCH / "generate.py"), "--rows", str(rows), "--nodes", "200000",
             "--categories", "5000", "-o", str(document)],
        )  # fmt: skip
    url = fresh_memdash_database(vendor, "memdash_i34list_bench_list", var_dir, DEFAULT_PG_SERVER)
    env = memdash_env(url, var_dir)
    log("importing")
    run_checked(
        [PYTHON, "-c", "import django; django.setup(); from memdash.core.models import App; "
         "App.objects.get_or_create(bundle_id='com.example.chat', platform='ios', "
         "defaults={'name': 'Chat'})"],
        env,
    )  # fmt: skip
    run_checked(
        [PYTHON, str(ROOT / "manage.py"), "import_snapshot", str(document), "--app",
         "com.example.chat", "--platform", "ios"],
        env,
    )  # fmt: skip
    out = run_checked(
        [PYTHON, "-c", "import django; django.setup(); from memdash.allocations.models import "
         "Snapshot; print(Snapshot.objects.latest('pk').pk)"],
        env,
    )  # fmt: skip
    return url, int(out.strip().splitlines()[-1])


def section(result: dict[str, Any], vendor: str, load: str, when: str) -> str:
    lines = [
        SECTION,
        "",
        f"`bench/allocation_list.py` on {vendor} ({when}, load average {load} on this 2-core "
        f"machine): the Allocations List of the generator's snapshot ({result['rows']:,} rows, "
        "5,000 categories, 200,000 stack nodes), a page of 100 entries with their categories, "
        "threads and responsible callers (`allocations.reads.allocation_list.allocation_page`), "
        f"median and p95 of {RUNS} reads after {WARMUP} warm-up ones. Pages are read by keyset "
        "(the cursor of the previous page), so a page deep in the list costs what the first "
        "does. The floor is psycopg alone reading the snapshot's 100 largest rows "
        "(`ORDER BY persistent_bytes DESC LIMIT 100`), the least work a first page needs.",
        "",
        "| page | p50 | p95 |",
        "|---|---:|---:|",
    ]
    for name, figures in result["cases"].items():
        lines.append(f"| {name} | {figures['p50']:.1f} ms | {figures['p95']:.1f} ms |")
    lines += [
        "",
        "The allocation rows carry no b-tree on PostgreSQL (a BRIN on (snapshot, category) only: "
        "a b-tree cost a million-row COPY most of its time, migration 0010), so every order "
        "other than one category's rows is a top-N over the snapshot's rows, read in the order "
        "they were stored; the figure above is that scan, with no OFFSET at any depth.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    child = sub.add_parser("worker")
    child.add_argument("--snapshot", type=int, required=True)
    sub.add_parser("prepare")
    parser.add_argument("--database", choices=["postgresql", "sqlite"], default="postgresql")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--reuse", action="store_true", help="the database `prepare` made")
    args = parser.parse_args(argv)
    if args.command == "worker":
        emit(worker(args.snapshot))
        return 0
    var_dir = ROOT / "var" / "bench"
    var_dir.mkdir(parents=True, exist_ok=True)
    saved = var_dir / f"list-{args.database}.json"
    if args.reuse:
        url, snapshot_id = json.loads(saved.read_text())
    else:
        url, snapshot_id = prepare(args.database, var_dir, args.rows)
        saved.write_text(json.dumps([url, snapshot_id]))
    if args.command == "prepare":
        return 0
    env = memdash_env(url, var_dir)
    result = run_json([PYTHON, __file__, "worker", "--snapshot", str(snapshot_id)], env)
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    when = datetime.now(UTC).strftime("%Y-%m-%d")
    text = section(result, "PostgreSQL" if args.database == "postgresql" else "SQLite", load, when)
    print(text)
    if args.write:
        replace_section(PERFORMANCE, SECTION, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
