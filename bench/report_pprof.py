"""The pprof sections of docs/performance.md: the benchmark's snapshot as a profile, and the
suite of profile sizes and real profiles against `go tool pprof -top` (issue 19)."""

from __future__ import annotations

from typing import Any

from common import secs, table, x
from pprof_compare import MEMORY_TARGET, TIME_TARGET  # memdash ÷ pprof (issue 19)

MIB = 1024 * 1024


def pprof_section(r: dict[str, Any]) -> list[str]:
    pprof = r.get("pprof")
    if not pprof:
        return []
    out = ["## Comparison with `go tool pprof -top`", ""]
    if "skipped" in pprof:
        return out + [pprof["skipped"], ""]
    out.append(
        "The snapshot's allocation rows written as a pprof heap profile (`bench/pprof_compare.py`: "
        "alloc/inuse objects and space, one location per frame, a sample per row), then read by "
        "memdash's pprof import (through the upload service) and by `go tool pprof -top "
        "-sample_index=inuse_space`."
    )
    out.append("")
    md = pprof.get("memdash", {})
    go = pprof.get("go_pprof", {})
    rows = [
        [
            "profile",
            f"{pprof['profile_bytes'] / 1e6:.1f} MB gzip ({secs(pprof['write_seconds'])} to write)",
        ],
        ["in-use bytes in the document", f"{pprof['document_inuse_space']:,}"],
    ]
    if "error" in md:
        rows.append(["memdash import", "error: " + md["error"][:200]])
    else:
        same = md["persistent_bytes"] == pprof["document_inuse_space"]
        rows.append(["memdash import (file to committed rows)", secs(md["import_seconds"])])
        rows.append(
            [
                "memdash persistent bytes",
                f"{md['persistent_bytes']:,} ({'equal' if same else 'DIFFERENT'})",
            ]
        )
    if "skipped" in go:
        rows.append(["`go tool pprof -top`", f"not run: {go['skipped']}"])
    else:
        total = go.get("inuse_space_total")
        rows.append(["`go tool pprof -top`", secs(go["seconds"])])
        rows.append(["pprof's in-use total", f"{total:,.0f} (rounded by pprof)" if total else "—"])
        if "import_seconds" in md:
            rows.append(["memdash ÷ pprof", x(md["import_seconds"] / go["seconds"])])
    return out + table(["", ""], rows)


def _suite_figures(entry: dict[str, Any], vendor: str) -> dict[str, float] | None:
    """One profile's figures on one database: memdash's import and process, pprof's run."""
    md, go = entry.get(vendor, {}), entry.get("go", {})
    seconds = md.get("file_to_committed_seconds")
    if seconds is None or "seconds" not in go or not go.get("peak_rss_bytes"):
        return None
    peak, base = md["peak_rss_bytes"], md.get("rss_before_bytes", 0)
    return {
        "import_s": seconds,
        "process_s": md.get("process_seconds", float("nan")),
        "pprof_s": go["seconds"],
        "import_mib": (peak - base) / MIB,
        "peak_mib": peak / MIB,
        "pprof_mib": go["peak_rss_bytes"] / MIB,
    }


def pprof_target_rows(r: dict[str, Any]) -> list[list[str]]:
    suite = r.get("pprof_suite") or {}
    rows = []
    for entry in suite.get("results", []):
        if not entry["profile"].startswith("generated"):
            continue
        for vendor in suite.get("vendors", []):
            f = _suite_figures(entry, vendor)
            if f is None:
                continue
            time_x, mem_x = f["import_s"] / f["pprof_s"], f["import_mib"] / f["pprof_mib"]
            floor = entry.get("floor", {}).get("total_seconds")
            met = time_x <= TIME_TARGET and mem_x <= MEMORY_TARGET
            verdict = "met" if met else "**missed**"
            if floor and floor / f["pprof_s"] > TIME_TARGET:
                verdict += f" (the bare store alone is {x(floor / f['pprof_s'])} of pprof's time)"
            rows.append(
                [
                    f"pprof import, {entry['profile'].removeprefix('generated, ')} "
                    f"({vendor}), against `go tool pprof -top` on the same file",
                    f"≤ {TIME_TARGET:.1f}× its time, ≤ 1/3 of its peak memory",
                    f"{secs(f['import_s'])} vs {secs(f['pprof_s'])}; "
                    f"{f['import_mib']:.0f} MiB vs {f['pprof_mib']:.0f} MiB",
                    f"{x(time_x)} time, {x(mem_x)} memory",
                    verdict,
                ]
            )
    return rows


def pprof_suite_section(r: dict[str, Any]) -> list[str]:
    suite = r.get("pprof_suite")
    if not suite:
        return []
    out = ["### pprof profiles of every size, and real ones", ""]
    out.append(
        "`bench/pprof_compare.py suite`: generated heap profiles and the real profiles of "
        "tests/data/pprof, each read by `go tool pprof -top -sample_index=inuse_space` and "
        "imported by memdash, every side in a child process of its own (wall time, peak RSS). "
        "memdash's import is timed from reading the file to the committed rows, in a worker "
        "that has started (its memory: peak RSS less the worker's RSS before the file); its "
        "whole process, interpreter and Django start included, is given beside it. "
        f"{suite.get('go', '')}"
    )
    out.append("")
    rows = []
    for entry in suite.get("results", []):
        for vendor in suite.get("vendors", []):
            f = _suite_figures(entry, vendor)
            if f is None:
                error = entry.get(vendor, {}).get("error") or entry.get("go", {}).get("error")
                rows.append([entry["profile"], vendor, f"not measured: {str(error)[:120]}"]
                            + [""] * 5)  # fmt: skip
                continue
            rows.append(
                [
                    entry["profile"],
                    vendor,
                    f"{secs(f['import_s'])} ({secs(f['process_s'])})",
                    secs(f["pprof_s"]),
                    f"{x(f['import_s'] / f['pprof_s'])} ({x(f['process_s'] / f['pprof_s'])})",
                    f"{f['import_mib']:.0f} MiB ({f['peak_mib']:.0f} MiB)",
                    f"{f['pprof_mib']:.0f} MiB",
                    f"{x(f['import_mib'] / f['pprof_mib'])} ({x(f['peak_mib'] / f['pprof_mib'])})",
                ]
            )
    header = [
        "profile", "database", "memdash import (whole process)", "`go tool pprof -top`",
        "time ratio (process)", "memdash memory (process peak)", "pprof peak", "memory ratio",
    ]  # fmt: skip
    return out + table(header, rows) + _phase_table(suite)


def _floor_cells(floor: dict[str, Any], go: float) -> list[str]:
    total = floor.get("total_seconds")
    return [secs(total), x(total / go)] if total else ["—", "—"]


def _phase_table(suite: dict[str, Any]) -> list[str]:
    """Where memdash's import of each profile spends its time: pprof's own part (decoding the
    profile and converting it to the snapshot) against the store every format shares."""
    rows = []
    for entry in suite.get("results", []):
        for vendor in suite.get("vendors", []):
            phases = entry.get(vendor, {}).get("phase_seconds")
            go = entry.get("go", {}).get("seconds")
            if not phases or not go or "error" in entry.get(vendor, {}):
                continue
            rows.append(
                [
                    entry["profile"],
                    vendor,
                    *(secs(phases[p]) for p in ("read", "pprof", "store", "after")),
                    x(phases["pprof"] / go),
                    f"{entry[vendor].get('rows', 0):,} / {entry[vendor].get('stack_nodes', 0):,}",
                    *_floor_cells(entry.get("floor", {}), go),
                ]
            )
    if not rows:
        return []
    header = [
        "profile", "database", "read (gunzip)", "pprof's part (decode, convert)", "store",
        "commit and after", "pprof's part ÷ `go tool pprof`", "rows / stack nodes stored",
        "bare store floor", "floor ÷ `go tool pprof`",
    ]  # fmt: skip
    intro = (
        "Where the import's time goes: memdash's pprof code (decoding the profile.proto, "
        "converting it to the snapshot) is a small part; the rest is the store that every "
        "format shares (frames, stack nodes, rows, the call tree and the totals, written to the "
        "database in one transaction), which `go tool pprof -top` has no counterpart for. The "
        "bare store floor (`bench/store_floor.py`, on the same database) is the least of it: "
        "psycopg alone binary-COPYs made-up rows of the same counts into empty tables with only "
        "the index a page reads them by (the stack nodes by id, the call tree by snapshot and "
        "parent, the sample rows none), in one transaction; no file, decoding, frames, totals "
        "or lookups. Where it alone takes more than a fifth of pprof's time, no store of the "
        "stacks in PostgreSQL meets the target."
    )
    return ["", intro, "", *table(header, rows)]
