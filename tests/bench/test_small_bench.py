"""The small benchmark runs end to end (so the full one never rots) and reports every part.

It runs `bench/run.py --small` on SQLite, and on the PostgreSQL server of DATABASE_URL too when
the run is on PostgreSQL (CI's suite on PostgreSQL measures both, once; its suite on SQLite leaves
this module out). Nothing here asserts a timing: only that every part ran and stored what it
was given.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

pytestmark = pytest.mark.slow  # runs bench/run.py --small in another process

ROOT = Path(__file__).resolve().parents[2]


LABELS = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}


def database_choice() -> tuple[list[str], dict[str, str]]:
    url = os.environ.get("DATABASE_URL", "")
    env = dict(os.environ)
    if url.startswith(("postgres://", "postgresql://")):
        parts = urlsplit(url)
        env["BENCH_PG_SERVER"] = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
        return ["sqlite", "postgresql"], env
    return ["sqlite"], env


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    var = tmp_path_factory.mktemp("bench-small")
    databases, env = database_choice()
    output = var / "performance.md"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "run.py"),
            "--small",
            "--databases",
            ",".join(databases),
            "--var",
            str(var),
            "--output",
            str(output),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = json.loads((var / "results-small.json").read_text())
    return databases, results, output.read_text()


def test_ingest_stores_every_row_beside_the_floor(small_run):
    databases, results, _ = small_run
    assert set(results["ingest"]) == {LABELS[vendor] for vendor in databases}
    for label in results["ingest"]:
        ingest = results["ingest"][label]
        for kind in ("cold", "warm"):
            assert ingest[kind]["trials"] == 1
            assert set(ingest[kind]["memdash_phases"]) == {"read", "parse", "validate", "store"}
            assert ingest[kind]["memdash_total"] > 0 and ingest[kind]["floor_total"] > 0
        # The cold and the warm snapshot of the last trial, 10,000 generated rows each.
        assert results["storage"][label]["snapshots"] == 2
        assert results["storage"][label]["allocation_rows"] == 20_000
        assert results["events"][label]["events"] == 10_000
        assert results["events"][label]["counts"]["events"] == 10_000


def test_pages_growth_and_other_domains_report(small_run):
    databases, results, _ = small_run
    for vendor in databases:
        pages = results["pages"][LABELS[vendor]]
        # PostgreSQL's database holds one more: a generated snapshot again, from another device
        # (the full run: 20 generated, 100 in all on PostgreSQL)
        assert pages["snapshots"] == (3 if vendor == "postgresql" else 2)
        for name in ("statistics", "calltree_roots", "generations", "snapshot_page"):
            assert pages["result"]["memdash"][name]["n"] == 5, name
        assert [p["rows"] for p in results["growth"][LABELS[vendor]]] == [1_000, 10_000]
    for kind in ("compare", "foom", "cycles"):
        other = results["others"][kind]
        assert "skipped" in other or other["timings"], kind


def test_upload_streaming_and_load(small_run):
    databases, results, _ = small_run
    stream = results["upload_streaming"]
    assert [s["status"] for s in stream] == [202, 202]
    assert stream[1]["body_bytes"] >= 5_000_000
    load = results["load"]
    if "postgresql" in databases:
        assert [run["rows_per_upload"] for run in load] == [1_000]  # one run per size
        for run in load:
            assert run["ok"], run
            assert run["snapshots"] == run["uploads_accepted"] > 0
    else:
        assert "skipped" in load


def test_the_document_has_every_section(small_run):
    _, _, text = small_run
    for heading in (
        "# Performance",
        "## Machine",
        "## Targets",
        "## Ingest, by phase",
        "## Bytes stored",
        "## Upload API",
        "## Pages",
        "## Build compare, FOOM trend, retain-cycle clusters",
        "## Concurrent uploads",
        "## Growth from 1,000 to 10,000 rows",
        "## Comparison with `go tool pprof -top`",
        "## Symbolication",
    ):
        assert heading in text, heading


def test_the_pprof_profile_reads_back_with_the_same_totals(small_run):
    _, results, _ = small_run
    pprof = results["pprof"]
    # memdash's pprof import of the exported profile finds the document's in-use bytes exactly.
    assert pprof["memdash"]["persistent_bytes"] == pprof["document_inuse_space"]


def test_symbolication_names_every_frame_and_stores_it(small_run):
    _, results, _ = small_run
    symbols = results["symbols"]
    # 40,000 address frames named in memory, and by the job in the stored snapshot: one
    # call-tree node each, under main → run → loop (3 more), nothing left unnamed.
    assert symbols["naming"]["named"] == 40_000
    job = symbols["job"]
    assert (job["state"], job["frames_named"], job["snapshots"]) == ("done", 40_000, 1)
    assert (job["call_tree_nodes"], job["unsymbolicated_bytes"]) == (40_003, 0)
    assert symbols["upload"]["status"] == 202  # stored, and unpacked by its task (the job above)
    assert symbols["upload"]["body_bytes"] >= 16 * 1024 * 1024
