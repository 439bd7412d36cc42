"""Time ranges of the benchmark's events snapshot (1,000,000 events of `bench/generate.py`,
seed 8): what a range dragged on the timeline costs, which reads the snapshot's rows by time
bucket (`TimedAllocationRow`) rather than its pre-aggregated totals.

On a fresh memdash database (SQLite, and PostgreSQL when reachable) the document is stored
through memdash's store (its timeline and rows by bucket with it), then, for a range of a tenth
of the run, half of it and all of it, each timed over `--runs` (the median):

- the statistics table of the range (`RangeStatisticsTable`: the database sums the range's rows
  per category; the table's first page and its summary rows);
- the bare floor: the one SQL statement that sums them (`SELECT category_id, SUM(…) … GROUP BY
  category_id`), fetched and nothing else;
- the call tree of the range, built from its rows (the cache emptied before each run);
- for comparison, the whole snapshot's table read from its stored totals (no range: what the
  page reads without one), and the timeline's series as the page reads it.

Writes its section ("## Timeline ranges", only that one) into docs/performance.md with --write.

    flock /tmp/memdash-heavy.lock .venv/bin/python bench/timeline.py [--events N] [--write]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import (  # noqa: E402
    DEFAULT_PG_SERVER,
    PYTHON,
    emit,
    fresh_memdash_database,
    log,
    memdash_env,
    pg_available,
    replace_section,
    run_json,
    setup_django,
)
from generate import Sizes, snapshot_document, write_document  # noqa: E402

PERFORMANCE = ROOT / "docs" / "performance.md"
SECTION = "## Timeline ranges"
DATABASE = "memdash_i34time_bench"  # a PostgreSQL database of its own
RANGES = (("a tenth of the run", 45, 54), ("half of it", 25, 74), ("all of it", 0, 99))


def timed(work: Callable[[], Any], runs: int) -> float:
    """The median wall time of `work` in ms."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def worker(path: Path, runs: int) -> dict[str, Any]:
    """In a child process on DATABASE_URL: store the document, then time the reads."""
    import orjson

    setup_django()
    from django.core.cache import cache
    from django.db import connection

    from memdash.allocations.models import (
        AllocationRow,
        Snapshot,
        TimedAllocationRow,
        TimedCallTreeNode,
    )
    from memdash.allocations.reads.calltree import trees
    from memdash.allocations.reads.snapshots import snapshot_statistics
    from memdash.allocations.reads.timeline import (
        RangeStatisticsTable,
        TimeRange,
        timeline_chart_data,
        timeline_of,
    )
    from memdash.allocations.writes.snapshots import store_snapshot_document
    from memdash.core.writes import apps as core_services
    from memdash.core.writes.uploads import UploadMeta

    doc = orjson.loads(gzip.decompress(path.read_bytes()))
    app = core_services.get_or_create_app(doc["app"]["id"], "ios", "Chat")
    started = time.perf_counter()
    result = store_snapshot_document(doc, UploadMeta(app=app, received_at=datetime.now(UTC)))
    store_s = time.perf_counter() - started
    del doc
    snapshot = Snapshot.objects.select_related("app").get(pk=result.object_id)
    timeline = timeline_of(snapshot)
    assert timeline is not None
    sql = (
        "SELECT category_id, SUM(persistent), SUM(persistent_bytes), SUM(transient), "
        f"SUM(transient_bytes) FROM {TimedAllocationRow._meta.db_table} "
        "WHERE snapshot_id = %s AND bucket BETWEEN %s AND %s GROUP BY category_id"
    )

    def floor(first: int, last: int) -> None:
        with connection.cursor() as cursor:
            cursor.execute(sql, [snapshot.pk, first, last])
            cursor.fetchall()

    def table(chosen: TimeRange) -> None:
        stats = RangeStatisticsTable(chosen)
        stats.summary  # noqa: B018 (read: what the page shows)
        stats[:200]

    def tree(chosen: TimeRange) -> None:
        """What the tree's page reads first: the roots and the heaviest path opened."""
        cache.clear()
        trees.forget_recent()
        made = trees.snapshot_call_tree(snapshot, trees.CallTreeQuery(time_range=chosen.span))
        made.children(None, 0, 100)
        made.heaviest_pages(100)

    ranges = []
    for label, first, last in RANGES:
        chosen = TimeRange(snapshot.pk, first, last, 0.0, 0.0)
        rows = chosen.rows().count()
        ranges.append(
            {
                "label": label,
                "buckets": last - first + 1,
                "rows": rows,
                "statistics_ms": timed(lambda c=chosen: table(c), runs),
                "floor_ms": timed(lambda f=first, t=last: floor(f, t), runs),
                "tree_ms": timed(lambda c=chosen: tree(c), max(1, runs // 2)),
            }
        )

    def stored() -> None:
        whole = snapshot_statistics(snapshot)
        whole.summary  # noqa: B018
        whole[:200]

    return {
        "vendor": connection.vendor,
        "events": snapshot.event_count,
        "store_s": store_s,
        "allocation_rows": AllocationRow.objects.filter(snapshot_id=snapshot.pk).count(),
        "timed_rows": TimedAllocationRow.objects.filter(snapshot_id=snapshot.pk).count(),
        "bucket_tree_rows": TimedCallTreeNode.objects.filter(snapshot_id=snapshot.pk).count(),
        "categories": snapshot.category_count,
        "ranges": ranges,
        "stored_statistics_ms": timed(stored, runs),
        "series_ms": timed(lambda: timeline_chart_data(snapshot), runs),
    }


def section(results: list[dict[str, Any]], when: str) -> str:
    first = results[0]
    loads = ", ".join(f"{r['vendor']} {r['load']:.1f} (at {r['when'][-9:]})" for r in results)
    lines = [
        SECTION,
        "",
        f"Measured by `bench/timeline.py` (run on its own, not by `bench/run.py`) on {when[:10]}, "
        f"load average (1 min) when each database's run started: {loads} (2 cores shared with "
        "other work: slower than on a quiet machine, the ratios within a run hold): the "
        f"benchmark's events document ({first['events']:,} events, `bench/generate.py`, seed 8) "
        "stored through memdash, then each read timed (median of its runs). A range reads the "
        "snapshot's rows by time bucket (`TimedAllocationRow`); the floor is the one SQL statement "
        "that sums a range's rows per category, fetched and nothing else. A range's call tree "
        "(its roots and heaviest path, as its page opens) sums the trees of its buckets "
        "(`TimedCallTreeNode`: "
        + ", ".join(f"{r['vendor']} {r.get('bucket_tree_rows', 0):,} rows" for r in results)
        + ") a level at a time.",
        "",
        "| database | stored in | rows | rows by bucket | range | its rows | statistics table | "
        "floor (SQL sum) | call tree |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        for i, span in enumerate(r["ranges"]):
            head = (
                [r["vendor"], f"{r['store_s']:.1f} s", f"{r['allocation_rows']:,}",
                 f"{r['timed_rows']:,}"]
                if i == 0
                else ["", "", "", ""]
            )  # fmt: skip
            lines.append(
                "| "
                + " | ".join(
                    [
                        *head,
                        f"{span['label']} ({span['buckets']} buckets)",
                        f"{span['rows']:,}",
                        f"{span['statistics_ms']:.0f} ms",
                        f"{span['floor_ms']:.0f} ms",
                        f"{span['tree_ms']:.0f} ms",
                    ]
                )
                + " |"
            )
    lines += [
        "",
        "Without a range the page reads the stored totals: "
        + "; ".join(
            f"{r['vendor']} {r['stored_statistics_ms']:.1f} ms for the table, "
            f"{r['series_ms']:.1f} ms for the timeline's series"
            for r in results
        )
        + ".",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    child = sub.add_parser("worker")
    child.add_argument("path", type=Path)
    child.add_argument("runs", type=int)
    parser.add_argument("--events", type=int, default=Sizes.events)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pg-server", default=DEFAULT_PG_SERVER)
    parser.add_argument("--databases", default="sqlite,postgresql", help="which, in order")
    parser.add_argument("--results", type=Path, help="keep each database's figures in this file")
    parser.add_argument("--write", action="store_true", help="write docs/performance.md")
    args = parser.parse_args(argv)
    if args.command == "worker":
        emit(worker(args.path, args.runs))
        return 0
    load = os.getloadavg()[0]
    when = datetime.now(UTC).strftime("%Y-%m-%d at %H:%M UTC")
    var_dir = ROOT / "var" / "bench-timeline"
    sizes = Sizes(events=args.events)
    path = var_dir / "data" / f"events-{args.events}-s{sizes.seed}.json.gz"
    if not path.exists():
        log(f"generating {path.name}")
        write_document(snapshot_document(sizes, "events"), path)
    wanted = [d for d in args.databases.split(",") if d]
    vendors = [v for v in wanted if v != "postgresql" or pg_available(args.pg_server)]
    # a run of one database keeps the other's last figures (--results): each can be measured
    # in its own short hold of the machine
    kept = json.loads(args.results.read_text()) if args.results and args.results.exists() else {}
    for vendor in vendors:
        log(f"{vendor}: a fresh database")
        url = fresh_memdash_database(vendor, DATABASE, var_dir, args.pg_server)
        env = memdash_env(url, var_dir)
        figures = run_json([PYTHON, __file__, "worker", str(path), str(args.runs)], env)
        kept[vendor] = {**figures, "load": load, "when": when}
        if args.results:
            args.results.write_text(json.dumps(kept, indent=1))
    results = [kept[v] for v in ("sqlite", "postgresql") if v in kept]
    text = section(results, when)
    print(text)
    if args.write:
        replace_section(PERFORMANCE, SECTION, text, after="## Pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
