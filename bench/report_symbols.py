"""The Symbolication section of docs/performance.md, from the `symbols` part's results
(bench/symbols.py): naming in memory against its target, the job with its database writes, and
the web worker's memory over a large dSYM upload."""

from __future__ import annotations

from typing import Any

NAMING_TARGET_S = 2.0
FLAT_MIB = 64  # a worker whose peak grows by less than this over the upload kept memory flat
MIB = 1024 * 1024


def _mib(n: float) -> str:
    return f"{n / MIB:.1f} MiB"


def _size(n: int) -> str:
    return f"{n / MIB / 1024:.1f} GiB" if n >= 1024 * MIB else f"{n / MIB:.0f} MiB"


def _verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


def symbols_section(r: dict[str, Any]) -> list[str]:
    s = r.get("symbols")
    if not s:
        return []
    load = r.get("load_averages", {}).get("symbols")
    out = [
        "## Symbolication",
        "",
        f"Measured by `bench/symbols.py` (the `symbols` part of `bench/run.py`) on "
        f"{s.get('measured', '—')}"
        + (f", load average (1 min) {load:.1f} when it started." if load is not None else "."),
        "",
        "| what | target | measured | verdict |",
        "|---|---|---|---|",
    ]
    naming = s.get("naming", {})
    if naming:
        out.append(
            f"| naming {naming['frames']:,} distinct frames of one image once its symcache exists "
            "(lookup, demangling, stack rebuild, row remap; in memory) "
            f"| ≤ {NAMING_TARGET_S:g} s | {naming['seconds']:.2f} s; the symcache of the "
            f"{naming['frames']:,}-function `.sym` built in {naming['symcache_seconds']:.2f} s "
            f"| {_verdict(naming['seconds'] <= NAMING_TARGET_S)} |"
        )
    job = s.get("job", {})
    if job:
        database = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}.get(job["database"], "")
        out.append(
            f"| the job naming them in a stored snapshot ({database}): reading it back, naming, "
            "keying by function, and writing again its frames, stack nodes, rows, call tree, "
            f"responsible callers and images | — | {job['seconds']:.2f} s for "
            f"{job['frames_named']:,} frames: read {job['read_seconds']:.2f} s, naming "
            f"{job['naming_seconds']:.2f} s, keying {job['keying_seconds']:.2f} s, database "
            f"writes {job['write_seconds']:.2f} s ({job['call_tree_nodes']:,} call-tree nodes) "
            f"| {job['state']} |"
        )
    upload = s.get("upload", {})
    if "growth" in upload:
        size = upload["body_bytes"]
        out.append(
            f"| uploading a {_size(size)} dSYM zip through the API to one gunicorn worker "
            f"| memory flat | {size:,} bytes in {upload['seconds']:.1f} s (HTTP "
            f"{upload['status']}); RSS {_mib(upload['rss_before'])} before, peak "
            f"{_mib(upload['peak_rss'])} during (+{_mib(upload['growth'])}) "
            f"| {_verdict(upload['status'] in (200, 201) and upload['growth'] < FLAT_MIB * MIB)} |"
        )
    elif upload:
        out.append(f"| uploading a dSYM zip | memory flat | not run: {upload.get('skipped')} | — |")
    return out + [""]
