"""Reads of a build's call trees made ahead (`models.BuildTree`; selectors: reads only).

A build of ten thousand devices cannot build its call tree, flame graph or Top Functions in a
request: the tree is the median per snapshot over the trees of every snapshot whose rows are
kept, and choosing those snapshots alone reads every snapshot of the build. So the default tree
(all categories, not inverted, no options; medians per snapshot) and its default flame graph and
Top Functions are made ahead, by the task that makes the build's statistics tables
(`writes.build_trees`), for the whole build and for each value of each of the build page's
filters, under each lifespan filter.

A request reads one of them when it asks for exactly that (`eligible`): one aggregate over the
build's snapshots names the ones the filter keeps now (`tree_signature`: their number, the sum
of their ids, the newest storing time and the sum of their symbols versions change with any
snapshot stored, deleted or renamed by debug files); the stored row's says which it was made
from. A current one is read; one out of date is read only when building the tree on demand
would go to a task (its rows past `MEMDASH_TREE_INLINE_ROWS`), and then said to be out of date
(`MadeState.current`); otherwise the request builds it on demand as before. Retention pruning
a snapshot's rows later does not make a tree out of date: it was made from rows that were there
(`kept` says how many snapshots'), and the next run of the task makes it of those kept then.
"""

from __future__ import annotations

import hashlib
import pickle
import threading
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Count, Max, Q, QuerySet, Sum

from memdash.allocations.logic.calltree.flame import FLAME_LIMIT, TOP_ORDERS
from memdash.allocations.logic.calltree.per_snapshot import MEDIAN
from memdash.allocations.logic.calltree.products import FLAME_GRAPH, TOP_FUNCTIONS, TreeProduct
from memdash.allocations.models import BuildTree
from memdash.allocations.reads.build_views import view_key
from memdash.allocations.reads.calltree.query import CallTreeQuery
from memdash.allocations.reads.snapshots import build_snapshots
from memdash.core.models import Build

TREE = "tree"
MADE_VERSION = 1  # part of every stored signature: raise it when what is stored changes shape


def product_kind(product: TreeProduct) -> str | None:
    """The kind a product is stored under when it is one made ahead (the default flame graph,
    Top Functions in either order, of the whole tree), else None."""
    plain = not product.focus and not product.search and not product.function
    if not plain or product.limit != FLAME_LIMIT:
        return None
    if product.kind == FLAME_GRAPH:
        return FLAME_GRAPH
    if product.kind == TOP_FUNCTIONS and product.order in TOP_ORDERS:
        return f"{TOP_FUNCTIONS}:{product.order}"
    return None


MADE_PRODUCTS = [
    TreeProduct(FLAME_GRAPH),
    *(TreeProduct(TOP_FUNCTIONS, order=order) for order in TOP_ORDERS),
]


def chosen_key(name: str, value: str) -> str:
    """What a (filter, value) is stored under: the value is user text, hashed."""
    return hashlib.sha1(repr((name, value)).encode(), usedforsecurity=False).hexdigest()


def eligible(query: CallTreeQuery, trigger: str, model: str, os: str) -> tuple[str, str] | None:
    """The (filter, value) of the tree made ahead that answers `query` (its focus aside), or
    None when none does (options, a category, data mining, sums: built on demand)."""
    if not query.is_default or query.mines or query.aggregate != MEDIAN:
        return None
    return view_key(trigger, model, os)


def signature_of(
    count: int, id_sum: int, latest: datetime | None, renamed: int, version: int = MADE_VERSION
) -> str:
    stamp = latest.timestamp() if latest is not None else 0
    return f"{version}:{count}:{id_sum}:{stamp:.6f}:{renamed}"


@dataclass(frozen=True)
class TreeSignature:
    """The snapshots a filter keeps now: how many, how many with their rows, those rows, and
    the signature a tree made of them is stored with."""

    snapshots: int
    kept: int
    rows: int
    signature: str


def tree_signature(build: Build, key: tuple[str, str]) -> TreeSignature:
    """One aggregate over the build's snapshots that the (filter, value) keeps (the app named:
    on Citus the worker of the app answers it)."""
    chosen = {key[0]: key[1]} if key[0] else {}
    snapshots = build_snapshots(build, **chosen).filter(app_id=build.app_id).select_related(None)
    kept = Q(rows_pruned_at__isnull=True)
    found = snapshots.order_by().aggregate(
        n=Count("id"), ids=Sum("id"), latest=Max("created_at"), renamed=Sum("symbols_version"),
        kept=Count("id", filter=kept), rows=Sum("row_count", filter=kept),
    )  # fmt: skip
    count = int(found["n"])
    return TreeSignature(
        count, int(found["kept"]), int(found["rows"] or 0),
        signature_of(count, int(found["ids"] or 0), found["latest"], int(found["renamed"] or 0)),
    )  # fmt: skip


@dataclass(frozen=True)
class MadeState:
    """What a tree made ahead was made from, and whether those are the snapshots now."""

    snapshots: int
    kept: int
    made_at: datetime
    current: bool
    signature: str  # the stored one

    def as_json(self) -> dict[str, Any]:
        return {
            "snapshots": self.snapshots,
            "kept": self.kept,
            "made_at": self.made_at.isoformat(),
            "current": self.current,
        }


@dataclass(frozen=True)
class Made:
    """A row made ahead that a request may read (`usable`), and the snapshots now."""

    state: MadeState
    now: TreeSignature
    row_id: int
    app_id: int


def _rows(build: Build, key: tuple[str, str], lifespan: str) -> QuerySet[BuildTree]:
    return BuildTree.objects.filter(
        app_id=build.app_id, build_id=build.pk, chosen=chosen_key(*key), lifespan=lifespan
    )


def usable(build: Build, key: tuple[str, str], lifespan: str, kind: str) -> Made | None:
    """The row of `kind` made ahead for the (filter, value) and lifespan that a request reads:
    current, or out of date when building it on demand would go to a task; else None. A build
    with none made (a small one) costs one indexed query."""
    found = _rows(build, key, lifespan).filter(kind=kind).values_list(
        "pk", "snapshots", "kept", "made_at", "signature"
    ).first()  # fmt: skip
    if found is None:
        return None
    pk, snapshots, kept, made_at, signature = found
    now = tree_signature(build, key)
    current = signature == now.signature
    if not current and now.rows <= settings.MEMDASH_TREE_INLINE_ROWS:
        return None  # built on demand within the request's budget: current
    return Made(MadeState(snapshots, kept, made_at, current, signature), now, pk, build.app_id)


# The last objects read in this process, by row and signature: a build's tree takes a few
# hundred milliseconds to unpickle, and a page asks for it again and again (each node opened).
_RECENT: OrderedDict[tuple[int, str, datetime], Any] = OrderedDict()
_RECENT_SIZE = 4
_LOCK = threading.Lock()


def forget_made() -> None:
    """Drop what this process keeps (`trees.forget_recent`: a worker keeps nothing)."""
    with _LOCK:
        _RECENT.clear()


def made_object(made: Made) -> Any:
    """The tree or product of a row made ahead (read once per process while it is unchanged)."""
    memo = (made.row_id, made.state.signature, made.state.made_at)
    with _LOCK:
        if memo in _RECENT:
            _RECENT.move_to_end(memo)
            return _RECENT[memo]
    # the app named: on Citus one shard; as made then: one made again since is read again
    row = BuildTree.objects.filter(app_id=made.app_id, pk=made.row_id, made_at=made.state.made_at)
    data = row.values_list("data", flat=True).first()
    if data is None:
        return None
    # Stored by this site's own task (`writes.build_trees`), as the shared cache stores trees.
    value = pickle.loads(zlib.decompress(bytes(data)))  # noqa: S301
    with _LOCK:
        _RECENT[memo] = value
        while len(_RECENT) > _RECENT_SIZE:
            _RECENT.popitem(last=False)
    return value


def made_state(
    build: Build, query: CallTreeQuery, trigger: str, model: str, os: str
) -> MadeState | None:
    """What the tree made ahead that answers `query` was made from, if a request reads one."""
    key = eligible(query, trigger, model, os)
    if key is None:
        return None
    made = usable(build, key, query.lifespan, TREE)
    return None if made is None else made.state
