"""Reads of a build's statistics tables made ahead (`models.BuildView`; selectors: reads only).

`stored_table` reads the table the build page shows for the whole build or one filter, under a
lifespan filter, when one was made (by `writes.build_views`, queued on every stored snapshot);
`signature` says whether it was made from the snapshots the filter keeps now. `build_columns`
reads a build's per-snapshot category totals as the columns `logic.build_views` makes the
tables from.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import orjson
from django.db import connection
from django.db.models import Count, Max, Sum

from memdash.allocations.logic.build_views import BuildColumns
from memdash.allocations.models import BuildView, Category, CategoryTotal, Snapshot
from memdash.allocations.reads.snapshots import build_snapshots
from memdash.core.models import Build

_CHUNK = 100_000  # totals fetched at a time


def view_key(trigger: str = "", model: str = "", os: str = "") -> tuple[str, str] | None:
    """The (filter, value) a stored table is kept under for these filters: ("", "") for none,
    None for two or more at once (not made ahead: read from the totals)."""
    chosen = [(name, value) for name, value in (("trigger", trigger), ("model", model),
              ("os", os)) if value]  # fmt: skip
    if len(chosen) > 1:
        return None
    return chosen[0] if chosen else ("", "")


def signature(build: Build, trigger: str = "", model: str = "", os: str = "") -> tuple[int, str]:
    """(how many, a name of) the snapshots of the build these filters keep: their number, the
    sum of their ids and the newest storing time change with any snapshot stored or deleted."""
    found = (
        build_snapshots(build, trigger, model, os)
        .select_related(None)
        .order_by()
        .aggregate(n=Count("id"), ids=Sum("id"), latest=Max("created_at"))
    )
    return int(found["n"]), signature_of(int(found["n"]), found["ids"] or 0, found["latest"])


def signature_of(count: int, id_sum: int, latest: datetime | None) -> str:
    return f"{count}:{id_sum}:{latest.timestamp() if latest is not None else 0:.6f}"


@dataclass
class BuildSnapshots:
    """The build's snapshots as their tables are made from them, in id order."""

    ids: list[int]
    attributes: list[tuple[str, str, str]]  # (trigger, model, OS)
    stored: list[datetime]

    def signatures(self, keys: dict[tuple[str, str], Any]) -> dict[tuple[str, str], str]:
        """The signature of the snapshots of each (filter, value) key (`filter_keys`)."""
        out = {}
        for key, chosen in keys.items():
            picked = [int(i) for i in chosen]
            out[key] = signature_of(
                len(picked), sum(self.ids[i] for i in picked),
                max((self.stored[i] for i in picked), default=None),
            )  # fmt: skip
        return out


def build_snapshot_list(build: Build) -> BuildSnapshots:
    rows = list(
        Snapshot.objects.filter(build=build)
        .order_by("pk")
        .values_list("pk", "trigger", "device_model", "os", "created_at")
    )
    return BuildSnapshots(
        [r[0] for r in rows], [(r[1], r[2], r[3]) for r in rows], [r[4] for r in rows]
    )


@dataclass
class StoredTable:
    """A table made ahead: its snapshots' number, summary rows and category rows (largest total
    bytes per snapshot first), and whether it was made from the snapshots the filter keeps now."""

    snapshots: int
    summary: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    current: bool
    made_at: Any


def stored_table(
    build: Build, key: tuple[str, str], lifespan: str, current_signature: str
) -> StoredTable | None:
    found = (
        BuildView.objects.filter(
            app_id=build.app_id, build=build, filter=key[0], value=key[1], lifespan=lifespan
        )
        .values_list("signature", "data", "made_at")
        .first()
    )
    if found is None:
        return None
    made_from, data, made_at = found
    table = orjson.loads(zlib.decompress(data))
    return StoredTable(
        table["snapshots"], table["summary"], table["rows"], made_from == current_signature,
        made_at,
    )  # fmt: skip


def build_columns(build: Build, snapshots: BuildSnapshots) -> BuildColumns:
    """The per-snapshot category totals of these snapshots of the build, as columns (those of
    a snapshot stored since the list was read are left out)."""
    ids = np.array(snapshots.ids, dtype=np.int64)
    categories = list(
        Category.objects.filter(app_id=build.app_id)
        .order_by("pk")
        .values_list("pk", "name", "kind")
    )
    category_ids = np.array([c[0] for c in categories], dtype=np.int64)
    callers: dict[tuple[str, int | None], int] = {}
    parts: list[tuple[np.ndarray, ...]] = []
    # the app named on both sides: on Citus the query goes to the one worker that has the app
    totals = CategoryTotal.objects.filter(
        app_id=build.app_id, snapshot__app_id=build.app_id, snapshot__build_id=build.pk
    ).values_list(
        "snapshot_id", "category_id", "persistent", "persistent_bytes", "transient",
        "transient_bytes", "responsible_caller", "responsible_frame_id",
    ).order_by()  # fmt: skip
    sql, params = totals.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        while chunk := cursor.fetchmany(_CHUNK):
            sid, cid, p, pb, t, tb, label, frame = zip(*chunk, strict=True)
            caller = np.array(
                [
                    callers.setdefault((lb, fr), len(callers)) if lb else -1
                    for lb, fr in zip(label, frame, strict=True)
                ],
                dtype=np.int64,
            )
            given = np.array(sid, dtype=np.int64)
            at = np.minimum(np.searchsorted(ids, given), max(len(ids) - 1, 0))
            known = ids[at] == given if len(ids) else np.zeros(len(given), dtype=bool)
            parts.append(
                (
                    at[known],
                    np.searchsorted(category_ids, np.array(cid, dtype=np.int64))[known],
                    np.array([p, pb, t, tb], dtype=np.int64).T[known],
                    caller[known],
                )
            )
    # callers in the order ties are broken (label, then frame): their indexes renumbered
    ordered = sorted(callers, key=lambda k: (k[0], k[1] or 0))
    rank = np.zeros(max(len(callers), 1) + 1, dtype=np.int64)
    for position, named in enumerate(ordered):
        rank[callers[named]] = position
    rank[-1] = -1  # index -1 (no caller) stays -1
    empty = np.zeros(0, dtype=np.int64)
    return BuildColumns(
        snapshots=len(snapshots.ids),
        snapshot=np.concatenate([p[0] for p in parts]) if parts else empty,
        category=np.concatenate([p[1] for p in parts]) if parts else empty,
        counts=np.concatenate([p[2] for p in parts]) if parts else np.zeros((0, 4), np.int64),
        caller=rank[np.concatenate([p[3] for p in parts])] if parts else empty,
        names=[c[1] for c in categories],
        kinds=[c[2] for c in categories],
        callers=ordered,
    )
