"""What is made of a whole call tree besides its nodes: its flame graph and its Top Functions
(no Django).

Both walk every node of the tree, which for a build of large snapshots takes seconds: they are
made once, by the task that builds the tree when it is large (`allocations.tasks`), and kept in
the cache beside it, so a request only reads the answer (`reads.calltree.products`). A
`TreeProduct` says which one and with what parameters (plain data: it is part of the task's
argument and of the cache key); `make_product` makes it from the tree.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, fields
from typing import Any

from memdash.allocations.logic.calltree.flame import (
    FLAME_LIMIT,
    FunctionRow,
    flame_graph,
    top_functions,
)
from memdash.allocations.logic.calltree.merged import MergedCallTree
from memdash.allocations.logic.calltree.mining import sandwich
from memdash.allocations.logic.calltree.per_snapshot import (
    PerSnapshotTree,
    median_functions,
    median_of,
)
from memdash.allocations.logic.calltree.transform import FocusedTree, focus_tree
from memdash.allocations.logic.calltree.tree import CallTree

FLAME_GRAPH, TOP_FUNCTIONS, SANDWICH = "flame", "functions", "sandwich"


@dataclass(frozen=True)
class TreeProduct:
    """A flame graph (`limit` nodes, `search`'s matches marked) or Top Functions (by `order`),
    of the whole tree or of the subtree of `focus`; or the sandwich of `function` (its callers'
    and callees' flame graphs of `limit` nodes each)."""

    kind: str
    focus: str = ""
    limit: int = FLAME_LIMIT
    search: str = ""
    order: str = "self"
    function: str = ""

    def token(self) -> str:
        """Part of the cache key: the product's kind and parameters (user text: hashed)."""
        text = repr((self.kind, self.focus, self.limit, self.search, self.order, self.function))
        return f"{self.kind}:" + hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TreeProduct:
        return cls(
            str(data["kind"]),
            str(data.get("focus") or ""),
            int(data.get("limit") or FLAME_LIMIT),
            str(data.get("search") or ""),
            str(data.get("order") or "self"),
            str(data.get("function") or ""),
        )


@dataclass(frozen=True)
class Missing:
    """A product that cannot be made of this tree (its focus is not a node of it): a 404."""

    message: str


# Top Functions are kept as tuples of a FunctionRow's fields (`FunctionRow(*fields)`): 32,860
# rows of a 200,000-node tree are read back from the cache in 75 ms so, in 790 ms as dataclasses.
FunctionFields = tuple[Any, ...]
Product = dict[str, Any] | list[FunctionFields] | Missing
_ROW_FIELDS = [f.name for f in fields(FunctionRow)]


def function_fields(row: FunctionRow) -> FunctionFields:
    return tuple(getattr(row, name) for name in _ROW_FIELDS)


def make_product(tree: CallTree, product: TreeProduct) -> Product:
    """The flame graph's columns (`flame_graph`) or the Top Functions' rows (`top_functions`)."""
    if product.kind == SANDWICH:
        return _sandwich(tree, product)
    shown: CallTree = tree
    if product.focus:
        focused = focus_tree(tree, product.focus)
        if focused is None:
            return Missing("no such node to focus on in this call tree")
        shown = focused
    if product.kind == FLAME_GRAPH:
        return flame_graph(shown, product.limit, product.search)
    base = shown.tree if isinstance(shown, FocusedTree) else shown
    if isinstance(base, PerSnapshotTree):
        return _median_functions(base, shown, product.order)
    if not isinstance(base, MergedCallTree):  # a tree built whole and not inverted is merged
        return Missing("no functions for this tree")
    root = base.find(shown.root.id) if isinstance(shown, FocusedTree) else None
    return [function_fields(row) for row in top_functions(base, root, product.order)]


def _sandwich(tree: CallTree, product: TreeProduct) -> Product:
    """A function's totals, and its callers and callees as flame graphs whose top node is the
    function itself (`calltree_mining.sandwich`); of a build's tree of medians per snapshot,
    each snapshot's sandwich and their medians."""
    trees = tree.trees if isinstance(tree, PerSnapshotTree) else [tree]
    if not all(isinstance(t, MergedCallTree) for t in trees):
        return Missing("no sandwich for this tree")
    parts = [sandwich(t, product.function) for t in trees if isinstance(t, MergedCallTree)]
    found = [p for p in parts if p is not None]
    if not found:
        return Missing("no function of that name in this call tree")
    first, n = found[0], len(parts)
    callers: CallTree = first.callers
    callees: CallTree = first.callees
    if isinstance(tree, PerSnapshotTree):
        none = MergedCallTree(options=first.callers.options, frames={})
        none.finish()  # a snapshot without the function: nothing on either side
        callers = PerSnapshotTree([p.callers if p else none for p in parts], none.options)
        callees = PerSnapshotTree([p.callees if p else none for p in parts], none.options)

    def figure(name: str) -> int:
        return median_of([getattr(p, name) for p in found], n)

    return {
        "function": {
            "symbol": first.symbol, "image": first.image, "bytes": figure("bytes"),
            "count": figure("count"), "self_bytes": figure("self_bytes"),
            "self_count": figure("self_count"),
        },
        "callers": _topped(flame_graph(callers, product.limit, product.search)),
        "callees": _topped(flame_graph(callees, product.limit, product.search)),
        "total_bytes": tree.total_bytes,
        "total_count": tree.total_count,
    }  # fmt: skip


def _topped(columns: dict[str, Any]) -> dict[str, Any]:
    """A flame graph of a tree of one root without the "All allocations" node above it."""
    out = {k: v[1:] if isinstance(v, list) else v for k, v in columns.items()}
    out["parents"] = ["", *out["parents"][1:]]
    out["nodes"] = len(out["ids"])
    return out


def _median_functions(tree: PerSnapshotTree, shown: CallTree, order: str) -> Product:
    """Top Functions per snapshot: those of each snapshot's tree (of the focused node's subtree
    there, none where the snapshot lacks it), their medians (`per_snapshot.median_functions`)."""
    per_snapshot: list[list[FunctionRow]] = []
    for one in tree.trees:
        if not isinstance(one, MergedCallTree):
            return Missing("no functions for this tree")
        root = one.find(shown.root.id) if isinstance(shown, FocusedTree) else None
        if isinstance(shown, FocusedTree) and root is None:
            per_snapshot.append([])
            continue
        per_snapshot.append(top_functions(one, root, order))
    return [function_fields(row) for row in median_functions(per_snapshot, order)]


SANDWICH_SIDES = (("callers", "caller", " ← "), ("callees", "callee", " → "))


def sandwich_table(data: dict[str, Any]) -> tuple[list[str], list[list[str | int]]]:
    """A sandwich (`_sandwich`'s answer) as a table: the function, then each node drawn of its
    callers and of its callees, each side in the order of a tree (a node, then what is above or
    below it, heaviest first), with its depth from the function and its path from it (callers
    read outward: `f ← caller ← its caller`; callees inward: `f → callee`). Its figure is the
    graph's (bytes, or the count of a tree without sizes; of a build's medians per snapshot,
    each node's own)."""
    by_count = data["callers"].get("unit") == "count"
    function = data["function"]
    unit = "count" if by_count else "bytes"
    headers = ["Side", "Depth", "Function", "Image", "Path", f"Total {unit}"]
    rows: list[list[str | int]] = [
        ["function", 0, function["symbol"], function["image"], function["symbol"],
         function["count" if by_count else "bytes"]],
    ]  # fmt: skip
    for key, side, arrow in SANDWICH_SIDES:
        columns = data[key]
        figures = columns.get("sizes") or columns["values"]
        below: dict[str, list[int]] = {}
        for i, parent in enumerate(columns["parents"]):
            below.setdefault(parent, []).append(i)
        pending = [(i, 0, columns["labels"][i]) for i in reversed(below.get("", []))]
        while pending:
            i, depth, path = pending.pop()
            if depth:  # the function itself is the top of both graphs: said once, above
                rows.append([side, depth, columns["labels"][i], columns["images"][i], path,
                             figures[i]])  # fmt: skip
            for child in reversed(below.get(columns["ids"][i], [])):
                pending.append((child, depth + 1, path + arrow + columns["labels"][child]))
    return headers, rows
