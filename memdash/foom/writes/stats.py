"""The pre-aggregated counts of runs per build and per build and day, which the FOOM pages read
instead of counting runs: rewritten from the runs of each build whose runs or classes changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from itertools import batched
from typing import Any

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from memdash.core.models import Build
from memdash.foom.logic.classify import CLASSES, EXCLUDED, FOOM, FOREGROUND, PENDING
from memdash.foom.models import BuildDayFoomStats, BuildFoomStats, Session
from memdash.foom.writes.classify import CHUNK

UNCOUNTED = (PENDING, EXCLUDED)


def recompute_build_stats(build_ids: Iterable[int]) -> None:
    """Rewrite BuildFoomStats and BuildDayFoomStats of these builds from their sessions.

    The build rows are locked first (FOR NO KEY UPDATE, which does not block inserts that
    reference them), in id order, so two uploads recomputing the same build take turns, and the
    second one counts the first one's runs.
    """
    ids = sorted({int(pk) for pk in build_ids})
    if not ids:
        return
    now = timezone.now()
    with transaction.atomic():
        for batch in batched(ids, CHUNK):
            _recompute_batch(batch, now)


def _recompute_batch(batch: Sequence[int], now: datetime) -> None:
    app_of = dict(
        Build.objects.select_for_update(no_key=True)
        .filter(pk__in=batch)
        .order_by("pk")
        .values_list("pk", "app_id")
    )
    per_day = _count_sessions(batch, by_day=True)
    per_build = _count_sessions(batch, by_day=False)
    BuildFoomStats.objects.filter(build_id__in=batch).delete()
    BuildDayFoomStats.objects.filter(build_id__in=batch).delete()
    BuildFoomStats.objects.bulk_create(
        [
            BuildFoomStats(build_id=build_id, app_id=app_of[build_id], updated_at=now, **counts)
            for (build_id,), counts in per_build.items()
            if build_id in app_of
        ],
        batch_size=CHUNK,
    )
    BuildDayFoomStats.objects.bulk_create(
        [
            BuildDayFoomStats(
                build_id=build_id,
                day=day,
                app_id=app_of[build_id],
                updated_at=now,
                **counts,
            )
            for (build_id, day), counts in per_day.items()
            if build_id in app_of
        ],
        batch_size=CHUNK,
    )


def _count_sessions(
    build_ids: Sequence[int], by_day: bool
) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Counts per build (or per build and day): one GROUP BY over the builds' runs, every count
    a filtered aggregate of the same scan."""
    keys = ["build_id", "started_day"] if by_day else ["build_id"]
    counted = ~Q(classification__in=UNCOUNTED)
    foom = Q(classification=FOOM)
    aggregates = {
        "sessions": Count("pk"),
        "classified": Count("pk", filter=counted),
        "rate_sessions": Count("pk", filter=counted & Q(end_state=FOREGROUND)),
        "foom": Count("pk", filter=foom),
        "devices": Count("device_id", distinct=True),
        "classified_devices": Count("device_id", distinct=True, filter=counted),
        "foom_devices": Count("device_id", distinct=True, filter=foom),
        **{f"class_{c}": Count("pk", filter=Q(classification=c)) for c in CLASSES},
    }
    runs = Session.objects.filter(build_id__in=build_ids).order_by()
    counts: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in runs.values(*keys).annotate(**aggregates):
        entry = {name: row[name] for name in aggregates if not name.startswith("class_")}
        entry["classes"] = {c: row[f"class_{c}"] for c in CLASSES if row[f"class_{c}"]}
        counts[tuple(row[k] for k in keys)] = entry
    return counts
