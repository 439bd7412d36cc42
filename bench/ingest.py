"""Time memdash's own ingest against the bare floor (floor.py), in the same run.

What is timed on memdash's side is the task's work: `memdash.ingest.tasks.process_upload`,
from the stored upload file to committed rows, split by the phases it reports (read, parse,
validate, store). Receiving the upload (streaming the body to storage) happens before, untimed,
as it does in the web request. Each measurement runs in its own child process, so its peak RSS
is that ingest's alone, measured as the floor's is (VmHWM).

The floor gunzips the same file, parses it with orjson and binary-COPYs its allocation rows
alone into a table without indexes (issue 19): what no ingest of the file can beat by much.
Trials alternate floor and memdash so both see the same machine noise; each trial starts
from empty tables ("cold": every frame and stack node is new), then stores a second snapshot of
the same app ("warm": same frames and stacks, other rows), which is the steady state of a
production server.

    python bench/ingest.py worker --file F.json.gz        # child: one memdash ingest, JSON out
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    BENCH,
    PYTHON,
    Database,
    clone_database,
    current_rss_bytes,
    emit,
    log,
    median,
    memdash_env,
    peak_rss_bytes,
    pg_dsn,
    run_json,
)

PHASES = ("read", "parse", "validate", "store")


# ---------------------------------------------------------------------------------------------
# Child process: one memdash ingest


def phase_durations(marks: list[tuple[str, float]], end: float) -> dict[str, float]:
    """Seconds per phase from (phase, time) progress marks: a phase lasts from its first mark
    to the first mark of the next phase; the last one until `end`."""
    firsts: list[tuple[str, float]] = []
    for phase, at in marks:
        if not firsts or firsts[-1][0] != phase:
            firsts.append((phase, at))
    durations: dict[str, float] = {}
    for i, (phase, at) in enumerate(firsts):
        until = firsts[i + 1][1] if i + 1 < len(firsts) else end
        durations[phase] = durations.get(phase, 0.0) + until - at
    return durations


def worker(file: Path, bundle_id: str, platform: str) -> dict[str, Any]:
    from common import setup_django, warm_worker

    setup_django()
    from memdash.core.writes import apps as core_services
    from memdash.ingest.models import Upload
    from memdash.ingest.tasks import process_upload
    from memdash.ingest.writes.uploads import receive_upload

    app = core_services.get_or_create_app(bundle_id, platform)
    warm_worker()
    with open(file, "rb") as stream:
        upload, _ = receive_upload(
            app, iter(lambda: stream.read(1024 * 1024), b""), filename=file.name, run=False
        )
    baseline = current_rss_bytes()
    marks: list[tuple[str, float]] = []

    def progress(phase: str, fraction: float) -> None:
        marks.append((phase, time.perf_counter()))

    started = time.perf_counter()
    marks.append(("read", started))
    upload = process_upload(upload, progress)
    ended = time.perf_counter()
    if upload.status != Upload.DONE:
        raise SystemExit(
            f"ingest of {file} ended {upload.status}: {upload.error_path}: {upload.error}"
        )
    return {
        "side": "memdash",
        "file": str(file),
        "phases": phase_durations(marks, ended),
        "total": ended - started,
        "peak_rss": peak_rss_bytes(),
        "baseline_rss": baseline,
        "counts": upload.counts,
        "snapshot_id": upload.result_id,
    }


# ---------------------------------------------------------------------------------------------
# Harness side (no Django here)


@dataclass
class Trial:
    floor: dict[str, Any]
    memdash: dict[str, Any]


@dataclass
class IngestResult:
    database: str
    file: str
    rows: int
    cold: list[Trial] = field(default_factory=list)
    warm: list[Trial] = field(default_factory=list)

    def summary(self, kind: str = "cold") -> dict[str, Any]:
        trials = self.cold if kind == "cold" else self.warm
        floor_total = median([t.floor["total"] for t in trials])
        md_total = median([t.memdash["total"] for t in trials])
        return {
            "floor_total": floor_total,
            "memdash_total": md_total,
            "ratio": md_total / floor_total if floor_total else float("nan"),
            "floor_peak": median([t.floor["peak_rss"] for t in trials]),
            "memdash_peak": median([t.memdash["peak_rss"] for t in trials]),
            "floor_phases": {
                p: median([t.floor["phases"].get(p, 0.0) for t in trials])
                for p in ("read", "parse", "store")
            },
            "memdash_phases": {
                p: median([t.memdash["phases"].get(p, 0.0) for t in trials]) for p in PHASES
            },
            "trials": len(trials),
        }


def memdash_ingest(url: str, var_dir: Path, file: Path) -> dict[str, Any]:
    # The tasks backend of a deployment with workers: what a stored snapshot queues after its
    # commit (its build's summary for build compare, deferred 30 s and made once per burst of
    # uploads) is queued, as in production, not run inside the timed ingest as the embedded
    # default would.
    env = memdash_env(url, var_dir, MEMDASH_TASKS="database")
    return run_json([PYTHON, str(BENCH / "ingest.py"), "worker", "--file", str(file)], env)


def floor_ingest(db: Database, file: Path) -> dict[str, Any]:
    where = "--dsn" if db.vendor == "postgresql" else "--db"
    return run_json([PYTHON, str(BENCH / "floor.py"), str(file), where, db.floor])


INGEST_DB = "md_bench_ingest"


def empty_memdash(template_url: str, var_dir: Path, pg_server: str, name: str = INGEST_DB) -> str:
    """memdash's database with no snapshot in it: a fresh clone of the migrated template."""
    return clone_database(template_url, name, var_dir, pg_server)


def settle(db: Database) -> None:
    """Start each timed ingest from the same state: PostgreSQL writes out the dirty pages the
    previous ingest left (a checkpoint), and the OS its own, so that neither side pays, in its
    own time, for the writes of the side that ran before it."""
    if db.vendor == "postgresql":
        import psycopg

        with psycopg.connect(db.floor, autocommit=True) as conn:
            conn.execute("CHECKPOINT")
    os.sync()


def measure_ingest(
    db: Database,
    template_url: str,
    var_dir: Path,
    pg_server: str,
    cold_file: Path,
    warm_file: Path | None,
    trials: int,
    rows: int,
    db_name: str = INGEST_DB,
) -> IngestResult:
    result = IngestResult(database=db.label, file=cold_file.name, rows=rows)
    for trial in range(trials):
        # Alternate who goes first, so neither side always meets a cold page cache.
        order = ("floor", "memdash") if trial % 2 == 0 else ("memdash", "floor")
        cold: dict[str, dict] = {}
        warm: dict[str, dict] = {}
        for side in order:
            log(f"{db.label} ingest trial {trial + 1}/{trials}: {side}")
            if side == "floor":
                settle(db)
                cold[side] = floor_ingest(db, cold_file)
                if warm_file is not None:
                    settle(db)
                    warm[side] = floor_ingest(db, warm_file)
            else:
                url = empty_memdash(template_url, var_dir, pg_server, db_name)
                settle(db)
                cold[side] = memdash_ingest(url, var_dir, cold_file)
                if warm_file is not None:
                    settle(db)
                    warm[side] = memdash_ingest(url, var_dir, warm_file)
        result.cold.append(Trial(cold["floor"], cold["memdash"]))
        if warm:
            result.warm.append(Trial(warm["floor"], warm["memdash"]))
    return result


def measure_memdash_only(
    db: Database,
    template_url: str,
    var_dir: Path,
    pg_server: str,
    file: Path,
    trials: int,
    db_name: str = INGEST_DB,
) -> list[dict[str, Any]]:
    runs = []
    for trial in range(trials):
        log(f"{db.label} ingest of {file.name}, trial {trial + 1}/{trials}")
        url = empty_memdash(template_url, var_dir, pg_server, db_name)
        runs.append(memdash_ingest(url, var_dir, file))
    return runs


def stored_bytes(db: Database, url: str) -> dict[str, Any]:
    """Bytes on disk of the snapshot tables (with their indexes), per allocation row and per
    snapshot, in memdash's database as it is now."""
    tables = [
        "snapshots_allocationrow",
        "snapshots_calltreenode",
        "snapshots_categorytotal",
        "snapshots_generationcategorytotal",
        "snapshots_stacknode",
        "snapshots_frame",
        "snapshots_category",
        "snapshots_snapshot",
        "snapshots_generation",
        "snapshots_buildcategorytotal",
    ]
    sizes: dict[str, int] = {}
    if db.vendor == "postgresql":
        import psycopg

        with psycopg.connect(pg_dsn(url)) as conn:
            for table in tables:
                # a partitioned table holds nothing itself: its partitions count
                sizes[table] = int(
                    conn.execute(
                        "SELECT pg_total_relation_size(%s::regclass) + coalesce((SELECT "
                        "sum(pg_total_relation_size(inhrelid)) FROM pg_inherits "
                        "WHERE inhparent = %s::regclass), 0)",
                        [table, table],
                    ).fetchone()[0]
                )  # a sum: numeric
            rows = conn.execute("SELECT count(*) FROM snapshots_allocationrow").fetchone()[0]
            snaps = conn.execute("SELECT count(*) FROM snapshots_snapshot").fetchone()[0]
    else:
        import sqlite3

        path = url.removeprefix("sqlite:///")
        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            try:
                found = dict(
                    conn.execute(
                        "SELECT coalesce(m.tbl_name, s.name), sum(s.pgsize) FROM dbstat s "
                        "LEFT JOIN sqlite_master m ON m.name = s.name GROUP BY 1"
                    ).fetchall()
                )
                sizes = {t: int(found.get(t, 0)) for t in tables}
            except sqlite3.OperationalError:  # built without dbstat: the whole file
                sizes = {"(file)": Path(path).stat().st_size}
            rows = conn.execute("SELECT count(*) FROM snapshots_allocationrow").fetchone()[0]
            snaps = conn.execute("SELECT count(*) FROM snapshots_snapshot").fetchone()[0]
    total = sum(sizes.values())
    return {
        "tables": sizes,
        "total": total,
        "allocation_rows": rows,
        "snapshots": snaps,
        "per_row": sizes.get("snapshots_allocationrow", total) / rows if rows else 0,
        "per_snapshot": total / snaps if snaps else 0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("worker", help="one memdash ingest in this process (DATABASE_URL)")
    w.add_argument("--file", type=Path, required=True)
    w.add_argument("--app", default="com.example.chat")
    w.add_argument("--platform", default="ios")
    args = parser.parse_args(argv)
    if args.command == "worker":
        emit(worker(args.file, args.app, args.platform))
    return 0


if __name__ == "__main__":
    sys.exit(main())
