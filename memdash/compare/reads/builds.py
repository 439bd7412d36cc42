"""Reads of build compare: two builds over their snapshots, per category (selectors: reads only).

What one build alone contributes (`summary.BuildSummary`: the spreads and runs of each category
over its snapshots) is read from the build's stored summary (`models.BuildSamples`) when it was
made from the build's snapshots as they are now. These reads never store one: when there is no
such summary (none stored yet, or the build has had a snapshot stored or deleted since) a view
gets it from `services.build_summaries`, which makes and stores it, and passes it in; without
one, the summary is made here from the per-snapshot totals and dropped after the answer.
A comparison of some of the builds' snapshots (filters) reads the summaries made ahead for one
filter's value when given (`reads.filter_summaries`), else is made from their totals.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import partial

from django.contrib.postgres.aggregates import ArrayAgg
from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import Q

from memdash.allocations.models import Category, CategoryTotal, Snapshot
from memdash.compare.logic.build_rows import (
    TOTAL_ROW,
    BuildComparison,
    compare_build_summaries,
    compare_build_tables,
)
from memdash.compare.logic.category_diff import CountBytes
from memdash.compare.logic.stats import DEFAULT_ALPHA
from memdash.compare.logic.summary import (
    BuildSummary,
    CountColumns,
    summarize_samples,
    unpack_count_columns,
    unpack_summary,
)
from memdash.compare.models import BuildSamples
from memdash.compare.reads.refs import SnapshotFilter, kept_snapshots
from memdash.core.models import App, Build, natural_key


def filter_options(app: App) -> dict[str, list[str]]:
    """The triggers, device models and OS versions seen in the app's snapshots."""
    snapshots = Snapshot.objects.filter(app=app)
    return {
        "triggers": sorted(set(snapshots.values_list("trigger", flat=True))),
        "models": sorted(set(snapshots.values_list("device_model", flat=True)) - {""}),
        "oses": sorted(set(snapshots.values_list("os", flat=True)) - {""}, key=natural_key),
    }


def _category_samples(
    build: Build, snapshot_ids: Sequence[int], categories: Sequence[str] | None
) -> Iterator[tuple[str, Sequence[int], Sequence[int]]]:
    """(name, # persistent, persistent bytes) of each category with persistent allocations in
    some of these snapshots of the build: its values in those snapshots, in ascending order (the
    others count as 0). Grouped by category id, names looked up once: no join over every row,
    and no model instances. One category at a time, in id order, so that a category's values
    are dropped once summarized: holding them all (two lists per category, thousands) would
    have the garbage collector scan them again and again while they pile up."""
    rows = CategoryTotal.objects.filter(snapshot_id__in=snapshot_ids).filter(
        Q(persistent__gt=0) | Q(persistent_bytes__gt=0)
    )
    names = Category.objects.filter(app_id=build.app_id)
    if categories is not None:
        names = names.named(categories)
        rows = rows.filter(category_id__in=names.values("pk"))
    name_of = dict(names.values_list("pk", "name"))
    if connection.vendor == "postgresql":
        # one row per category with its values as sorted arrays: the database groups and sorts,
        # Python never sees the 100 x 5,000 single rows
        grouped = (
            rows.values("category_id")
            .annotate(
                counts=ArrayAgg("persistent", order_by="persistent"),
                sizes=ArrayAgg("persistent_bytes", order_by="persistent_bytes"),
            )
            .values_list("category_id", "counts", "sizes")
            .order_by("category_id")
        )
        # read a chunk of rows at a time from a client-side cursor (a server-side one, which
        # `iterator()` opens, is planned for its first rows and answers slower here)
        try:
            sql, params = grouped.query.sql_with_params()
        except EmptyResultSet:  # no snapshots: nothing to read
            return
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            while chunk := cursor.fetchmany(500):
                for cid, counts, sizes in chunk:
                    yield name_of[cid], counts, sizes
        return
    by_id: dict[int, tuple[list[int], list[int]]] = {}
    for cid, count, size in rows.values_list("category_id", "persistent", "persistent_bytes"):
        if cid not in by_id:
            by_id[cid] = ([], [])
        by_id[cid][0].append(count)
        by_id[cid][1].append(size)
    for cid in sorted(by_id):
        counts, sizes = by_id.pop(cid)
        counts.sort()
        sizes.sort()
        yield name_of[cid], counts, sizes


def _snapshot_totals(
    build: Build, filters: SnapshotFilter
) -> tuple[list[int], dict[int, dict[str, CountBytes]]]:
    """The ids of the build's snapshots that the filters keep, ascending (`refs.snapshot_ids`),
    and each one's persistent (count, bytes) as a one-row table: one read by the build, where
    reading them by their ids spelled out ten thousand parameters (a quarter of a second)."""
    rows = kept_snapshots(build, filters).values_list("pk", "persistent", "persistent_bytes")
    tables = {sid: {TOTAL_ROW: (count, size)} for sid, count, size in rows}
    return list(tables), tables


def made_summary(
    build: Build, snapshot_ids: list[int], categories: Sequence[str] | None = None
) -> BuildSummary:
    """The summary of these snapshots of the build (ids ascending) made from their totals."""
    return summarize_samples(snapshot_ids, _category_samples(build, snapshot_ids, categories))


def stored_summary(build: Build, snapshot_ids: list[int]) -> BuildSummary | None:
    """The stored summary of the build, if made from these snapshots; its runs of counts are
    read only if a rank test on counts is asked for (nothing shows one)."""
    data = BuildSamples.objects.filter(build=build).values_list("data", flat=True).first()
    summary = None if data is None else unpack_summary(data, snapshot_ids)
    if summary is not None:
        summary.count_source = partial(_stored_count_columns, build, snapshot_ids)
    return summary


def _stored_count_columns(build: Build, snapshot_ids: list[int]) -> CountColumns:
    """The count runs of the build's stored summary; made again from the totals in the rare
    case that the stored summary was replaced (by one of other snapshots) since it was read."""
    data = BuildSamples.objects.filter(build=build).values_list("counts", flat=True).first()
    columns = None if data is None else unpack_count_columns(data, snapshot_ids)
    if columns is None:
        columns = made_summary(build, snapshot_ids).count_columns
        assert columns is not None  # a summary just made has its count runs
    return columns


def _build_summary(
    build: Build, snapshot_ids: list[int], given: Mapping[int, BuildSummary]
) -> BuildSummary:
    """The build's summary over all its snapshots: the one given (`services.build_summaries`)
    or the stored one, when made from these snapshots; else one made from their totals."""
    summary = given.get(build.pk)
    if summary is not None and summary.snapshot_ids == snapshot_ids:
        return summary
    return stored_summary(build, snapshot_ids) or made_summary(build, snapshot_ids)


def _given(
    build: Build, snapshot_ids: list[int], given: Mapping[int, BuildSummary]
) -> BuildSummary | None:
    summary = given.get(build.pk)
    return summary if summary is not None and summary.snapshot_ids == snapshot_ids else None


def compare_builds(
    base: Build,
    target: Build,
    filters: SnapshotFilter | None = None,
    categories: Sequence[str] | None = None,
    summaries: Mapping[int, BuildSummary] | None = None,
    alpha: float = DEFAULT_ALPHA,
) -> BuildComparison:
    """Per category, the persistent bytes and counts per snapshot of each build (snapshots
    chosen by the filters), their deltas and the rank test between the builds, significant
    below `alpha`. All of a
    build's snapshots: its summary (given in `summaries` by build id, or stored); some of them:
    the summary given for them (one filter's, made ahead), else summarized from their totals."""
    filters = filters or SnapshotFilter()
    chosen = [c for c in categories or [] if c] or None
    base_ids, base_totals = _snapshot_totals(base, filters)
    target_ids, target_totals = _snapshot_totals(target, filters)
    total = compare_build_tables(base_totals, target_totals, [TOTAL_ROW], alpha)[0]
    if filters:  # the summaries made ahead for one filter's value, else from the totals
        given = summaries or {}
        base_summary = _given(base, base_ids, given) or made_summary(base, base_ids, chosen)
        target_summary = _given(target, target_ids, given) or made_summary(
            target, target_ids, chosen
        )
    else:
        given = summaries or {}
        base_summary = _build_summary(base, base_ids, given)
        target_summary = _build_summary(target, target_ids, given)
    values = compare_build_summaries(base_summary, target_summary, chosen, alpha)
    return BuildComparison(
        base, target, base_ids, target_ids, total, values, chosen, base_summary, target_summary,
        alpha,
    )  # fmt: skip
