"""Reads of a call tree's flame graph and Top Functions (`logic.calltree.products`), cached.

Each is kept in the cache under the tree's key and the product's own token, for as long as the
trees are (`trees.CACHE_SECONDS`), so every process answers it without the tree. One not there
yet is made in the request only when its tree is built from no more rows than the request's
`InlineBudget` allows (the rows count whether or not the tree is cached: making the product walks
every node of it); past that it is a job (`TreeDeferred`) whose task builds the tree if need be,
makes the product, and keeps both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from django.core.cache import cache

from memdash.allocations.logic.calltree.products import Product, TreeProduct, make_product
from memdash.allocations.logic.calltree.tree import CallTree
from memdash.allocations.models import Snapshot
from memdash.allocations.reads.calltree.jobs import InlineBudget, TreeDeferred, TreeJob
from memdash.allocations.reads.calltree.made import (
    TREE,
    eligible,
    made_object,
    product_kind,
    usable,
)
from memdash.allocations.reads.calltree.query import CallTreeQuery
from memdash.allocations.reads.calltree.trees import (
    CACHE_SECONDS,
    CACHE_VERSION,
    Progress,
    build_call_tree_for,
    build_tree_selection,
    snapshot_call_tree,
    snapshot_tree_key,
    tree_job,
)
from memdash.core.models import Build


def _cached(
    job: TreeJob, product: TreeProduct, budget: InlineBudget | None, tree: Callable[[], CallTree]
) -> Product:
    """The product under `job.key`, else made of `tree()` unless that goes past `budget`."""
    value: Product | None = cache.get(job.key)
    if value is not None:
        return value
    if budget is not None and not budget.take(job.rows):
        raise TreeDeferred([job])
    value = make_product(tree(), product)
    cache.set(job.key, value, CACHE_SECONDS)
    return value


def _product_job(tree: TreeJob, product: TreeProduct) -> TreeJob:
    """The job that makes `product` of the tree `tree` builds: kept under a key of its own."""
    return dataclasses.replace(
        tree, key=f"{tree.key}:{product.token()}", whole=True, product=product.as_json()
    )


def snapshot_product(
    snapshot: Snapshot,
    query: CallTreeQuery,
    product: TreeProduct,
    *,
    budget: InlineBudget | None = None,
    progress: Progress | None = None,
) -> Product:
    """A product of the snapshot's tree under `query` (its focus is the product's), built whole:
    the stored tree's for the default query."""
    base = tree_job(
        snapshot_tree_key(snapshot, query), "snapshot", snapshot.pk, query, snapshot.row_count
    )
    return _cached(
        _product_job(base, product), product, budget,
        lambda: snapshot_call_tree(snapshot, query, True, progress=progress),
    )  # fmt: skip


def build_product(
    build: Build,
    query: CallTreeQuery,
    product: TreeProduct,
    trigger: str = "",
    model: str = "",
    os: str = "",
    *,
    budget: InlineBudget | None = None,
    progress: Progress | None = None,
) -> Product:
    """A product of the build's tree under `query` and the build page's filters: the one made
    ahead (`made`) when it is one of those, else made of the tree made ahead, else of the tree
    built on demand."""
    chosen = eligible(query, trigger, model, os)
    kind = product_kind(product)
    made = None if chosen is None else usable(build, chosen, query.lifespan, kind or TREE)
    if made is not None and kind is not None:
        value = made_object(made)
        if value is not None:
            return value  # type: ignore[no-any-return]
    if made is not None:  # another product of the tree made ahead: under a key of that tree
        key = (
            f"memdash:calltree:{CACHE_VERSION}:build-made:{build.pk}:{made.row_id}:"
            f"{made.state.signature}:{made.state.made_at.timestamp()}:{query.cache_token()}"
        )
        rows = made.now.rows
    else:
        key, _, rows = build_tree_selection(build, query, trigger, model, os)
    base = tree_job(key, "build", build.pk, query, rows, trigger=trigger, model=model, os=os)
    return _cached(
        _product_job(base, product), product, budget,
        lambda: build_call_tree_for(build, query, trigger, model, os, progress=progress),
    )  # fmt: skip
