"""The data the pages part of the benchmark reads: big snapshots loaded through memdash's own
ingest (`populate`), more of them made from the generated ones as other devices' uploads
(`from_other_devices`), and what is in a database already."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import log, pg_dsn  # noqa: E402


def populate(url: str, var_dir: Path, files: list[Path]) -> float:
    from ingest import memdash_ingest

    started = time.perf_counter()
    for i, file in enumerate(files):
        log(f"loading snapshot {i + 1}/{len(files)} ({file.name})")
        memdash_ingest(url, var_dir, file)
    return time.perf_counter() - started


def from_other_devices(files: list[Path], count: int) -> list[Path]:
    """`count - len(files)` more documents: the files again, each from another device."""
    import gzip

    more = []
    for n in range(len(files), count):
        source = files[n % len(files)]
        path = source.with_name(source.name.replace(".json.gz", f"-device{n}.json.gz"))
        if not path.exists():
            raw = gzip.decompress(source.read_bytes()).replace(b'"BENCH-DEVICE-', b'"COPY%d-' % n)
            path.write_bytes(gzip.compress(raw, 1, mtime=0))
        more.append(path)
    return more


def snapshot_count(url: str) -> int:
    """Snapshots in a memdash database, 0 when it does not exist."""
    try:
        if url.startswith("sqlite"):
            import sqlite3

            path = Path(url.removeprefix("sqlite:///"))
            if not path.exists():
                return 0
            with sqlite3.connect(path) as conn:
                return conn.execute("SELECT count(*) FROM snapshots_snapshot").fetchone()[0]
        import psycopg

        with psycopg.connect(pg_dsn(url)) as conn:
            return conn.execute("SELECT count(*) FROM snapshots_snapshot").fetchone()[0]
    except Exception:
        return 0


def last_snapshot_id(url: str) -> int:
    if url.startswith("sqlite"):
        import sqlite3

        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            return conn.execute("SELECT max(id) FROM snapshots_snapshot").fetchone()[0]
    import psycopg

    with psycopg.connect(pg_dsn(url)) as conn:
        return conn.execute("SELECT max(id) FROM snapshots_snapshot").fetchone()[0]
