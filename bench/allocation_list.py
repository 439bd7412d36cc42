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
    .venv/bin/python bench/allocation_list.py ingest     # what making the list costs ingest
    .venv/bin/python bench/allocation_list.py section --write  # the section from saved runs
    .venv/bin/python bench/allocation_list.py worker --snapshot ID   # child: JSON of timings

Each run is saved (var/bench/list-pages-<database>.json, list-ingest-<database>.json) and the
section is written from every saved run, both databases side by side.

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
SORTS = ("size", "count", "category", "caller", "library", "generation", "thread", "live")
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

    from memdash.allocations.models import AllocationListOrder, AllocationRow, Snapshot
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
    for sort in SORTS:
        for descending in (True, False):
            query = replace(by_size, sort=sort, descending=descending)
            way = "desc" if descending else "asc"
            cases[f"first page, by {sort} {way}"] = timed(page(query))
            first = allocation_page(app_id, [snapshot], query)
            cases[f"next page, by {sort} {way}"] = timed(page(replace(query, after=first.next)))
    cases["page at the 500,000th row, by size (live)"] = timed(
        page(deep(replace(by_size, lifespan="persistent")))
    )
    cases["one category (its rows only)"] = timed(page(replace(by_size, category=category)))
    cases["search `cell` (categories, callers, libraries)"] = timed(
        page(replace(by_size, search="cell"))
    )
    cases["Created & Destroyed, generation 2"] = timed(
        page(replace(by_size, lifespan="transient", generation=2))
    )
    build = [snapshot]
    cases["the build's list (one snapshot), first page by size"] = timed(
        lambda: allocation_page(app_id, build, by_size)
    )
    # the list as it is read before it is made (or when it is out of date): from the rows
    made = AllocationListOrder.objects.get(snapshot_id=snapshot_id)
    AllocationListOrder.objects.filter(snapshot_id=snapshot_id).update(symbols_version=-1)
    cases["from the rows (list not made): first page by size"] = timed(page(by_size), 3)
    AllocationListOrder.objects.filter(snapshot_id=snapshot_id).update(
        symbols_version=made.symbols_version
    )
    user = User.objects.filter(username="bench-list").first() or User.objects.create_user(
        "bench-list", password="x" * 20
    )  # a run on a database `prepare` made is not its first
    Membership.objects.get_or_create(user=user, app_id=app_id, defaults={"role": "viewer"})
    client = Client()
    client.force_login(user)
    url = f"/api/v1/snapshots/{snapshot_id}/allocations"
    cases["API: first page (server time)"] = timed(lambda: client.get(url).content)
    cases["floor: 100 largest rows, driver alone"] = timed(
        floor(os.environ["DATABASE_URL"], snapshot_id)
    )
    return {"rows": rows, "cases": cases, "entries": made.entries, "sizes": table_sizes()}


def table_sizes() -> dict[str, int]:
    """Bytes of the rows and of the list made of them (PostgreSQL: tables with their indexes
    and TOAST; one snapshot in the database)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return {}
    sizes = {}
    with connection.cursor() as cursor:
        for table in ("snapshots_allocationrow", "allocations_listentry",
                      "allocations_listorderchunk"):  # fmt: skip
            cursor.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "WHERE c.relkind IN ('r', 'p') AND c.relname LIKE %s",
                [table + "%"],
            )
            sizes[table] = int(cursor.fetchone()[0])
    return sizes


def ingest_worker(document: Path) -> dict[str, Any]:
    """One `process_upload` of the document into an empty database, then the list made ahead
    of its snapshot (within it when the tasks run at once, the embedded default; after it, as
    a worker would, when they are queued)."""
    import django

    django.setup()
    from django.conf import settings

    from memdash.allocations.models import AllocationListOrder, Snapshot
    from memdash.allocations.writes.allocation_lists import make_allocation_list
    from memdash.core.writes import apps as core_services
    from memdash.ingest.tasks import process_upload
    from memdash.ingest.writes.uploads import receive_upload

    app = core_services.get_or_create_app("com.example.chat", "ios")
    with open(document, "rb") as stream:
        upload, _ = receive_upload(
            app, iter(lambda: stream.read(1 << 20), b""), filename=document.name, run=False
        )
    started = time.perf_counter()
    upload = process_upload(upload)
    ingest = time.perf_counter() - started
    snapshot = Snapshot.objects.get(pk=upload.result_id)
    order = AllocationListOrder.objects.filter(snapshot_id=snapshot.pk).first()
    inline = order is not None
    if order is None:
        order = make_allocation_list(snapshot)
    assert order is not None
    return {"tasks": settings.TASKS_BACKEND, "process_upload": ingest, "inline": inline,
            "make": order.seconds, "entries": order.entries}  # fmt: skip


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


VENDORS = {"postgresql": "PostgreSQL", "sqlite": "SQLite"}


def _saved(var_dir: Path, kind: str) -> dict[str, dict[str, Any]]:
    found = {}
    for vendor in VENDORS:
        path = var_dir / f"list-{kind}-{vendor}.json"
        if path.exists():
            found[vendor] = json.loads(path.read_text())
    return found


def _ms(figures: dict[str, float] | None) -> str:
    return "–" if figures is None else f"{figures['p50']:.1f} | {figures['p95']:.1f}"


def section(var_dir: Path) -> str:
    """The section from every run saved: pages by vendor, then the cost of making the list."""
    pages, ingests = _saved(var_dir, "pages"), _saved(var_dir, "ingest")
    runs = "; ".join(
        f"{VENDORS[v]} {r['when']} at load average {r['load']}" for v, r in pages.items()
    )
    rows = next(iter(pages.values()))["rows"] if pages else 0
    lines = [
        SECTION,
        "",
        f"`bench/allocation_list.py` ({runs}; 2-core machine): the Allocations List of the "
        f"generator's snapshot ({rows:,} rows, 5,000 categories, 200,000 stack nodes), a page "
        "of 100 entries with their categories, threads and responsible callers "
        "(`allocations.reads.allocation_list.allocation_page`), median and p95 in ms of "
        f"{RUNS} reads after {WARMUP} warm-up ones (3 for the reads from the rows). The list is "
        "made ahead once the snapshot is stored (`writes.allocation_lists`): every entry's "
        "place in every order, and each order as chunks of 1,024 entries, so a page of any "
        "sort, either way, is a chunk and 100 entries read by their key, whatever its depth. "
        "The floor is the driver alone reading the snapshot's 100 largest rows.",
        "",
        "| page | " + " | ".join(f"{VENDORS[v]} p50 | p95" for v in pages) + " |",
        "|---|" + "---:|---:|" * len(pages),
    ]
    names = list(dict.fromkeys(n for r in pages.values() for n in r["cases"]))
    for name in names:
        cells = " | ".join(_ms(r["cases"].get(name)) for r in pages.values())
        lines.append(f"| {name} | {cells} |")
    lines += ["", "What making the list costs, measured by `bench/allocation_list.py ingest` "
              "(`process_upload` of the same document into an empty database, in a process of "
              "its own; the list made after it as a worker makes it, or within it when tasks "
              "run at once, the embedded default):", "",
              "| database | load average | process_upload, list queued | process_upload, list "
              "made within | making the list | entries | rows' bytes | list's bytes |",
              "|---|---|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for vendor, r in ingests.items():
        sizes = r.get("sizes") or {}
        listed = sizes.get("allocations_listentry", 0) + sizes.get("allocations_listorderchunk", 0)
        lines.append(
            f"| {VENDORS[vendor]} | {r['load']} | {r['queued']['process_upload']:.1f} s | "
            f"{r['inline']['process_upload']:.1f} s | {r['queued']['make']:.1f} s | "
            f"{r['queued']['entries']:,} | "
            + (f"{sizes['snapshots_allocationrow'] / 2**20:.0f} MiB | {listed / 2**20:.0f} MiB |"
               if sizes else "– | – |")
        )  # fmt: skip
    lines += [
        "",
        "Weighed: a b-tree per order (nine, each over (snapshot, key, row, live)) made every page "
        "an index range too, but maintaining them cost a 132,587-entry list 13.7 s to write "
        "(0.2 s without them, at load 6), about the whole upload's time again at a million rows, "
        "and ~80 MB of index per 130,000 entries; the chunks cost one sort per order in numpy "
        "and ~10 bytes an entry an order. The list's tables are still about three times the "
        "rows' (above): the price of a page of any order in milliseconds. Until a list is made "
        "(a snapshot stored before, or its task not run yet) the page reads the rows: the row "
        "above 'from the rows'. The figures were taken after the tables' statistics existed "
        "(`ANALYZE`, as autovacuum keeps them; the list's own tables are analysed when made): "
        "before it, the stack nodes' recursive query of the responsible callers took seconds. "
        "Making the list within the upload (the embedded default's tasks run at once) costs "
        "a million-row upload several times its own time, so there it is made with the upload "
        "only up to 200,000 rows (`MEMDASH_LIST_INLINE_ROWS`; a larger one by the web process "
        "once it has answered the upload, or after the import command by `manage.py "
        "make_allocation_lists`); a task queue (`MEMDASH_TASKS=database`) makes every list after "
        "the upload, which then costs what it did before (the 'list queued' column).",
        "",
        "",  # a blank line before the next section
    ]
    return "\n".join(lines)


def ingest(vendor: str, var_dir: Path) -> dict[str, Any]:
    """`process_upload` of the generator's document twice, each into an empty database: the
    list queued (then made, timed alone), and made within it."""
    document = var_dir / "list-1000000.json.gz"
    result: dict[str, Any] = {}
    for mode, tasks in (("queued", "database"), ("inline", "immediate")):
        url = fresh_memdash_database(vendor, f"memdash_i34list_ingest_{mode}", var_dir,
                                     DEFAULT_PG_SERVER)  # fmt: skip
        env = memdash_env(url, var_dir, MEMDASH_TASKS=tasks)
        result[mode] = run_json([PYTHON, __file__, "ingest-worker", "--document", str(document)],
                                env)  # fmt: skip
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    child = sub.add_parser("worker")
    child.add_argument("--snapshot", type=int, required=True)
    child = sub.add_parser("ingest-worker")
    child.add_argument("--document", type=Path, required=True)
    sub.add_parser("prepare")
    sub.add_parser("ingest")
    sub.add_parser("section")
    parser.add_argument("--database", choices=list(VENDORS), default="postgresql")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--reuse", action="store_true", help="the database `prepare` made")
    args = parser.parse_args(argv)
    if args.command == "worker":
        emit(worker(args.snapshot))
        return 0
    if args.command == "ingest-worker":
        emit(ingest_worker(args.document))
        return 0
    var_dir = ROOT / "var" / "bench"
    var_dir.mkdir(parents=True, exist_ok=True)
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    if args.command == "ingest":
        result = {**ingest(args.database, var_dir), "load": load, "when": when}
        saved = var_dir / f"list-pages-{args.database}.json"
        if saved.exists():  # the sizes measured with the pages, of the same document
            result["sizes"] = json.loads(saved.read_text()).get("sizes")
        (var_dir / f"list-ingest-{args.database}.json").write_text(json.dumps(result))
    elif args.command != "section":
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
        result.update(load=load, when=when)
        (var_dir / f"list-pages-{args.database}.json").write_text(json.dumps(result))
    text = section(var_dir)
    print(text)
    if args.write:
        replace_section(PERFORMANCE, SECTION, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
