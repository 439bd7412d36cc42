"""The Citus section of docs/performance.md, from bench/citus.py's results."""

from __future__ import annotations

from typing import Any

from common import ms, table

TITLE = "## Citus: a coordinator and two workers beside one PostgreSQL"


def _ms(value: float | None) -> str:
    return ms(value) if value is not None else "n/a"


def lost_and_doubled(load: dict[str, Any]) -> str:
    return (
        f"{load['uploads_without_snapshot']} lost, {load['doubled']} doubled, "
        f"{load['orphan_snapshots']} snapshots without an upload"
    )


def statuses(load: dict[str, Any]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(load["statuses"].items())) or "none"


def load_table(runs: dict[str, dict[str, Any]]) -> list[str]:
    labels = [label for label, run in runs.items() if isinstance(run, dict)]  # not its time
    loads = [runs[label]["load"] for label in labels]
    rows = [
        ["uploads accepted (distinct bodies)", *(f"{x['uploads_accepted']}" for x in loads)],
        ["request errors", *(f"{x['error_count']}" for x in loads)],
        ["uploads by status", *(statuses(x) for x in loads)],
        ["lost / doubled", *(lost_and_doubled(x) for x in loads)],
        ["accepted", *(f"{x['accepted_per_s']:.1f} uploads/s" for x in loads)],
        [
            "processed (first received → last stored)",
            *(
                f"{x['processed_per_s']:.1f} uploads/s, {x['rows_per_s']:,.0f} rows/s"
                for x in loads
            ),
        ],
        [
            "queue drained after the clients stopped",
            *(f"{x['drain_seconds']:.0f} s" for x in loads),
        ],
        ["load average (1 min) after", *(f"{runs[label]['loadavg']:.1f}" for label in labels)],
    ]
    return table(["", *labels], rows)


def pages_table(runs: dict[str, dict[str, Any]]) -> list[str]:
    labels = [label for label, run in runs.items() if isinstance(run, dict)]  # not its time
    names: list[str] = []
    for label in labels:
        for name in runs[label]["pages"]["memdash"]:
            if name not in names:
                names.append(name)
    rows = []
    for name in names:
        cells = []
        for label in labels:
            timing = runs[label]["pages"]["memdash"].get(name, {})
            cells.append(
                f"{_ms(timing.get('p95'))} (p50 {_ms(timing.get('p50'))})"
                if "p95" in timing
                else timing.get("error", "n/a")
            )
        rows.append([f"`{name}`", *cells])
    return table(["page (p95 of 50, server time)", *labels], rows)


def rebalance_lines(r: dict[str, Any]) -> list[str]:
    load, during = r["load"], r["load"]["during"]
    moving, throughout = during["pages_while_moving"], during["pages_throughout"]
    rows = [
        ["shards per worker port, before", _shards(r["shards_before"])],
        ["`citus_add_node` (scripts/citus.sh add-worker)", f"{during['add_node_seconds']:.1f} s"],
        [
            f"`citus_rebalance_start` (`{r['transfer_mode']}`) until done",
            f"{during['rebalance_seconds']:.1f} s, {during['rebalance_state']}",
        ],
        ["shards per worker port, after", _shards(r["shards_after"])],
        [
            "pages read while the shards moved",
            f"{moving['requests']}, {moving['failed']} failed, p95 {_ms(moving['p95'])}, "
            f"max {_ms(moving['max'])}",
        ],
        [
            "pages read during the whole load",
            f"{throughout['requests']}, {throughout['failed']} failed, "
            f"p95 {_ms(throughout['p95'])}",
        ],
        ["uploads accepted", f"{load['uploads_accepted']} ({statuses(load)})"],
        ["request errors", f"{load['error_count']}"],
        ["lost / doubled", lost_and_doubled(load)],
        ["processed", f"{load['rows_per_s']:,.0f} rows/s"],
        ["load average (1 min) after", f"{r['loadavg']:.1f}"],
    ]
    return table(["", ""], rows)


def restart_lines(r: dict[str, Any]) -> list[str]:
    load, during = r["load"], r["load"]["during"]
    rows = [
        ["worker 1 down (stop -m fast, 5 s, start)", f"{during['down_seconds']:.1f} s"],
        ["uploads accepted", f"{load['uploads_accepted']} ({statuses(load)})"],
        [
            "requests refused while it was down (sent again by the clients)",
            f"{load['error_count']}",
        ],
        ["uploads processed more than once (attempts > 1)", _attempts(r["attempts"])],
        ["lost / doubled", lost_and_doubled(load)],
        ["queue drained after the clients stopped", f"{load['drain_seconds']:.0f} s"],
        ["pages before", _pages(during["pages_before"])],
        ["pages while it was down", _pages(during["pages_while_down"])],
        ["pages after (from 2 s after it was back)", _pages(during["pages_after"])],
        ["load average (1 min) after", f"{r['loadavg']:.1f}"],
    ]
    return table(["", ""], rows)


def _pages(s: dict[str, Any]) -> str:
    return f"{s['requests']}, {s['failed']} failed, p95 {_ms(s['p95'])}"


def _attempts(attempts: dict[str, int]) -> str:
    again = sum(n for k, n in attempts.items() if int(k) > 1)
    return (
        f"{again} (attempts: " + ", ".join(f"{k}: {n}" for k, n in sorted(attempts.items())) + ")"
    )


def _shards(by_port: dict[str, int]) -> str:
    return ", ".join(f"{port}: {n}" for port, n in sorted(by_port.items())) or "none"


def citus_section(r: dict[str, Any]) -> tuple[str, str]:
    machine = r.get("machine", {})
    out = [
        TITLE,
        "",
        "`python bench/citus.py` on the cluster `scripts/citus.sh start` runs (Citus 13.2.2, "
        "PostgreSQL 15, a coordinator and two workers as three PostgreSQL servers) and on the one "
        "PostgreSQL of the other sections, in the same run, with the same load: 10,000-row "
        "snapshots from client threads (each its own uploads, every tenth request a repeat) "
        "through gunicorn (3 workers) and 2 `db_worker`s (load.py). **All three nodes share "
        "this one machine's "
        f"{machine.get('cpu', '2 cores')}**, which the single PostgreSQL has to itself: these "
        "figures show what the cluster costs (each statement planned on the coordinator, run on "
        "a worker over a connection), not what it gains; the gain (each worker its own "
        "machine's CPU, memory and disk) cannot be measured here.",
        "",
    ]
    if "load" in r:
        out += ["### Uploads and pages side by side", ""]
        out += load_table(r["load"])
        out += [
            "Pages of the last snapshot stored, after the load (pages.py: Django's test client, "
            "the whole request, no network):",
            "",
        ]
        out += pages_table(r["load"])
    else:
        out += [
            "### Uploads and pages side by side",
            "",
            "Not measured yet: `python bench/citus.py --only load` (8 clients × 60 s on each, "
            "about 15 minutes on a machine to itself) did not get the machine before this "
            "section was written; the runs below are failure drills with 2 clients, whose "
            "timings are those of a machine shared with other work (the load average is beside "
            "them), not a benchmark.",
            "",
        ]
    if "rebalance" in r:
        out += [
            "### A third worker added while uploads run",
            "",
            f"{r['rebalance']['load']['clients']} clients for "
            f"{r['rebalance']['load']['seconds']:.0f} s, on the cluster's "
            "database (with what the runs before stored); 10 s in, `scripts/citus.sh add-worker` "
            "starts a third worker and registers it (`citus_add_node`), and "
            "`citus_rebalance_start()` moves shards onto it while the uploads go on; a reader "
            "asks the API for the app's builds, a build's statistics and a snapshot's "
            "statistics, call tree and generations every 0.25 s through gunicorn throughout.",
            "",
        ]
        out += rebalance_lines(r["rebalance"])
    if "restart" in r:
        out += [
            "### A worker restarted mid-load",
            "",
            f"{r['restart']['load']['clients']} clients for "
            f"{r['restart']['load']['seconds']:.0f} s on the same database; "
            "15 s in, worker 1 is stopped (`pg_ctl stop -m fast`: its open "
            "transactions are cut, as in a crash) and started 5 s later "
            "(`scripts/citus.sh restart-worker 1 5`). A client sends again a request the door "
            "refused, as a device does; an upload whose worker lost its node keeps its claim "
            f"until its lease runs out ({r['restart']['lease_seconds']} s here, "
            "`MEMDASH_UPLOAD_LEASE_SECONDS`) and is then queued again (`requeue_stale`).",
            "",
        ]
        out += restart_lines(r["restart"])
    return TITLE, "\n".join(out) + "\n"
