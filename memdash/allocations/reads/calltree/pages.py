"""What the call tree's API returns of a tree: a page of a node's children, with the levels a
page opens with it (the heaviest path, the paths to a search's matches, a permalink's nodes).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from memdash.allocations.logic.calltree.transform import matches
from memdash.allocations.logic.calltree.tree import CallTree, NodeView

Json = dict[str, Any]


MATCHES_OPENED = 10  # matches of a search whose paths a page opens on load
LEVELS_OPENED = 60  # nodes opened at most for them, or from a permalink


def _level(parent: str, views: list[NodeView], total: int, offset: int, search: str) -> Json:
    return {
        "node": parent,
        "children": [_view_json(v, search) for v in views],
        "total": total,
        "more": max(0, total - offset - len(views)),
    }


def _view_json(view: NodeView, search: str) -> Json:
    data = view.as_dict()
    data["match"] = matches(view.symbol, search)
    return data


def match_levels(tree: CallTree, needle: str, limit: int) -> tuple[list[Json], list[str]]:
    """The levels that open the paths to the heaviest matches of a search (depth first, heaviest
    child first, stopping at a match) and the ids of those matches. In a tree filtered to the
    stacks through a match, every node opened on the way has a match below it."""
    levels: list[Json] = []
    found: list[str] = []
    first = tree.children(None, 0, limit)
    pending = list(reversed(first[0])) if first else []
    while pending and len(found) < MATCHES_OPENED and len(levels) < LEVELS_OPENED:
        view = pending.pop()
        if matches(view.symbol, needle):
            found.append(view.id)
            continue
        page = tree.children(view.id, 0, limit) if view.has_children else None
        if page and page[0]:
            levels.append(_level(view.id, page[0], page[1], 0, needle))
            pending.extend(reversed(page[0]))
    return levels, found


def call_tree_page(
    tree: CallTree,
    node_id: str | None,
    offset: int,
    limit: int,
    heaviest: bool = False,
    *,
    search: str = "",
    expand_matches: bool = False,
    open_ids: Iterable[str] = (),
) -> dict[str, Any] | None:
    """The children of a node (the roots without one) as the API returns them (`match`: the
    label contains `search`). With the roots, the levels to open in the same answer: with
    `heaviest`, the first page of children of each node on the heaviest path; with
    `expand_matches`, of each node on the paths to the first matches (`matches`: their ids); with
    `open_ids` (a permalink's open nodes, parents first), of each of those nodes that is in the
    tree. None when the node is not in the tree."""
    page = tree.children(node_id, offset, limit)
    if page is None:
        return None
    views, total = page
    data: Json = {
        "node": node_id,
        "children": [_view_json(v, search) for v in views],
        "total": total,
        "offset": offset,
        "limit": limit,
        "more": max(0, total - offset - len(views)),
        "total_bytes": tree.total_bytes,
        "total_count": tree.total_count,
    }
    if node_id is not None:
        return data
    if heaviest:
        data["heaviest"] = [
            _level(parent, views, total, 0, search)
            for parent, views, total in tree.heaviest_pages(limit)
        ]
    if expand_matches and search:
        data["opened"], data["matches"] = match_levels(tree, search, limit)
    elif open_ids:
        opened = []
        for parent in list(dict.fromkeys(open_ids))[:LEVELS_OPENED]:
            level = tree.children(parent, 0, limit)
            if level is not None:
                opened.append(_level(parent, level[0], level[1], 0, search))
        data["opened"] = opened
    return data
