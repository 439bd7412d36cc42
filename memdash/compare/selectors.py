"""Reads of the compare domain: diffs, build compare and trends.

Category diffs and build compare read only the pre-aggregated tables (CategoryTotal,
GenerationCategoryTotal, BuildCategoryTotal, the snapshots' own totals), the stored per-node
call-tree totals (CallTreeNode) and build compare's per-build summaries (BuildSamples, made from
CategoryTotal by the first comparison of a build and stored for the next ones). The one
exception is the call tree of a single generation, which nothing pre-aggregates: it is summed
from that generation's allocation rows (one snapshot, one generation) and cached.

A side of a diff is named by a ref:

- `snapshot:<id>`: the whole snapshot;
- `generation:<snapshot id>:<index>`: the allocations created in that generation; the index
  `baseline` (or nothing: `generation:<id>:`) is what was created before the first mark;
- `build:<version>:<number>` (`build:<version>` when the version is unambiguous): the build's
  per-snapshot mean, i.e. its summed totals divided by its number of snapshots, so builds with
  different numbers of snapshots compare fairly.
"""

from __future__ import annotations

import gc
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property, partial
from itertools import chain

from django.contrib.postgres.aggregates import ArrayAgg
from django.core.cache import cache
from django.db import connection
from django.db.models import Q, QuerySet, Sum
from django.http import Http404
from django.urls import reverse

from memdash.allocations.analysis import frame_label, lifespan_counts
from memdash.allocations.models import (
    AllocationRow,
    BuildCategoryTotal,
    CallTreeNode,
    Category,
    CategoryTotal,
    Frame,
    Generation,
    GenerationCategoryTotal,
    Snapshot,
    StackNode,
)
from memdash.allocations.selectors import BASELINE, snapshot_for_user
from memdash.compare import services
from memdash.compare.diff import (
    ROW_FIELDS,
    TOTAL_ROW,
    BuildCompareRow,
    CountBytes,
    DiffRow,
    GateFailure,
    TreeTotals,
    build_compare_row,
    check_growth_of,
    compare_build_summaries,
    compare_build_tables,
    diff_categories,
    diff_tree_nodes,
    gate_items,
    inclusive_totals,
    summarize_diff,
    tree_level,
)
from memdash.compare.models import BuildSamples
from memdash.compare.stats import GrowthLimit, Spread, describe
from memdash.compare.summary import (
    BuildSummary,
    PresentSamples,
    summarize_build,
    unpack_count_columns,
    unpack_summary,
)
from memdash.core.models import App, Build, natural_key
from memdash.core.numbers import whole_number
from memdash.core.selectors import app_for_user, builds_in_release_order, find_build

DIFF_LIFESPANS = ("persistent", "transient", "all")
DEFAULT_DIFF_LIFESPAN = "persistent"  # a diff is about what stayed alive
NO_STACK_KEY = "n"
NO_STACK_LABEL = "(no stack)"
COUNTERS = ("persistent", "persistent_bytes", "transient", "transient_bytes")
TREE_CACHE_SECONDS = 600


class RefError(ValueError):
    """A ref that cannot be read (the message says why); the API answers 400."""


# ---- refs ---------------------------------------------------------------------------------------


@dataclass
class SnapshotFilter:
    trigger: str = ""
    model: str = ""
    os: str = ""

    def apply(self, snapshots: QuerySet[Snapshot]) -> QuerySet[Snapshot]:
        if self.trigger:
            snapshots = snapshots.filter(trigger=self.trigger)
        if self.model:
            snapshots = snapshots.filter(device_model=self.model)
        if self.os:
            snapshots = snapshots.filter(os=self.os)
        return snapshots

    def as_json(self) -> dict:
        return {"trigger": self.trigger, "model": self.model, "os": self.os}

    def __bool__(self) -> bool:
        return bool(self.trigger or self.model or self.os)


@dataclass(frozen=True)
class Side:
    """One side of a diff, resolved and checked against the user's access."""

    kind: str  # snapshot | generation | build
    ref: str
    app: App
    label: str
    url: str
    snapshot: Snapshot | None = None
    generation: int | str | None = None  # an index or BASELINE (generation refs only)
    build: Build | None = None
    snapshot_ids: tuple[int, ...] = field(default_factory=tuple)
    filters: SnapshotFilter = field(default_factory=SnapshotFilter)  # build sides only

    @property
    def divisor(self) -> int:
        """Totals of a build side are divided by its number of snapshots (per-snapshot mean)."""
        return max(len(self.snapshot_ids), 1) if self.kind == "build" else 1

    def as_json(self) -> dict:
        data = {"ref": self.ref, "kind": self.kind, "label": self.label, "url": self.url}
        if self.kind == "build":
            data["snapshots"] = len(self.snapshot_ids)
            data["filters"] = self.filters.as_json()
        return data


def parse_build_spec(text: str) -> tuple[str, str | None]:
    """'8.0.4:104' -> ('8.0.4', '104'); '8.0.4' -> ('8.0.4', None): any number, if only one."""
    version, sep, number = text.partition(":")
    if not version:
        raise RefError(f"{text!r}: a build is <version>:<number> or <version>")
    return version, (number if sep else None)


def parse_generation_index(text: str) -> int | str:
    if text in ("", BASELINE):
        return BASELINE
    index = whole_number(text, 2**31 - 1)
    if index is None:
        raise RefError(f"generation index {text!r} is neither a number nor `baseline`")
    return index


def build_side(build: Build, filters: SnapshotFilter | None = None) -> Side:
    """A build's side: its snapshots (those the filters keep), averaged per snapshot."""
    filters = filters or SnapshotFilter()
    number = f":{build.number}" if build.number else ":"
    return Side(
        kind="build",
        ref=f"build:{build.version}{number}",
        app=build.app,
        label=f"build {build}",
        url=build.get_absolute_url(),
        build=build,
        snapshot_ids=tuple(_snapshot_ids(build, filters)),
        filters=filters,
    )


def generation_name(snapshot: Snapshot, generation: int | str) -> str:
    if generation == BASELINE:
        return "before the first mark"
    found = Generation.objects.filter(snapshot=snapshot, index=generation).first()
    if found is None:
        count = Generation.objects.filter(snapshot=snapshot).count()
        raise RefError(
            f"snapshot {snapshot.pk} has no generation {generation} ({count} generations)"
        )
    return found.name or f"generation {generation}"


def resolve_ref(
    user, text: str, app: App | None = None, filters: SnapshotFilter | None = None
) -> Side:
    """The side a ref names. 404 for what the user may not see or what does not exist,
    RefError for a ref that is malformed. `filters` choose the snapshots of a build side."""
    kind, _, rest = (text or "").partition(":")
    if kind in ("snapshot", "generation"):
        id_text, _, index_text = rest.partition(":")
        snapshot_id = whole_number(id_text)
        if snapshot_id is None:
            raise RefError(f"{text!r}: expected {kind}:<snapshot id>")
        snapshot = snapshot_for_user(user, snapshot_id)
        if app is not None and snapshot.app_id != app.pk:
            raise RefError(f"snapshot {snapshot.pk} belongs to another app")
        if kind == "snapshot":
            if index_text:
                raise RefError(f"{text!r}: expected snapshot:<id>")
            return Side(
                kind="snapshot",
                ref=f"snapshot:{snapshot.pk}",
                app=snapshot.app,
                label=f"snapshot #{snapshot.pk} ({snapshot.build}, {snapshot.device_model or '?'})",
                url=snapshot.get_absolute_url(),
                snapshot=snapshot,
                snapshot_ids=(snapshot.pk,),
            )
        generation = parse_generation_index(index_text)
        query = "baseline" if generation == BASELINE else generation
        return Side(
            kind="generation",
            ref=f"generation:{snapshot.pk}:{query}",
            app=snapshot.app,
            label=f"snapshot #{snapshot.pk}, {generation_name(snapshot, generation)}",
            url=f"{snapshot.get_absolute_url()}?generation={query}",
            snapshot=snapshot,
            generation=generation,
            snapshot_ids=(snapshot.pk,),
        )
    if kind == "build":
        if app is None:
            raise RefError("a build ref needs the app (app=<id>)")
        version, number = parse_build_spec(rest)
        build = find_build(app, version, number)
        if build is None:
            raise Http404(f"No build {rest} in this app")
        return build_side(build, filters)
    raise RefError(f"{text!r}: a ref is snapshot:<id>, generation:<id>:<index> or build:<v>:<n>")


def resolve_pair(
    user, base: str, target: str, app_id: str | None, filters: SnapshotFilter | None = None
) -> tuple[Side, Side]:
    """Both sides, of the same app."""
    app = app_for_user(user, app_id) if app_id not in (None, "") else None
    base_side = resolve_ref(user, base, app, filters)
    target_side = resolve_ref(user, target, app or base_side.app, filters)
    if base_side.app.pk != target_side.app.pk:
        raise RefError("base and target belong to different apps")
    return base_side, target_side


# ---- category diffs -----------------------------------------------------------------------------


def _count_bytes(counts: Sequence[int], lifespan: str) -> CountBytes:
    p, pb, t, tb = lifespan_counts(counts, lifespan)
    return p + t, pb + tb


def _per_snapshot(value: CountBytes, divisor: int) -> CountBytes:
    if divisor == 1:
        return value
    return round(value[0] / divisor), round(value[1] / divisor)


def _category_counts(side: Side) -> Iterable[tuple]:
    """(category name, persistent, persistent bytes, transient, transient bytes) of a side,
    before dividing a build's sums per snapshot."""
    if side.kind == "snapshot":
        rows = CategoryTotal.objects.filter(snapshot_id=side.snapshot.pk)
    elif side.kind == "generation":
        rows = GenerationCategoryTotal.objects.filter(snapshot_id=side.snapshot.pk)
        if side.generation == BASELINE:
            rows = rows.filter(generation__isnull=True)
        else:
            rows = rows.filter(generation=side.generation)
    elif side.filters:
        # some of the build's snapshots: sum their own totals (the build total has them all)
        sums = {f"sum_{c}": Sum(c) for c in COUNTERS}
        return (
            CategoryTotal.objects.filter(snapshot_id__in=side.snapshot_ids)
            .values("category__name")
            .annotate(**sums)
            .values_list("category__name", *sums)
        )
    else:
        rows = BuildCategoryTotal.objects.filter(build=side.build)
    return rows.values_list("category__name", *COUNTERS)


def category_table(side: Side, lifespan: str = DEFAULT_DIFF_LIFESPAN) -> dict[str, CountBytes]:
    """category -> (count, bytes) of one side under a lifespan filter."""
    return {
        name: _per_snapshot(_count_bytes(counts, lifespan), side.divisor)
        for name, *counts in _category_counts(side)
    }


def diff_rows(base: Side, target: Side, lifespan: str = DEFAULT_DIFF_LIFESPAN) -> list[DiffRow]:
    return diff_categories(category_table(base, lifespan), category_table(target, lifespan))


def diff_json(base: Side, target: Side, lifespan: str = DEFAULT_DIFF_LIFESPAN) -> dict:
    rows = diff_rows(base, target, lifespan)
    summary = summarize_diff(rows)
    summary.update(base=base.as_json(), target=target.as_json(), lifespan=lifespan)
    return {"rows": [r.as_dict() for r in rows], "summary": summary}


# ---- diff call trees ----------------------------------------------------------------------------


def _lifespan_filter(lifespan: str) -> Q:
    """Call-tree rows with something in them under the lifespan filter."""
    persistent = Q(persistent__gt=0) | Q(persistent_bytes__gt=0)
    transient = Q(transient__gt=0) | Q(transient_bytes__gt=0)
    return {"persistent": persistent, "transient": transient}.get(lifespan, persistent | transient)


def _stored_level(side: Side, node: int | None, lifespan: str) -> dict:
    """Children of `node` from the stored call-tree totals, summed over the side's snapshots:
    {node id: (count, bytes, frame id, has children)} (not yet divided)."""
    rows = CallTreeNode.objects.filter(snapshot_id__in=side.snapshot_ids)
    rows = rows.filter(parent_id__isnull=True) if node is None else rows.filter(parent_id=node)
    sums = (
        rows.filter(_lifespan_filter(lifespan))
        .values("node_id", "frame_id")
        .annotate(*[Sum(c) for c in COUNTERS])
    )
    level = {}
    for row in sums:
        counts = [row[f"{c}__sum"] or 0 for c in COUNTERS]
        level[row["node_id"]] = (*_count_bytes(counts, lifespan), row["frame_id"], False)
    if level:
        with_children = set(
            CallTreeNode.objects.filter(
                _lifespan_filter(lifespan),
                snapshot_id__in=side.snapshot_ids,
                parent_id__in=list(level),
            )
            .values_list("parent_id", flat=True)
            .distinct()
        )
        for key in with_children:
            count, size, frame, _ = level[key]
            level[key] = (count, size, frame, True)
    return level


def _generation_tree(side: Side, lifespan: str) -> tuple[dict, dict, dict]:
    """Inclusive totals of one generation's call tree, from its allocation rows:
    (node -> (count, bytes), node -> parent, node -> frame). Cached: the rows never change."""
    stored = int(side.snapshot.created_at.timestamp())  # ids of deleted rows can come back
    key = f"compare:gentree:{side.snapshot.pk}:{stored}:{side.generation}:{lifespan}"
    cached = cache.get(key)
    if cached is not None:
        return cached
    rows = AllocationRow.objects.filter(snapshot_id=side.snapshot.pk, stack_id__isnull=False)
    if side.generation == BASELINE:
        rows = rows.filter(generation__isnull=True)
    else:
        rows = rows.filter(generation=side.generation)
    self_totals = {}
    for row in rows.values("stack_id").annotate(*[Sum(c) for c in COUNTERS]):
        counts = [row[f"{c}__sum"] or 0 for c in COUNTERS]
        value = _count_bytes(counts, lifespan)
        if value != (0, 0):
            self_totals[row["stack_id"]] = value
    parent_of, frame_of = _stack_paths(side.app, set(self_totals))
    result = (inclusive_totals(self_totals, parent_of), parent_of, frame_of)
    cache.set(key, result, TREE_CACHE_SECONDS)
    return result


def _stack_paths(app: App, sites: set[int]) -> tuple[dict, dict]:
    """Parent and frame of every stack node from the sites to their roots, one query per
    depth level (stacks are at most a few hundred frames deep)."""
    parent_of: dict[int, int | None] = {}
    frame_of: dict[int, int] = {}
    wanted = set(sites)
    while wanted:
        found = StackNode.objects.filter(app=app, id__in=list(wanted)).values_list(
            "id", "parent_id", "frame_id"
        )
        wanted = set()
        for node, parent, frame in found:
            parent_of[node], frame_of[node] = parent, frame
            if parent is not None and parent not in parent_of:
                wanted.add(parent)
    return parent_of, frame_of


def _generation_level(side: Side, node: int | None, lifespan: str) -> dict:
    totals, parent_of, frame_of = _generation_tree(side, lifespan)
    if node is not None and node not in totals:
        return {}
    level = tree_level(totals, parent_of, node)
    return {
        key: (value.count, value.bytes, frame_of[key], value.has_children)
        for key, value in level.items()
    }


def _side_level(side: Side, node: int | None, lifespan: str) -> tuple[dict, dict]:
    """({node: TreeTotals} divided per snapshot, {node: frame id}) of one side's level."""
    if side.kind == "generation":
        raw = _generation_level(side, node, lifespan)
    else:
        raw = _stored_level(side, node, lifespan)
    totals, frames = {}, {}
    for key, (count, size, frame, has_children) in raw.items():
        count, size = _per_snapshot((count, size), side.divisor)
        totals[key] = TreeTotals(bytes=size, count=count, has_children=has_children)
        frames[key] = frame
    if node is None:
        # what has no stack is the side's total less its roots, so the roots add up
        total_count, total_bytes = _side_total(side, lifespan)
        rest = (total_count - sum(t.count for t in totals.values()),
                total_bytes - sum(t.bytes for t in totals.values()))  # fmt: skip
        if rest[0] > 0 or rest[1] > 0:
            totals[NO_STACK_KEY] = TreeTotals(bytes=rest[1], count=rest[0])
    return totals, frames


def _side_total(side: Side, lifespan: str) -> CountBytes:
    table = category_table(side, lifespan)
    return sum(v[0] for v in table.values()), sum(v[1] for v in table.values())


def parse_node(text: str | None) -> int | None:
    if text in (None, ""):
        return None
    try:
        return int(text)
    except ValueError:
        raise RefError(f"node {text!r} is not a call-tree node id") from None


def diff_tree_json(
    base: Side,
    target: Side,
    node: int | None,
    lifespan: str = DEFAULT_DIFF_LIFESPAN,
    offset: int = 0,
    limit: int = 100,
) -> dict:
    """The children of `node` (the roots when None) in both sides, largest change first."""
    base_level, base_frames = _side_level(base, node, lifespan)
    target_level, target_frames = _side_level(target, node, lifespan)
    nodes = diff_tree_nodes(base_level, target_level)
    page = nodes[offset : offset + limit]
    frame_ids = {**base_frames, **target_frames}
    frames = {
        f.id: f
        for f in Frame.objects.filter(id__in=[frame_ids[n.key] for n in page if n.key in frame_ids])
    }
    out = []
    for n in page:
        frame = frames.get(frame_ids.get(n.key))
        out.append(
            {
                "id": str(n.key),
                "symbol": (
                    frame_label(frame.symbol, frame.image, frame.offset, frame.address)
                    if frame
                    else NO_STACK_LABEL
                ),
                "image": frame.image if frame else "",
                "system": bool(frame and frame.is_system),
                "base_bytes": n.base_bytes,
                "target_bytes": n.target_bytes,
                "delta_bytes": n.delta_bytes,
                "base_count": n.base_count,
                "target_count": n.target_count,
                "delta_count": n.delta_count,
                "status": n.status,
                "has_children": n.has_children,
            }
        )
    return {
        "node": None if node is None else str(node),
        "base": base.as_json(),
        "target": target.as_json(),
        "lifespan": lifespan,
        "total": len(nodes),
        "offset": offset,
        "nodes": out,
    }


# ---- build compare ------------------------------------------------------------------------------


@dataclass
class BuildComparison:
    base: Build
    target: Build
    base_snapshots: list[int]
    target_snapshots: list[int]
    total: BuildCompareRow  # the whole heap: All Heap & Anonymous VM
    values: list[tuple]  # a row per category as values (diff.ROW_FIELDS), the API's rows
    categories: list[str] | None  # the categories asked for, None for all
    base_summary: BuildSummary = field(repr=False)
    target_summary: BuildSummary = field(repr=False)

    @cached_property
    def rows(self) -> list[BuildCompareRow]:
        """The rows as objects, for pages and the check command (made when first read)."""
        return [build_compare_row(v, self.base_summary, self.target_summary) for v in self.values]


def filter_options(app: App) -> dict[str, list[str]]:
    """The triggers, device models and OS versions seen in the app's snapshots."""
    snapshots = Snapshot.objects.filter(app=app)
    return {
        "triggers": sorted(set(snapshots.values_list("trigger", flat=True))),
        "models": sorted(set(snapshots.values_list("device_model", flat=True)) - {""}),
        "oses": sorted(set(snapshots.values_list("os", flat=True)) - {""}, key=natural_key),
    }


def _snapshot_ids(build: Build, filters: SnapshotFilter) -> list[int]:
    snapshots = filters.apply(Snapshot.objects.filter(build=build)).order_by("pk")
    return list(snapshots.values_list("pk", flat=True))


_collector_lock = threading.Lock()
_collector_pauses = 0
_collector_was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run without CPython's cyclic garbage collector. Build compare makes some 100,000 small
    lists, dicts and records that all live until the answer is sent; the generational collector
    would scan them again and again as they pile up (measured: half the time of the comparison).
    None of them forms a reference cycle, so nothing is left for the collector to find later.
    Counted under a lock, so overlapping requests in threads re-enable it only when the last
    one ends, and only if it was on before."""
    global _collector_pauses, _collector_was_enabled
    with _collector_lock:
        if _collector_pauses == 0:
            _collector_was_enabled = gc.isenabled()
            gc.disable()
        _collector_pauses += 1
    try:
        yield
    finally:
        with _collector_lock:
            _collector_pauses -= 1
            if _collector_pauses == 0 and _collector_was_enabled:
                gc.enable()


def _category_samples(
    snapshot_ids: Sequence[int], categories: Sequence[str] | None
) -> dict[str, PresentSamples]:
    """Per category, (# persistent, persistent bytes) of each of these snapshots in which it has
    persistent allocations (the others count as 0), each list in ascending order. Grouped by
    category id, names looked up once: no join over every row, and no model instances."""
    rows = CategoryTotal.objects.filter(snapshot_id__in=snapshot_ids).filter(
        Q(persistent__gt=0) | Q(persistent_bytes__gt=0)
    )
    names = Category.objects.all()
    if categories is not None:
        names = names.filter(name__in=list(categories))
        rows = rows.filter(category_id__in=names.values("pk"))
    by_id: dict[int, PresentSamples] = {}
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
            .order_by()
        )
        by_id = {cid: (counts, sizes) for cid, counts, sizes in grouped}
    else:
        for cid, count, size in rows.values_list("category_id", "persistent", "persistent_bytes"):
            if cid not in by_id:
                by_id[cid] = ([], [])
            by_id[cid][0].append(count)
            by_id[cid][1].append(size)
        for counts, sizes in by_id.values():
            counts.sort()
            sizes.sort()
    if not by_id:
        return {}
    names = dict(names.filter(pk__in=list(by_id)).values_list("pk", "name"))
    return {names[cid]: samples for cid, samples in by_id.items()}


def _total_tables(snapshot_ids: list[int]) -> dict[int, dict[str, CountBytes]]:
    return {
        sid: {TOTAL_ROW: (count, size)}
        for sid, count, size in Snapshot.objects.filter(pk__in=snapshot_ids).values_list(
            "pk", "persistent", "persistent_bytes"
        )
    }


def _stored_summary(build: Build, snapshot_ids: list[int]) -> BuildSummary | None:
    """The stored summary of the build, if made from these snapshots; its runs of counts are
    read only if a rank test on counts is asked for (nothing shows one)."""
    data = BuildSamples.objects.filter(build=build).values_list("data", flat=True).first()
    summary = None if data is None else unpack_summary(data, snapshot_ids)
    if summary is not None:
        summary.count_source = partial(_stored_count_columns, build, snapshot_ids)
    return summary


def _stored_count_columns(build: Build, snapshot_ids: list[int]) -> tuple:
    """The count runs of the build's stored summary; made again from the totals in the rare
    case that the stored summary was replaced (by one of other snapshots) since it was read."""
    data = BuildSamples.objects.filter(build=build).values_list("counts", flat=True).first()
    columns = None if data is None else unpack_count_columns(data, snapshot_ids)
    if columns is None:
        columns = summarize_build(snapshot_ids, _category_samples(snapshot_ids, None)).count_columns
    return columns


def build_summary(build: Build, snapshot_ids: list[int]) -> BuildSummary:
    """What build compare needs of each category over all the build's snapshots (their ids in
    ascending order): the stored summary when it was made from these snapshots, else one made
    from their totals and stored for the next comparison (a write in a read, as a cache: what
    is stored only ever follows from CategoryTotal, which a stored snapshot never changes)."""
    stored = _stored_summary(build, snapshot_ids)
    if stored is not None:
        return stored
    made = summarize_build(snapshot_ids, _category_samples(snapshot_ids, None))
    services.store_build_summary(build, made)
    return made


def compare_builds(
    base: Build,
    target: Build,
    filters: SnapshotFilter | None = None,
    categories: Sequence[str] | None = None,
) -> BuildComparison:
    """Per category, the persistent bytes and counts per snapshot of each build (snapshots
    chosen by the filters), their deltas and the rank test between the builds. All of a
    build's snapshots: its stored summary; some of them: summarized from their totals."""
    filters = filters or SnapshotFilter()
    categories = [c for c in categories or [] if c] or None
    base_ids, target_ids = _snapshot_ids(base, filters), _snapshot_ids(target, filters)
    total = compare_build_tables(
        _total_tables(base_ids), _total_tables(target_ids), categories=[TOTAL_ROW]
    )[0]
    with collector_paused():
        if filters:
            base_summary = summarize_build(base_ids, _category_samples(base_ids, categories))
            target_summary = summarize_build(target_ids, _category_samples(target_ids, categories))
        else:
            base_summary, target_summary = (
                build_summary(base, base_ids),
                build_summary(target, target_ids),
            )
        values = compare_build_summaries(base_summary, target_summary, categories)
    return BuildComparison(
        base, target, base_ids, target_ids, total, values, categories, base_summary, target_summary
    )


def compare_row_json(row: BuildCompareRow, alpha: float = 0.05) -> dict:
    sizes, counts = row.bytes, row.count
    base, target, test = sizes.base, sizes.target, sizes.test
    return {
        "category": row.category,
        "status": row.status,
        "base_bytes_mean": base.mean,
        "base_bytes_median": base.median,
        "base_bytes_q1": base.q1,
        "base_bytes_q3": base.q3,
        "base_bytes_min": base.minimum,
        "base_bytes_max": base.maximum,
        "target_bytes_mean": target.mean,
        "target_bytes_median": target.median,
        "target_bytes_q1": target.q1,
        "target_bytes_q3": target.q3,
        "target_bytes_min": target.minimum,
        "target_bytes_max": target.maximum,
        "delta_mean_bytes": sizes.delta_mean,
        "delta_median_bytes": sizes.delta_median,
        "base_count_mean": counts.base.mean,
        "base_count_median": counts.base.median,
        "target_count_mean": counts.target.mean,
        "target_count_median": counts.target.median,
        "delta_mean_count": counts.delta_mean,
        "delta_median_count": counts.delta_median,
        "base_snapshots": base.n,
        "target_snapshots": target.n,
        "base_present": row.base_present,
        "target_present": row.target_present,
        "u": test.u,
        "p_value": test.p_value,
        "test": test.method,
        "significant": test.significant(alpha),
    }


def gate_failures(
    comparison: BuildComparison, limit: GrowthLimit, min_delta: float = 0
) -> list[GateFailure]:
    """What the CI gate checks: the chosen categories, or the whole heap and every category."""
    items = gate_items(comparison.values)
    if comparison.categories is None:
        total = comparison.total
        sizes = total.bytes
        whole = (total.category, sizes.base.median, sizes.target.median, sizes.p_value)
        items = chain([whole], items)
    return check_growth_of(items, limit, min_delta)


def failure_json(failure: GateFailure) -> dict:
    return {
        "category": failure.category,
        "base_median_bytes": failure.base_bytes,
        "target_median_bytes": failure.target_bytes,
        "delta_bytes": failure.delta_bytes,
        "allowed_bytes": failure.allowed_bytes,
        "p_value": failure.p_value,
    }


def build_label(build: Build) -> str:
    return f"{build.version}:{build.number}" if build.number else build.version


def comparison_json(
    comparison: BuildComparison,
    filters: SnapshotFilter,
    limit: GrowthLimit | None = None,
    min_delta: float = 0,
    window: slice = slice(None),
) -> dict:
    """The comparison as JSON: `count` categories in all, the rows of those in `window` (the
    biggest growers first), and, with a growth limit, the gate's verdict over all of them."""
    data = {
        "base": {"id": comparison.base.pk, "build": build_label(comparison.base),
                 "snapshots": len(comparison.base_snapshots)},
        "target": {"id": comparison.target.pk, "build": build_label(comparison.target),
                   "snapshots": len(comparison.target_snapshots)},
        "filters": filters.as_json(),
        "total": compare_row_json(comparison.total),
        "count": len(comparison.values),
    }  # fmt: skip
    with collector_paused():
        # the values go on with the two records that BuildCompareRow objects are made from
        data["rows"] = [dict(zip(ROW_FIELDS, v, strict=False)) for v in comparison.values[window]]
    if limit is not None:
        failures = gate_failures(comparison, limit, min_delta)
        data.update(
            max_growth=str(limit),
            min_delta=min_delta,
            failures=[failure_json(f) for f in failures],
        )
        data["pass"] = not failures
    return data


def comparison_answer(
    base: Build,
    target: Build,
    filters: SnapshotFilter,
    categories: Sequence[str] | None = None,
    limit: GrowthLimit | None = None,
    min_delta: float = 0,
    window: slice = slice(None),
) -> dict:
    """`comparison_json` of `compare_builds`, the collector paused throughout: the comparison
    is dropped before it runs again, so it never scans the 100,000 objects of a large one (the
    answer's rows hold only numbers and strings, which it does not track)."""
    with collector_paused():
        comparison = compare_builds(base, target, filters, categories)
        data = comparison_json(comparison, filters, limit, min_delta, window)
        del comparison  # freed here by reference counting, while the collector is still off
    return data


def default_build_pair(app: App) -> tuple[Build | None, Build | None]:
    """The last two builds with snapshots, in release order."""
    with_snapshots = set(Snapshot.objects.filter(app=app).values_list("build_id", flat=True))
    builds = [b for b in builds_in_release_order(app) if b.pk in with_snapshots]
    if not builds:
        return None, None
    if len(builds) == 1:
        return builds[0], builds[0]
    return builds[-2], builds[-1]


def build_in_app(app: App, build_id: int | str | None) -> Build | None:
    try:
        return Build.objects.get(app=app, pk=int(build_id))
    except (Build.DoesNotExist, TypeError, ValueError):
        return None


def find_build_spec(app: App, text: str) -> Build:
    """A build named `<version>:<number>` or `<version>`; RefError when there is none."""
    version, number = parse_build_spec(text or "")
    build = find_build(app, version, number)
    if build is None:
        raise RefError(f"no single build {text!r} in {app.bundle_id}")
    return build


# ---- trends -------------------------------------------------------------------------------------


@dataclass
class TrendPoint:
    build: Build
    snapshots: int
    total: Spread
    categories: dict[str, Spread]


def trends(
    app: App, categories: Iterable[str] = (), filters: SnapshotFilter | None = None
) -> list[TrendPoint]:
    """Per build in release order (builds without snapshots left out): persistent bytes per
    snapshot of the whole heap and of each chosen category (0 in a snapshot without it)."""
    filters = filters or SnapshotFilter()
    categories = [c for c in categories if c]
    snapshots = filters.apply(Snapshot.objects.filter(app=app))
    per_build: dict[int, dict[int, int]] = defaultdict(dict)
    for sid, build_id, size in snapshots.values_list("pk", "build_id", "persistent_bytes"):
        per_build[build_id][sid] = size
    per_category: dict[tuple[int, str], int] = {}
    if categories:
        rows = CategoryTotal.objects.filter(
            snapshot_id__in=snapshots.values("pk"), category__name__in=categories
        )
        for sid, name, size in rows.values_list(
            "snapshot_id", "category__name", "persistent_bytes"
        ):
            per_category[(sid, name)] = size
    points = []
    for build in builds_in_release_order(app):
        sizes = per_build.get(build.pk)
        if not sizes:
            continue
        points.append(
            TrendPoint(
                build=build,
                snapshots=len(sizes),
                total=describe(list(sizes.values())),
                categories={
                    name: describe([per_category.get((sid, name), 0) for sid in sizes])
                    for name in categories
                },
            )
        )
    return points


def top_categories(app: App, limit: int = 200) -> list[str]:
    """Category names by persistent bytes over all builds, for the trends picker."""
    sums = (
        BuildCategoryTotal.objects.filter(build__app=app)
        .values("category__name")
        .annotate(total=Sum("persistent_bytes"))
        .order_by("-total", "category__name")[:limit]
    )
    return [row["category__name"] for row in sums]


def known_categories(app: App, names: Iterable[str]) -> list[str]:
    names = [n for n in names if n]
    found = set(Category.objects.filter(app=app, name__in=names).values_list("name", flat=True))
    return [n for n in names if n in found]


# ---- pages --------------------------------------------------------------------------------------


def generations_of(snapshot: Snapshot) -> list[Generation]:
    return list(Generation.objects.filter(snapshot=snapshot).order_by("index"))


def _mark_after(marks: list[int], index: int | str) -> int | str:
    following = [m for m in marks if index == BASELINE or m > index]
    return following[0] if following else index


def _mark_before(marks: list[int], index: int | str) -> int | str:
    if index == BASELINE:
        return BASELINE
    previous = [m for m in marks if m < index]
    return previous[-1] if previous else BASELINE


def consecutive_generations(
    snapshot: Snapshot, base: str | None, target: str | None
) -> tuple[int | str, int | str]:
    """The generations to diff: as asked; a missing side is the neighbour of the other; with
    neither, the last generation against the one before it (or the baseline before the first
    mark)."""
    marks = [g.index for g in generations_of(snapshot)]
    base_index = None if base in (None, "") else parse_generation_index(base)
    target_index = None if target in (None, "") else parse_generation_index(target)
    if target_index is None:
        if base_index is None:
            target_index = marks[-1] if marks else BASELINE
        else:
            target_index = _mark_after(marks, base_index)
    if base_index is None:
        base_index = _mark_before(marks, target_index)
    return base_index, target_index


def recent_snapshots(
    app: App, limit: int = 300, include: Iterable[Snapshot] = ()
) -> list[Snapshot]:
    """The app's latest snapshots for the pickers, with those of `include` (the ones chosen)
    even when they are older."""
    snapshots = list(
        Snapshot.objects.filter(app=app).select_related("build").order_by("-captured_at")[:limit]
    )
    listed = {s.pk for s in snapshots}
    extra = [s for s in include if s is not None and s.pk not in listed]
    if extra:
        snapshots = sorted([*snapshots, *extra], key=lambda s: (s.captured_at, s.pk), reverse=True)
    return snapshots


@dataclass(frozen=True)
class Partner:
    snapshot: Snapshot
    reason: str  # why this one, for the page: "the last snapshot of the same device and …"


def partner_snapshot(snapshot: Snapshot, before: bool = True) -> Partner | None:
    """What to diff `snapshot` with when only it is chosen: the closest snapshot captured before
    it (after it, with before=False), preferring the same scenario (device and trigger, then
    device model and trigger), then one of the same build, then any; when there is none on that
    side, the latest other snapshot of the app. None when the app has no other snapshot."""
    others = Snapshot.objects.filter(app_id=snapshot.app_id).exclude(pk=snapshot.pk)
    others = others.select_related("build")
    if before:
        side = others.filter(captured_at__lt=snapshot.captured_at).order_by("-captured_at", "-pk")
    else:
        side = others.filter(captured_at__gt=snapshot.captured_at).order_by("captured_at", "pk")
    tiers = []
    if snapshot.device_id:
        same_device = Q(device_id=snapshot.device_id, trigger=snapshot.trigger)
        tiers.append((same_device, " of the same device and trigger"))
    if snapshot.device_model:
        same_model = Q(device_model=snapshot.device_model, trigger=snapshot.trigger)
        tiers.append((same_model, " of the same device model and trigger"))
    tiers += [(Q(build_id=snapshot.build_id), " of the same build"), (Q(), "")]
    when = "before" if before else "after"
    for condition, alike in tiers:
        found = side.filter(condition).first()
        if found is not None:
            which = "last" if before else "first"
            return Partner(found, f"the {which} snapshot{alike} captured {when} #{snapshot.pk}")
    latest = others.order_by("-captured_at", "-pk").first()
    if latest is None:
        return None
    return Partner(latest, f"the latest other snapshot; none was captured {when} #{snapshot.pk}")


def compare_url(app: App, base: Build, target: Build) -> str:
    return reverse("compare:build_compare", args=[app.pk]) + f"?base={base.pk}&target={target.pk}"
