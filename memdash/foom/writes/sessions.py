"""Writes of the FOOM domain that other code calls: store uploaded runs, classify them, keep the
per-build counts, delete runs with their app or build.

The order of work for an upload (in one transaction; the steps live in `storing.py`, the
classification of stored runs in `classifying.py`, the counts in `stats.py`):
1. resolve builds and devices in bulk, read the stored copies of the uploaded runs;
2. upsert the runs whose facts changed (a re-upload that says nothing new writes nothing; an
   absent `end` never erases one that arrived before), each with the result it gets against the
   next run of the same upload, which is its final result when uploads come in time order;
3. classify what the upload can have changed: the runs themselves, their predecessors on the
   device (whose successor may now be known or be another run), and, for a run that moved in
   time or to another device, its old predecessor; plus the app's runs whose grace period ran
   out; store only the results that differ from the stored ones;
4. recompute the counts of every build whose runs or classes changed.

An upload of N runs costs a fixed number of statements per 2,000 runs, never one per run, and
the rows travel as plain tuples (`memdash.core.writes.bulk`), not as model instances.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from memdash.core.logic.collector import paused_gc
from memdash.core.models import App, Build
from memdash.core.writes.transactions import without_jit
from memdash.core.writes.uploads import Progress, no_progress
from memdash.foom.logic.classify import Classification, classify_session
from memdash.foom.logic.reports import SessionReport
from memdash.foom.models import Session, run_facts_from_values
from memdash.foom.writes.classify import (
    CHUNK,
    RUN_VALUES,
    Run,
    classify_expired,
    classify_written,
    is_grace_passed,
    neighbour_pks,
    run_of,
    store_classifications,
)
from memdash.foom.writes.exits import rematch_exits
from memdash.foom.writes.stats import recompute_build_stats
from memdash.foom.writes.storing import (
    StoreOutcome,
    changed_runs,
    count_reclassified,
    resolve_builds,
    resolve_devices,
    stored_runs,
    write_runs,
)


def store_sessions(
    app: App,
    reports: Sequence[SessionReport],
    received_at: datetime | None = None,
    progress: Progress = no_progress,
    now: datetime | None = None,
) -> StoreOutcome:
    """Upsert checked runs of `app`, classify what they made classifiable, update the counts."""
    now = now or timezone.now()
    received_at = received_at or now
    outcome = StoreOutcome(sessions=len(reports))
    if not reports:
        return outcome
    with paused_gc(), transaction.atomic():
        without_jit()
        progress("builds and devices", 0.05)
        builds = resolve_builds(app, reports)
        devices = resolve_devices(app, reports)
        stored = stored_runs(app, [r.id for r in reports])

        progress("sessions", 0.2)
        rows, moved_pks = changed_runs(reports, builds, devices, stored, received_at, outcome)
        # Their predecessors before the move: those runs lose their successor.
        old_predecessors = neighbour_pks(moved_pks, before=True)
        written = write_runs(app, rows, received_at, now)

        progress("classification", 0.6)
        runs = {run.pk: run for _, run in written}
        corrected = classify_written(runs, old_predecessors, now) + classify_expired(app, now)
        count_reclassified(written, corrected, outcome)
        rematch_exits(app, [run.pk for _, run in written])  # the OS's word on how they ended

        progress("counts", 0.9)
        recompute_build_stats(outcome.builds)
    return outcome


def classify_expired_sessions(
    app: App, now: datetime | None = None, recompute: bool = True
) -> list[tuple[int, int]]:
    """Classify the app's pending runs whose end is known and whose grace period has passed."""
    now = now or timezone.now()
    with transaction.atomic():
        without_jit()
        changed = classify_expired(app, now)
        if recompute and changed:
            recompute_build_stats({fix.build_id for fix in changed})
    return [(fix.pk, fix.build_id) for fix in changed]


@dataclass
class ReclassifyOutcome:
    sessions: int = 0
    changed: int = 0
    transitions: dict[tuple[str, str], int] = field(default_factory=dict)  # (old, new) -> runs


def reclassify_app(app: App, now: datetime | None = None) -> ReclassifyOutcome:
    """Re-classify every run of the app under the current rules (for a new rules version).

    Streams the runs in device and time order, so each run's successor is the next row, and
    rewrites only the results that differ; then recomputes the counts of all the app's builds.
    """
    now = now or timezone.now()
    outcome = ReclassifyOutcome()
    transitions: dict[tuple[str, str], int] = defaultdict(int)
    pending_results: list[tuple[Run, Classification]] = []

    def flush() -> None:
        outcome.changed += len(store_classifications(pending_results, now))
        pending_results.clear()

    with transaction.atomic():
        runs = (
            Session.objects.filter(app=app)
            .order_by("device_id", "started_at", "session_id")
            .values(*RUN_VALUES, "device_id")
            .iterator(chunk_size=CHUNK)
        )
        for row, following in _with_last(runs):
            outcome.sessions += 1
            run = run_of(row)
            same_device = following is not None and following["device_id"] == row["device_id"]
            successor = following if same_device else None
            result = classify_session(
                run.facts,
                run_facts_from_values(successor) if successor else None,
                is_grace_passed(run.started_at, run.last_seen_at, now),
            )
            if row["classification"] != result.cls:
                transitions[(row["classification"], result.cls)] += 1
            pending_results.append((run, result))
            if len(pending_results) >= CHUNK:
                flush()
        flush()
        recompute_build_stats(Build.objects.filter(app=app).values_list("pk", flat=True))
    outcome.transitions = dict(transitions)
    return outcome


def _with_last(
    rows: Iterator[dict[str, Any]],
) -> Iterator[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Each row with the row after it (None after the last)."""
    previous: dict[str, Any] | None = None
    for row in rows:
        if previous is not None:
            yield previous, row
        previous = row
    if previous is not None:
        yield previous, None


# --- deletion ----------------------------------------------------------------------------------
# Runs carry no database constraint (see the model), so they go here in one statement by app or
# build, from the pre_delete receivers (apps.py), never collected run by run. The stored
# classes of the other builds' runs stay as they were decided, with every run present.


def delete_app_sessions(app_id: int) -> None:
    Session.objects.filter(app_id=app_id)._raw_delete(Session.objects.db)


def delete_build_sessions(build_id: int) -> None:
    """The build's counts go by the ORM's cascade with the build."""
    Session.objects.filter(build_id=build_id)._raw_delete(Session.objects.db)
