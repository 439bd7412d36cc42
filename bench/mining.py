"""Call-tree data mining on the benchmark snapshot's tree: what applying a rule, a minimum or a
sandwich costs once the tree is in the cache.

The tree is bench/flame.py's: the stacks of bench/generate.py (the 1,000,000-row benchmark
snapshot's 200,000 stack nodes, its frames and images) with an allocation at each site, built
into the merged call tree the API keeps in the cache. On it, each step the API does for a query
with data mining (`allocations.logic.calltree.mining`), each timed alone:

- floor: one bare pass over the tree's nodes reading the columns a rule reads (parent, kind,
  frame, self bytes and count), nothing built: the least any transform of the whole tree costs;
- what a rule would cost without the cached tree: building the tree again from its stacks with
  the library charged on them (`calltree_transform`, what `charge=` does);
- a rule applied to the cached tree (`mine_tree`): the heaviest library charged, the heaviest
  symbol pruned, a system library removed; then its flame graph;
- minimums (`ConstrainedTree`): the flame graph with nodes under 0.1 % of the total merged;
- the sandwich of the heaviest function (both halves and their flame graphs);
- a flame graph focused on a node 8 levels down, with its path from the root.

Writes its section ("## Call-tree data mining", only that one) into docs/performance.md with
--write.

    .venv/bin/python bench/mining.py [--nodes 200000] [--runs 3] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import replace_section  # noqa: E402
from flame import synthetic_tree, timed  # noqa: E402

from memdash.allocations.logic.calltree.build import build_call_tree  # noqa: E402
from memdash.allocations.logic.calltree.flame import flame_graph  # noqa: E402
from memdash.allocations.logic.calltree.merged import MergedCallTree  # noqa: E402
from memdash.allocations.logic.calltree.mining import (  # noqa: E402
    CHARGE,
    LIBRARY,
    PRUNE,
    REMOVE,
    SYMBOL,
    ConstrainedTree,
    Rule,
    mine_tree,
    sandwich,
)
from memdash.allocations.logic.calltree.transform import focus_tree  # noqa: E402
from memdash.allocations.logic.calltree.tree import TreeOptions  # noqa: E402

PERFORMANCE = ROOT / "docs" / "performance.md"
SECTION = "## Call-tree data mining"


def floor(tree: MergedCallTree) -> int:
    """One pass over the nodes reading what a rule reads; nothing built."""
    seen = 0
    parent, kind, frame = tree.parent, tree.kind, tree.frame
    self_bytes, self_count = tree.self_bytes, tree.self_count
    for node in range(len(tree)):
        seen += parent[node] + kind[node] + frame[node] + self_bytes[node] + self_count[node]
    return seen


def heaviest(tree: MergedCallTree, key: str) -> str:
    """The symbol (label) or library (image) with the most self bytes."""
    weights: Counter[str] = Counter()
    for node in range(len(tree)):
        info = tree.frames.get(tree.frame[node])
        if info is not None:
            weights[info.label if key == SYMBOL else info.image] += tree.self_bytes[node]
    return weights.most_common(1)[0][0]


def measure(nodes: int, runs: int) -> dict[str, Any]:
    out: dict[str, Any] = {"load": os.getloadavg()[0]}
    rows, stacks, frames = synthetic_tree(nodes)
    tree = build_call_tree(rows, stacks, frames, TreeOptions())
    assert isinstance(tree, MergedCallTree)
    out["nodes"] = len(tree)
    library, symbol = heaviest(tree, LIBRARY), heaviest(tree, SYMBOL)
    system = next(f.image for f in frames.values() if f.is_system and f.image != library)
    out |= {"library": library, "symbol": symbol, "system": system}
    _, out["floor_ms"] = timed(lambda: floor(tree), runs)
    _, out["rebuild_ms"] = timed(
        lambda: build_call_tree(rows, stacks, frames, TreeOptions(charge=(library,))), runs
    )
    charged, out["charge_ms"] = timed(
        lambda: mine_tree(tree, [Rule(CHARGE, LIBRARY, library)]), runs
    )
    out["charged_nodes"] = len(charged)
    pruned, out["prune_ms"] = timed(lambda: mine_tree(tree, [Rule(PRUNE, SYMBOL, symbol)]), runs)
    out["pruned_share"] = 1 - pruned.total_bytes / tree.total_bytes
    _, out["remove_ms"] = timed(lambda: mine_tree(tree, [Rule(REMOVE, LIBRARY, system)]), runs)
    _, out["mined_flame_ms"] = timed(lambda: flame_graph(charged), runs)
    _, out["plain_flame_ms"] = timed(lambda: flame_graph(tree), runs)
    least = tree.total_bytes // 1000
    _, out["minimum_flame_ms"] = timed(lambda: flame_graph(ConstrainedTree(tree, least)), runs)
    made, out["sandwich_ms"] = timed(lambda: sandwich(tree, symbol), runs)
    assert made is not None
    out["sandwich_nodes"] = (len(made.callers), len(made.callees))
    _, out["sandwich_flames_ms"] = timed(
        lambda: (flame_graph(made.callers), flame_graph(made.callees)), runs
    )
    deep = tree.heaviest_path()[min(8, len(tree.heaviest_path()) - 1)]
    focused = focus_tree(tree, deep)
    assert focused is not None
    _, out["focus_flame_ms"] = timed(lambda: flame_graph(focused), runs)
    return out


def fmt(times: list[float]) -> str:
    return f"{statistics.median(times):.0f} ms" + (
        f" ({len(times)} runs: {min(times):.0f} to {max(times):.0f})" if len(times) > 1 else ""
    )


def section(s: dict[str, Any], when: str) -> str:
    rows = [
        ("floor: one bare pass over the nodes (the columns a rule reads)", fmt(s["floor_ms"])),
        (
            f"without the cached tree: rebuilt from its stacks with `{s['library']}` charged "
            "(`charge=`)",
            fmt(s["rebuild_ms"]),
        ),
        (
            f"charge the library `{s['library']}` on the cached tree (`mine_tree`; "
            f"{s['charged_nodes']:,} nodes made)",
            fmt(s["charge_ms"]),
        ),
        (
            f"prune the symbol `{s['symbol']}` ({100 * s['pruned_share']:.1f} % of the bytes)",
            fmt(s["prune_ms"]),
        ),
        (f"remove the system library `{s['system']}`", fmt(s["remove_ms"])),
        ("flame graph of the charged tree", fmt(s["mined_flame_ms"])),
        ("flame graph of the tree as it is (for comparison)", fmt(s["plain_flame_ms"])),
        (
            "flame graph with a minimum of 0.1 % of the bytes (`ConstrainedTree`)",
            fmt(s["minimum_flame_ms"]),
        ),
        (
            f"sandwich of `{s['symbol']}` (callers {s['sandwich_nodes'][0]:,} nodes, callees "
            f"{s['sandwich_nodes'][1]:,})",
            fmt(s["sandwich_ms"]),
        ),
        ("its two flame graphs", fmt(s["sandwich_flames_ms"])),
        (
            "flame graph focused 8 levels down, its path from the root above it",
            fmt(s["focus_flame_ms"]),
        ),
    ]
    lines = [
        SECTION,
        "",
        f"Measured by `bench/mining.py` on {when}, load average (1 min) {s['load']:.1f} when it "
        f"started (2 cores shared with other work): the merged call tree of the benchmark "
        f"snapshot's stacks ({s['nodes']:,} nodes; bench/flame.py's tree), as the API keeps it in "
        "the cache. A rule makes a tree of its own from the cached one (then cached in turn); "
        "a minimum is a view over it.",
        "",
        "| step | time |",
        "|---|---|",
        *(f"| {what} | {value} |" for what, value in rows),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="write docs/performance.md")
    args = parser.parse_args(argv)
    when = datetime.now(UTC).strftime("%Y-%m-%d at %H:%M UTC")
    s = measure(args.nodes, args.runs)
    text = section(s, when)
    print(text)
    print(json.dumps(s, default=str))
    if args.write:
        replace_section(PERFORMANCE, SECTION, text, after="## Flame graphs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
