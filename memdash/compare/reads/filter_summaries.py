"""Reads of build compare's summaries per filter value (`models.BuildFilterSamples`; selectors).

A comparison under one of the build page's filters (one trigger, device model or OS) compares the
snapshots of that value in each build. Made from their totals in the request, that is every
total of thousands of snapshots; so the summary of each value of each filter is made ahead, in
one pass over the build's totals (`filter_samples`, `writes.refresh_filter_summaries`), and
`stored_filter_summary` reads the one a comparison asks for when it was made from the
snapshots the filter keeps now (the summary names them: one made from others is not read, and
the comparison is made from the totals as before). Two filters at once are never made ahead.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial
from itertools import groupby

import numpy as np
from django.contrib.postgres.aggregates import ArrayAgg
from django.db import connection
from django.db.models import Q, QuerySet

from memdash.allocations.models import Category, CategoryTotal
from memdash.allocations.reads.build_views import view_key
from memdash.allocations.reads.calltree.made import chosen_key
from memdash.compare.logic.summary import BuildSummary, CountColumns, unpack_count_columns
from memdash.compare.logic.summary import unpack_summary as unpack
from memdash.compare.models import BuildFilterSamples
from memdash.compare.reads.builds import made_summary
from memdash.compare.reads.refs import SnapshotFilter
from memdash.core.models import Build

Ints = np.ndarray
Sample = tuple[str, Ints, Ints, Ints]  # a category's name, snapshots (positions), counts, bytes
_FETCH = 500  # categories read at a time


def filter_samples(build: Build, snapshot_ids: Sequence[int]) -> Iterator[Sample]:
    """Per category with persistent allocations in some of these snapshots of the build (ids
    ascending), in category id order: its name, and the positions in `snapshot_ids` of the
    snapshots that have it with their counts and bytes (totals of snapshots not in the list,
    stored since it was read, are left out). The app is named: on Citus, one worker's query."""
    ids = np.array(snapshot_ids, dtype=np.int64)
    rows = CategoryTotal.objects.filter(
        Q(persistent__gt=0) | Q(persistent_bytes__gt=0),
        app_id=build.app_id, snapshot__app_id=build.app_id, snapshot__build_id=build.pk,
    )  # fmt: skip
    name_of = dict(Category.objects.filter(app_id=build.app_id).values_list("pk", "name"))

    def placed(
        sids: Sequence[int], counts: Sequence[int], sizes: Sequence[int]
    ) -> tuple[Ints, Ints, Ints]:
        given = np.array(sids, dtype=np.int64)
        at = np.minimum(np.searchsorted(ids, given), max(len(ids) - 1, 0))
        known = ids[at] == given if len(ids) else np.zeros(len(given), dtype=bool)
        return (at[known], np.array(counts, dtype=np.int64)[known],
                np.array(sizes, dtype=np.int64)[known])  # fmt: skip

    if connection.vendor == "postgresql":  # one row per category, its values as arrays
        grouped = (
            rows.values("category_id")
            .annotate(
                sids=ArrayAgg("snapshot_id"),
                counts=ArrayAgg("persistent"),
                sizes=ArrayAgg("persistent_bytes"),
            )  # fmt: skip
            .values_list("category_id", "sids", "counts", "sizes")
            .order_by("category_id")
        )
        sql, params = grouped.query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            while chunk := cursor.fetchmany(_FETCH):
                for cid, sids, counts, sizes in chunk:
                    yield (name_of[cid], *placed(sids, counts, sizes))
        return
    flat = rows.values_list("category_id", "snapshot_id", "persistent", "persistent_bytes")
    for cid, group in groupby(flat.order_by("category_id"), key=lambda r: r[0]):
        _, sids, counts, sizes = zip(*group, strict=True)
        yield (name_of[cid], *placed(sids, counts, sizes))


def stored_filter_summary(
    build: Build, filters: SnapshotFilter, snapshot_ids: list[int]
) -> BuildSummary | None:
    """The summary made ahead for the one filter given, if made from these snapshots."""
    key = view_key(filters.trigger, filters.model, filters.os)
    if key is None or not key[0]:
        return None
    stored = _stored(build, key[0], key[1])
    data = stored.values_list("data", flat=True).first()
    summary = None if data is None else unpack(data, snapshot_ids)
    if summary is not None:
        summary.count_source = partial(_count_columns, build, key, snapshot_ids)
    return summary


def _stored(build: Build, name: str, value: str) -> QuerySet[BuildFilterSamples]:
    return BuildFilterSamples.objects.filter(
        app_id=build.app_id, build=build, chosen=chosen_key(name, value)
    )


def _count_columns(build: Build, key: tuple[str, str], snapshot_ids: list[int]) -> CountColumns:
    """The count runs of the stored summary; made again from the totals in the rare case that
    it was replaced (by one of other snapshots) since it was read."""
    data = _stored(build, *key).values_list("counts", flat=True).first()
    columns = None if data is None else unpack_count_columns(data, snapshot_ids)
    if columns is None:
        columns = made_summary(build, snapshot_ids).count_columns
        assert columns is not None  # a summary just made has its count runs
    return columns
