"""Reads of the snapshots domain. Every statistics read comes from pre-aggregated tables
(CategoryTotal, GenerationCategoryTotal, BuildCategoryTotal), never from allocation rows."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

import msgspec
from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import (
    BigIntegerField,
    Count,
    F,
    Max,
    OrderBy,
    Q,
    QuerySet,
    Sum,
    TextField,
    Value,
)
from django.db.models.functions import Lower

from memdash.allocations.logic.analysis import (
    BASELINE,
    SUMMARY_ALL,
    SUMMARY_HEAP,
    SUMMARY_VM,
)
from memdash.allocations.logic.calltree.tree import FrameFields, FrameInfo, frame_fields
from memdash.allocations.models import (
    BuildCategoryTotal,
    CategoryTotal,
    Frame,
    GenerationCategoryTotal,
    Snapshot,
)
from memdash.core.models import App, Build
from memdash.core.reads.apps import apps_for_user, builds_in_release_order
from memdash.core.reads.where_in import where_in_parts

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

# A statistics row is the dict the API answers (and the templates read): category, kind,
# persistent, persistent_bytes, transient, transient_bytes, total, total_bytes,
# responsible_caller, responsible_frame (`stat_row`). Plain dicts of numbers and strings.
StatRow = dict[str, Any]


class StatFrame(msgspec.Struct, gc=False):
    """A responsible caller's frame in a statistics row: `calltree.frame_fields`'s keys, in
    its order."""

    image: str
    system: bool
    symbolicated: bool
    file: str
    line: int | None
    inlined: bool


class StatRecord(msgspec.Struct, gc=False):
    """A statistics row of a snapshot's table as read from the database: `stat_row`'s keys,
    in its order, encoded to the same JSON. Untracked by the cyclic garbage collector (gc=False;
    a row dict holding its frame's dict is tracked): every category of a snapshot is 5,000 of
    them, and as dicts they filled the collector's oldest generation, whose full collections
    then made the slowest requests."""

    category: str
    kind: str
    persistent: int
    persistent_bytes: int
    transient: int
    transient_bytes: int
    total: int
    total_bytes: int
    responsible_caller: str
    responsible_frame: StatFrame | None


# The per-category totals of a statistics table: a snapshot's, a generation's or a build's.
type CategoryTotals = (
    QuerySet[CategoryTotal] | QuerySet[GenerationCategoryTotal] | QuerySet[BuildCategoryTotal]
)


def stat_row(
    category: str, kind: str, p: int, pb: int, t: int, tb: int, caller: str = "",
    caller_frame: FrameFields | None = None,
) -> StatRow:  # fmt: skip
    """A row; `caller_frame` is the responsible caller's frame (its image, whether it is named,
    file, line, inlined), None without a caller or for one stored before frames were kept."""
    return {
        "category": category,
        "kind": kind,
        "persistent": p,
        "persistent_bytes": pb,
        "transient": t,
        "transient_bytes": tb,
        "total": p + t,
        "total_bytes": pb + tb,
        "responsible_caller": caller,
        "responsible_frame": caller_frame,
    }


def summary_label(name: str, search: str = "") -> str:
    """A summary row's name; under a category search it sums only what matches, and says so."""
    return f"{name} (matching “{search}”)" if search else name


def summary_rows(heap: Sequence[int], vm: Sequence[int], search: str = "") -> list[StatRow]:
    """The three summary rows of Instruments' statistics table from the (p, pb, t, tb) sums of
    the heap and VM categories (those matching `search`, when searching)."""
    both = [h + v for h, v in zip(heap, vm, strict=True)]

    def row(name: str, counts: Sequence[int]) -> StatRow:
        p, pb, t, tb = counts
        return stat_row(summary_label(name, search), "summary", p, pb, t, tb)

    return [row(SUMMARY_ALL, both), row(SUMMARY_HEAP, heap), row(SUMMARY_VM, vm)]


def _kept(lifespan: str) -> tuple[bool, bool]:
    """Whether (persistent, transient) allocations count under a lifespan filter."""
    return lifespan != "transient", lifespan != "persistent"


ZERO = Value(0, output_field=BigIntegerField())
# Tables without a responsible caller answer "" in its place (and no frame).
NO_CALLER = Value("", output_field=TextField())
# The sort columns of the table and the annotation each sorts by (see `StatisticsTable`).
SORT_COLUMNS = {
    "category": "sort_name",
    "persistent_bytes": "s_pb",
    "persistent": "s_p",
    "transient": "s_t",
    "transient_bytes": "s_tb",
    "total_bytes": "s_total_bytes",
    "total": "s_total",
}


def _stores_total_bytes(totals: CategoryTotals) -> bool:
    return any(f.name == "total_bytes" for f in totals.model._meta.concrete_fields)


class StatisticsTable:
    """A statistics table (one row per category of a snapshot, a generation or a build) under
    a lifespan filter, a category search and a sort. The database filters, sorts and pages it:
    a page of 200 rows out of 10,000 categories reads 200 rows into Python, not 10,000. Lazy and
    sliceable, so Django's Paginator pages it like a queryset; `summary` and `count` come from
    one aggregate query. The summary rows follow the search, as Instruments' do: under one they
    sum the matching categories, and their names say so."""

    def __init__(
        self,
        totals: CategoryTotals,
        caller: str | None = None,
        lifespan: str = "all",
        search: str = "",
        sort: str = "total_bytes",
        descending: bool = True,
        stored_summary: dict[str, dict[str, list[int]]] | None = None,
    ) -> None:
        keep_persistent, keep_transient = _kept(lifespan)
        self._stored_summary = (stored_summary or {}).get(lifespan)
        self.lifespan = lifespan
        self.search = search
        kept = Q()
        if keep_persistent:
            kept |= Q(persistent__gt=0) | Q(persistent_bytes__gt=0)
        if keep_transient:
            kept |= Q(transient__gt=0) | Q(transient_bytes__gt=0)
        self._totals = totals.filter(kept)  # categories left under the lifespan filter
        self._caller = F(caller) if caller else NO_CALLER
        self._with_frame = bool(caller)
        self._by_name = sort == "category"
        column = SORT_COLUMNS.get(sort, "s_total_bytes")
        if column == "s_total_bytes" and lifespan == "all" and _stores_total_bytes(totals):
            column = "total_bytes"  # the same numbers, read in order from an index
        order = F(column)
        self._order: list[OrderBy | str] = [
            order.desc() if descending else order.asc(),
            "category__name",
            "pk",
        ]
        self._count: int | None = None

    def _rows(self) -> QuerySet[Any]:  # CategoryTotals with the s_* annotations
        keep_persistent, keep_transient = _kept(self.lifespan)
        rows = self._totals.annotate(
            s_p=F("persistent") if keep_persistent else ZERO,
            s_pb=F("persistent_bytes") if keep_persistent else ZERO,
            s_t=F("transient") if keep_transient else ZERO,
            s_tb=F("transient_bytes") if keep_transient else ZERO,
        ).annotate(
            s_total=F("s_p") + F("s_t"), s_total_bytes=F("s_pb") + F("s_tb"),
            s_caller=self._caller,
        )  # fmt: skip
        if self._by_name:
            rows = rows.annotate(sort_name=Lower("category__name"))
        if self.search:
            rows = rows.filter(category__name__icontains=self.search)
        return rows.order_by(*self._order)

    @cached_property
    def _per_kind(self) -> dict[str, tuple[int, list[int]]]:
        """kind: (categories, [p, pb, t, tb]) over every category under the lifespan filter
        (matching the search, if any): stored at ingest (`analysis.table_summary`) for the
        whole table, or summed here."""
        if self._stored_summary and not self.search:
            return {kind: (acc[0], acc[1:]) for kind, acc in self._stored_summary.items()}
        keep_persistent, keep_transient = _kept(self.lifespan)
        totals = self._totals
        if self.search:
            totals = totals.filter(category__name__icontains=self.search)
        out = {}
        for kind, n, p, pb, t, tb in (
            totals.values_list("category__kind")
            .annotate(Count("pk"), *(Sum(f) for f in COUNTER_FIELDS))
            .order_by()
        ):
            if not keep_persistent:
                p = pb = 0
            if not keep_transient:
                t = tb = 0
            out[kind] = (n, [p, pb, t, tb])
        return out

    @cached_property
    def summary(self) -> list[StatRow]:
        empty = (0, [0, 0, 0, 0])
        return summary_rows(
            self._per_kind.get("heap", empty)[1], self._per_kind.get("vm", empty)[1], self.search
        )

    def count(self) -> int:
        """Categories listed (those matching the search, if any)."""
        if self._count is None:
            self._count = sum(n for n, _ in self._per_kind.values())
        return self._count

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, index: slice) -> list[StatRow]:
        if not isinstance(index, slice):
            raise TypeError("a statistics table is read by slices (pages)")
        rows: list[StatRow] = msgspec.to_builtins(self.records(index))  # keys in field order
        return rows

    def records(self, index: slice) -> list[StatRecord]:
        """A page of the table as records: what the API encodes as they are, and what the
        table's dicts (`[...]`) are made from."""
        columns = ["category__name", "category__kind", "s_p", "s_pb", "s_t", "s_tb", "s_caller"]
        if not self._with_frame:
            return [
                StatRecord(name, kind, p, pb, t, tb, p + t, pb + tb, caller, None)
                for name, kind, p, pb, t, tb, caller in _fetch(
                    self._rows().values_list(*columns)[index]
                )
            ]
        page = _fetch(self._rows().values_list(*columns, "responsible_frame_id")[index])
        frames = _stat_frames({row[-1] for row in page} - {None})
        return [
            StatRecord(name, kind, p, pb, t, tb, p + t, pb + tb, caller, frames.get(fid))
            for name, kind, p, pb, t, tb, caller, fid in page
        ]

    def all(self) -> list[StatRow]:
        return self[:]


def _fetch(rows: QuerySet[Any]) -> list[tuple[Any, ...]]:
    """The rows of a `values_list` query as the database driver answers them, in its columns'
    order: Django's row-by-row iteration and converters cost as much as the query itself for
    every category of a snapshot. Only plain columns are read this way: numbers and text need
    no converter, and booleans come as bools from either driver (Django has SQLite's `bool`
    columns converted by the driver itself)."""
    try:
        sql, params = rows.query.get_compiler(using=rows.db).as_sql()
    except EmptyResultSet:  # an empty slice, e.g. the one page of an empty table
        return []
    with connections[rows.db].cursor() as cursor:
        cursor.execute(sql, params)
        page: list[tuple[Any, ...]] = cursor.fetchall()
    return page


FRAME_COLUMNS = ("id", "symbol", "image", "is_system", "file", "line", "inlined")


def _frame_rows(frame_ids: set[int]) -> list[tuple[Any, ...]]:
    """The frames with these ids as rows of FRAME_COLUMNS, in one query (by one array of ids on
    PostgreSQL)."""
    ids = list(frame_ids)
    rows: list[tuple[Any, ...]] = []
    for part in where_in_parts("id", ids):
        rows += _fetch(Frame.objects.filter(part).values_list(*FRAME_COLUMNS))
    return rows


def _stat_frames(frame_ids: set[int]) -> dict[int, StatFrame]:
    """The responsible callers' frames of a page, by id. Not joined to the page's query: the
    planner then hashes every frame of the app to find a few thousand (most of the page's query,
    measured), and an app's frames only grow."""
    return {
        fid: StatFrame(image, system, bool(symbol), file, line, inlined)
        for fid, symbol, image, system, file, line, inlined in _frame_rows(frame_ids)
    }


COUNTER_FIELDS = ("persistent", "persistent_bytes", "transient", "transient_bytes")


def caller_frame(
    fid: int, symbol: str, image: str, is_system: bool, file: str, line: int | None, inlined: bool
) -> FrameFields:
    return frame_fields(
        FrameInfo(symbol, image, is_system=is_system, file=file, line=line, inlined=inlined)
    )


def caller_frames(frame_ids: set[int]) -> dict[int, FrameFields]:
    """The frames of a page's responsible callers, by id."""
    return {row[0]: caller_frame(*row) for row in _frame_rows(frame_ids)}


def snapshot_totals(
    snapshot: Snapshot, generation: int | str | None = None
) -> QuerySet[CategoryTotal] | QuerySet[GenerationCategoryTotal]:
    """The per-category totals of a snapshot; `generation` an index, BASELINE, or None for
    all. The app named on both sides of their join with the categories: on Citus the query then
    goes to the app's worker (by the snapshot alone it repartitioned both tables: seconds a
    page, bench/citus.py)."""
    mine = {"app_id": snapshot.app_id, "snapshot_id": snapshot.pk,
            "category__app_id": snapshot.app_id}  # fmt: skip
    if generation is None:
        return CategoryTotal.objects.filter(**mine)
    totals = GenerationCategoryTotal.objects.filter(**mine)
    if generation == BASELINE:
        return totals.filter(generation__isnull=True)
    return totals.filter(generation=int(generation))


def snapshot_statistics(
    snapshot: Snapshot,
    lifespan: str = "all",
    generation: int | str | None = None,
    search: str = "",
    sort: str = "total_bytes",
    descending: bool = True,
) -> StatisticsTable:
    """The statistics table of a snapshot (of one generation of it, if given), with the
    responsible callers when it is the whole snapshot."""
    totals = snapshot_totals(snapshot, generation)
    if generation is not None:
        return StatisticsTable(totals, None, lifespan, search, sort, descending)
    return StatisticsTable(
        totals, "responsible_caller", lifespan, search, sort, descending, snapshot.table_summary
    )


def snapshots_for_user(user: User | AnonymousUser) -> QuerySet[Snapshot]:
    return Snapshot.objects.filter(app__in=apps_for_user(user))


def snapshot_for_user(user: User | AnonymousUser, snapshot_id: int) -> Snapshot:
    """The snapshot, if the user may see it; else Snapshot.DoesNotExist (views answer 404)."""
    try:
        return snapshots_for_user(user).select_related("app", "build", "device").get(pk=snapshot_id)
    except Snapshot.DoesNotExist:
        raise Snapshot.DoesNotExist("No such snapshot") from None


def build_rows(app: App) -> list[dict[str, Any]]:
    """The builds of an app in release order with snapshot count, last upload and the median
    persistent bytes of their snapshots (read from the one-row-per-snapshot totals)."""
    builds = (
        Build.objects.filter(app=app)
        .annotate(snapshot_count=Count("snapshots"), last_upload=Max("snapshots__created_at"))
        .order_by("pk")
    )
    per_build: dict[int, list[int]] = {}
    for build_id, pb in Snapshot.objects.filter(app=app).values_list(
        "build_id", "persistent_bytes"
    ):
        per_build.setdefault(build_id, []).append(pb)
    out = []
    for build in sorted(builds, key=lambda b: b.release_key):
        values = sorted(per_build.get(build.pk, []))
        median = values[len(values) // 2] if values else 0
        out.append({"build": build, "median_persistent_bytes": median})
    return out


def builds_with_snapshots(app: App) -> list[Build]:
    """The app's builds that have snapshots, in release order."""
    with_snapshots = set(Snapshot.objects.filter(app=app).values_list("build_id", flat=True))
    return [b for b in builds_in_release_order(app) if b.pk in with_snapshots]


def previous_build_with_snapshots(build: Build) -> Build | None:
    """The build released before `build` that has snapshots (what it is compared with)."""
    earlier = [b for b in builds_with_snapshots(build.app) if b.release_key < build.release_key]
    return earlier[-1] if earlier else None


def build_snapshots(
    build: Build, trigger: str = "", model: str = "", os: str = ""
) -> QuerySet[Snapshot]:
    snapshots = Snapshot.objects.filter(build=build).select_related("device")
    if trigger:
        snapshots = snapshots.filter(trigger=trigger)
    if model:
        snapshots = snapshots.filter(device_model=model)
    if os:
        snapshots = snapshots.filter(os=os)
    return snapshots
