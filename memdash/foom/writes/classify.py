"""Classifying stored runs: read them with their neighbours on the device, apply the rules of
`classify.py` and write back only the results that changed.

A run's class depends on the run after it on the same device (its successor), so classifying a
run means finding that successor first: `_neighbour` does it in SQL, for a batch of runs in one
statement. Every write here goes through `update_rows`, one statement per batch of changed runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from itertools import batched
from typing import Any, NamedTuple

from django.conf import settings
from django.db.models import OuterRef, Q, Subquery

from memdash.core.models import App
from memdash.core.reads.where_in import where_in
from memdash.core.writes.bulk import update_rows
from memdash.foom.logic.classify import PENDING, Classification, RunFacts, classify_session
from memdash.foom.models import RUN_FACT_FIELDS, Session, run_facts_from_values

# A run that never gets a successor (the app was not launched again, or was deleted) is classified
# from its own end once it is this old, measured from when it was last seen.
GRACE_PERIOD = timedelta(days=getattr(settings, "FOOM_GRACE_PERIOD_DAYS", 7))

CHUNK = 2000  # ids per IN (...) or ANY(...)

# What the rules made of a run; a run's other columns are the facts an upload reports.
CLASS_FIELDS = ("classification", "rule", "rules_version", "classified_at")
# A run's result as stored, in CLASS_FIELDS order: class, rule, rules version, classified at.
ClassRow = tuple[str, int | None, str, datetime | None]
NOT_CLASSIFIED: ClassRow = (PENDING, None, "", None)  # a run not classified yet


def is_grace_passed(started_at: datetime, last_seen_at: datetime | None, now: datetime) -> bool:
    return now - (last_seen_at or started_at) >= GRACE_PERIOD


class Run(NamedTuple):
    """What classifying a run reads: its facts, when it ran and its stored result."""

    pk: int
    build_id: int
    started_at: datetime
    last_seen_at: datetime | None
    result: ClassRow  # as stored (classified_at unread: None)
    facts: RunFacts


class Reclassified(NamedTuple):
    pk: int
    build_id: int
    result: ClassRow  # the new one


RUN_VALUES = (
    "pk",
    "build_id",
    "started_at",
    "last_seen_at",
    *CLASS_FIELDS[:3],
    "build__version",
    "build__number",
    *RUN_FACT_FIELDS,
)


def run_of(row: dict[str, Any]) -> Run:
    """A Run from a `.values(*RUN_VALUES)` row."""
    return Run(
        row["pk"],
        row["build_id"],
        row["started_at"],
        row["last_seen_at"],
        (row["classification"], row["rule"], row["rules_version"], None),
        run_facts_from_values(row),
    )


def class_columns(result: Classification, now: datetime) -> ClassRow:
    """CLASS_FIELDS for a result: a pending run holds no rule, no version and no date."""
    if result.cls == PENDING:
        return NOT_CLASSIFIED
    return (result.cls, result.rule, result.rules_version, now)


def same_result(a: ClassRow, b: ClassRow) -> bool:
    """Same class, rule and rules version (CLASS_FIELDS tuples; the date does not count)."""
    return a[:3] == b[:3]


# --- neighbours on the device ------------------------------------------------------------------


def _neighbour(before: bool) -> Subquery:
    """The pk of the run just before (or after) the outer run on its device, by start time
    (ties broken by session id so that the order is total).

    The redundant `started_at <=` (`>=`) bound lets the (device, started_at) index start the
    scan at the outer run instead of reading all the device's runs and filtering them."""
    start, sid = OuterRef("started_at"), OuterRef("session_id")
    if before:
        condition = Q(started_at__lte=start) & (
            Q(started_at__lt=start) | Q(started_at=start, session_id__lt=sid)
        )
        order = ("-started_at", "-session_id")
    else:
        condition = Q(started_at__gte=start) & (
            Q(started_at__gt=start) | Q(started_at=start, session_id__gt=sid)
        )
        order = ("started_at", "session_id")
    # The app too (a device is one app's): on Citus the runs of one app are on one worker, and
    # a subquery is run there only when it says so.
    runs = Session.objects.filter(
        condition, device_id=OuterRef("device_id"), app_id=OuterRef("app_id")
    ).order_by(*order)
    return Subquery(runs.values("pk")[:1])


def neighbour_pks(pks: Sequence[int], before: bool) -> list[int]:
    """The pks of the runs just before (or after) these runs on their devices, if any."""
    found: list[int] = []
    for batch in batched(pks, CHUNK):
        found.extend(
            pk
            for pk in Session.objects.filter(where_in("pk", batch))
            .order_by()
            .annotate(neighbour=_neighbour(before))
            .values_list("neighbour", flat=True)
            if pk is not None
        )
    return found


def _neighbours(pks: Iterable[int]) -> list[tuple[int, int | None, int | None]]:
    """(pk, predecessor pk, successor pk) of these runs on their devices."""
    found: list[tuple[int, int | None, int | None]] = []
    for batch in batched(sorted(pks), CHUNK):
        rows = (
            Session.objects.filter(where_in("pk", batch))
            .order_by()
            .annotate(predecessor=_neighbour(before=True), successor=_neighbour(before=False))
        )
        found.extend(rows.values_list("pk", "predecessor", "successor"))
    return found


def _read_runs(
    pks: Iterable[int], with_successor: bool = False
) -> tuple[dict[int, Run], dict[int, int | None]]:
    """These runs by pk and, if asked, the pk of each one's current successor on its device."""
    runs: dict[int, Run] = {}
    successors: dict[int, int | None] = {}
    extra = ["successor"] if with_successor else []
    for batch in batched(sorted(set(pks)), CHUNK):
        rows = Session.objects.filter(where_in("pk", batch)).order_by()
        if with_successor:
            rows = rows.annotate(successor=_neighbour(before=False))
        for row in rows.values(*RUN_VALUES, *extra):
            runs[row["pk"]] = run_of(row)
            if with_successor:
                successors[row["pk"]] = row["successor"]
    return runs, successors


# --- classifying and storing the results -------------------------------------------------------


def classify_runs(pks: Iterable[int], now: datetime) -> list[Reclassified]:
    """Classify these runs against their current successors; store and answer the results that
    differ from the stored ones."""
    changed: list[Reclassified] = []
    for batch in batched(sorted(set(pks)), CHUNK):
        runs, successor_of = _read_runs(batch, with_successor=True)
        changed.extend(_classify_and_store(runs, successor_of, now))
    return changed


def classify_written(
    written: dict[int, Run], old_predecessors: Sequence[int], now: datetime
) -> list[Reclassified]:
    """Classify the runs an upload wrote (given as stored: the upload knows them), their
    predecessors and the old predecessors of the runs that moved; store and answer the results
    that differ from the stored ones.

    One read gives both neighbours of each written run; a predecessor's successor is then known
    without asking (it is the written run), so only the old predecessors of moved runs need
    their successor looked up."""
    successor_of: dict[int, int | None] = {}
    predecessor_of: dict[int, int] = {}
    for pk, predecessor, successor in _neighbours(written):
        successor_of[pk] = successor
        if predecessor is not None:
            predecessor_of[predecessor] = pk
    successor_of.update(predecessor_of)
    others = [pk for pk in old_predecessors if pk not in successor_of]
    changed = classify_runs(others, now) if others else []
    changed.extend(_classify_and_store(dict(written), successor_of, now))
    return changed


def classify_expired(app: App, now: datetime) -> list[Reclassified]:
    """Classify the app's pending runs whose end is known and whose grace period has passed;
    store and answer the results that changed."""
    pks = list(
        Session.objects.filter(
            app=app,
            classification=PENDING,
            has_end=True,
            started_at__lte=now - GRACE_PERIOD,
        )
        .order_by()
        .values_list("pk", flat=True)
    )
    return classify_runs(pks, now) if pks else []


def _classify_and_store(
    runs: dict[int, Run], successor_of: dict[int, int | None], now: datetime
) -> list[Reclassified]:
    """Classify each key of `successor_of` against its successor (reading the runs that `runs`
    lacks), store the results that differ and answer them."""
    needed = {*successor_of, *(pk for pk in successor_of.values() if pk is not None)}
    runs.update(_read_runs(needed.difference(runs))[0])
    results = []
    for pk, successor in successor_of.items():
        run = runs.get(pk)
        if run is None:  # deleted meanwhile
            continue
        following = runs.get(successor) if successor is not None else None
        result = classify_session(
            run.facts,
            following.facts if following is not None else None,
            is_grace_passed(run.started_at, run.last_seen_at, now),
        )
        results.append((run, result))
    return store_classifications(results, now)


def store_classifications(
    results: Iterable[tuple[Run, Classification]], now: datetime
) -> list[Reclassified]:
    """Write the results that differ from the runs' stored ones (one statement per batch) and
    answer them."""
    changed: list[Reclassified] = []
    for run, result in results:
        columns = class_columns(result, now)
        if not same_result(columns, run.result):
            changed.append(Reclassified(run.pk, run.build_id, columns))
    update_rows(Session, CLASS_FIELDS, [(fix.pk, *fix.result) for fix in changed])
    return changed
