"""Writes of the FOOM domain: store uploaded runs, classify them, keep the per-build counts.

The order of work for an upload (in one transaction):
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
the rows travel as plain tuples (`memdash.foom.bulk`), not as model instances.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from django.conf import settings
from django.db import transaction
from django.db.models import Count, OuterRef, Q, Subquery
from django.utils import timezone

from memdash.core.bulk import is_postgres
from memdash.core.models import App, Build, Device
from memdash.core.services import get_or_create_build
from memdash.core.uploads import Progress, no_progress
from memdash.foom.bulk import paused_gc, update_rows, upsert_rows, where_in, without_jit
from memdash.foom.classify import (
    CLASSES,
    END_FLAGS,
    EXCLUDED,
    FOOM,
    FOREGROUND,
    PENDING,
    Classification,
    RunFacts,
    classify_session,
)
from memdash.foom.models import (
    RUN_FACT_FIELDS,
    BuildDayFoomStats,
    BuildFoomStats,
    Session,
    run_facts_from_values,
)
from memdash.foom.reports import SessionReport

# A run that never gets a successor (the app was not launched again, or was deleted) is classified
# from its own end once it is this old, measured from when it was last seen.
GRACE_PERIOD = timedelta(days=getattr(settings, "FOOM_GRACE_PERIOD_DAYS", 7))

CHUNK = 2000  # ids per IN (...) or ANY(...)

# What an upload reports of a run (the facts); CLASS_FIELDS hold what the rules made of it.
FACT_FIELDS = (
    "build",
    "device",
    "binary_uuid",
    "os",
    "boot_time",
    "started_at",
    "started_day",
    "last_seen_at",
    "bot",
    "has_end",
    "end_state",
    "active_for_ms",
    *END_FLAGS,
    "os_exit_reason",
    "memory_warnings",
    "footprint_bytes",
    "peak_footprint_bytes",
)
CLASS_FIELDS = ("classification", "rule", "rules_version", "classified_at")

# The same facts as database columns, in the same order: the tuples `_fact_row` builds.
FACT_COLUMNS = tuple(f"{name}_id" if name in ("build", "device") else name for name in FACT_FIELDS)
BUILD_AT, DEVICE_AT = FACT_COLUMNS.index("build_id"), FACT_COLUMNS.index("device_id")
STARTED_AT, LAST_SEEN_AT = FACT_COLUMNS.index("started_at"), FACT_COLUMNS.index("last_seen_at")
END_AT = FACT_COLUMNS.index("has_end")
# The end facts of a run whose end has not arrived (the model's defaults).
NO_END = (False, "", None, *(False for _ in END_FLAGS), "", None, None, None)


@dataclass
class StoreOutcome:
    sessions: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    reclassified: int = 0  # runs whose class, rule or rules version changed
    builds: set[int] = field(default_factory=set)

    def counts(self) -> dict[str, int]:
        return {
            "sessions": self.sessions,
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "reclassified": self.reclassified,
        }


def chunked(items: Sequence, size: int = CHUNK) -> Iterator[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def is_grace_passed(started_at: datetime, last_seen_at: datetime | None, now: datetime) -> bool:
    return now - (last_seen_at or started_at) >= GRACE_PERIOD


# --- storing an upload -------------------------------------------------------------------------


class StoredRun(NamedTuple):
    pk: int
    received_at: datetime
    facts: tuple  # in FACT_COLUMNS order
    result: tuple  # in CLASS_FIELDS order

    @property
    def position(self) -> tuple[int, datetime]:
        return self.facts[DEVICE_AT], self.facts[STARTED_AT]


class Written(NamedTuple):
    """A run the upload writes: its report, the facts to store, its result before the upload."""

    report: SessionReport
    facts: tuple  # in FACT_COLUMNS order
    received_at: datetime
    before: tuple  # in CLASS_FIELDS order

    @property
    def session_id(self) -> str:
        return self.report.id


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
        builds = _resolve_builds(app, reports)
        devices = _resolve_devices(app, reports)
        stored = _stored_runs(app, [r.id for r in reports])

        progress("sessions", 0.2)
        rows, moved_pks = _changed_runs(reports, builds, devices, stored, received_at, outcome)
        # Their predecessors before the move: those runs lose their successor.
        old_predecessors = _neighbour_pks(moved_pks, before=True)
        written = _write_runs(app, rows, received_at, now)

        progress("classification", 0.6)
        runs = {run.pk: run for _, run in written}
        corrected = _classify_written(runs, old_predecessors, now) + _classify_expired(app, now)
        _count_reclassified(written, corrected, outcome)

        progress("counts", 0.9)
        recompute_build_stats(outcome.builds)
    return outcome


def _changed_runs(
    reports: Sequence[SessionReport],
    builds: dict[tuple[str, str], int],
    devices: dict[str, int],
    stored: dict[str, StoredRun],
    received_at: datetime,
    outcome: StoreOutcome,
) -> tuple[list[Written], list[int]]:
    """The runs to write (new, or with facts that changed) and the pks of the stored runs that
    moved to another device or start time; counts created, updated and unchanged runs."""
    rows: list[Written] = []
    moved_pks: list[int] = []
    for report in sorted(reports, key=lambda r: r.id):  # one lock order for concurrent uploads
        old = stored.get(report.id)
        build_id = builds[(report.build_version, report.build_number)]
        facts = _fact_row(report, build_id, devices[report.device_id], old)
        if old is None:
            outcome.created += 1
        elif facts == old.facts:
            outcome.unchanged += 1
            continue
        else:
            outcome.updated += 1
            outcome.builds.add(old.facts[BUILD_AT])
            if old.position != (facts[DEVICE_AT], facts[STARTED_AT]):
                moved_pks.append(old.pk)
        outcome.builds.add(build_id)
        before = old.result if old else NOT_CLASSIFIED
        rows.append(Written(report, facts, old.received_at if old else received_at, before))
    return rows, moved_pks


def _write_runs(
    app: App, rows: Sequence[Written], received_at: datetime, now: datetime
) -> list[tuple[Written, Run]]:
    """Upsert the runs; a run without a result yet gets the one it most likely gets (see
    `_expected_results`), a run with one keeps it (and its date) until the classification step
    re-decides it. Answers each with the Run it now is in the table."""
    facts = [_written_run_facts(row) for row in rows]
    expected = [
        result if _same_result(row.before, NOT_CLASSIFIED) else row.before
        for row, result in zip(rows, _expected_results(rows, facts, now), strict=True)
    ]
    pks = _upsert_runs(app, rows, expected, received_at)
    return [
        (
            row,
            Run(
                pks[row.session_id],
                row.facts[BUILD_AT],
                row.facts[STARTED_AT],
                row.facts[LAST_SEEN_AT],
                result,
                run_facts,
            ),
        )
        for row, run_facts, result in zip(rows, facts, expected, strict=True)
    ]


def _count_reclassified(
    written: Sequence[tuple[Written, Run]],
    corrected: Sequence[Reclassified],
    outcome: StoreOutcome,
) -> None:
    """A run was re-classified when it ends the upload with another result than it began with:
    a written run is compared with its result before the upload, any other corrected run
    changed; the builds of the corrected runs need their counts recomputed."""
    fixes = {fix.pk: fix for fix in corrected}
    for row, run in written:
        fix = fixes.pop(run.pk, None)
        if not _same_result(fix.result if fix else run.result, row.before):
            outcome.reclassified += 1
    outcome.reclassified += len(fixes)
    outcome.builds.update(fix.build_id for fix in fixes.values())


def _resolve_builds(app: App, reports: Iterable[SessionReport]) -> dict[tuple[str, str], int]:
    """A handful per upload: the core service's race-safe get_or_create is fine here."""
    commits: dict[tuple[str, str], str] = {}
    for r in reports:
        key = (r.build_version, r.build_number)
        commits[key] = commits.get(key) or r.build_commit
    return {
        key: get_or_create_build(app, key[0], key[1], commit).pk for key, commit in commits.items()
    }


def _resolve_devices(app: App, reports: Sequence[SessionReport]) -> dict[str, int]:
    """Device ids of all the upload's devices in a few statements; model and OS from each
    device's latest run."""
    latest: dict[str, tuple[str, str]] = {}
    for r in sorted(reports, key=lambda r: r.started_at):
        model, os = latest.get(r.device_id, ("", ""))
        latest[r.device_id] = (r.device_model or model, r.os or os)
    keys = sorted(latest)

    def fetch(wanted: Sequence[str]) -> dict[str, tuple[int, str, str]]:
        found: dict[str, tuple[int, str, str]] = {}
        for batch in chunked(list(wanted)):
            rows = Device.objects.filter(where_in("device_key", batch), app=app).order_by()
            for key, pk, model, os in rows.values_list("device_key", "pk", "model", "os"):
                found[key] = (pk, model, os)
        return found

    devices = fetch(keys)
    missing = [k for k in keys if k not in devices]
    if missing:  # once per device: new devices are rare after the first uploads
        Device.objects.bulk_create(
            [Device(app=app, device_key=k, model=latest[k][0], os=latest[k][1]) for k in missing],
            ignore_conflicts=True,  # another upload may create the same device meanwhile
            batch_size=CHUNK,
        )
        devices.update(fetch(missing))
    stale: list[tuple] = []
    for key, (pk, model, os) in devices.items():
        new_model, new_os = latest[key]
        if (new_model and new_model != model) or (new_os and new_os != os):
            stale.append((pk, new_model or model, new_os or os))
    update_rows(Device, ("model", "os"), stale)
    return {key: pk for key, (pk, _, _) in devices.items()}


def _stored_runs(app: App, session_ids: Sequence[str]) -> dict[str, StoredRun]:
    stored: dict[str, StoredRun] = {}
    for batch in chunked(list(session_ids)):
        rows = Session.objects.filter(where_in("session_id", batch), app=app).order_by()
        for sid, pk, received_at, *values in rows.values_list(
            "session_id", "pk", "received_at", *FACT_COLUMNS, *CLASS_FIELDS
        ):
            stored[sid] = StoredRun(pk, received_at, tuple(values[:-4]), tuple(values[-4:]))
    return stored


def _fact_row(report: SessionReport, build_id: int, device_id: int, old: StoredRun | None) -> tuple:
    """The facts to store for a report, in FACT_COLUMNS order, merged with the stored copy."""
    end = report.end
    if end is not None:
        end_facts: tuple = (
            True,
            end.state,
            end.active_for_ms,
            *(getattr(end, flag) for flag in END_FLAGS),
            end.os_exit_reason or "",
            end.memory_warnings,
            end.footprint_bytes,
            end.peak_footprint_bytes,
        )
    elif old is not None and old.facts[END_AT]:
        # The end arrives once, on the next launch; a later copy of the start must not erase it.
        end_facts = old.facts[END_AT:]
    else:
        end_facts = NO_END
    last_seen_at = report.last_seen_at
    old_seen = old.facts[LAST_SEEN_AT] if old is not None else None
    if old_seen and (last_seen_at is None or last_seen_at < old_seen):
        last_seen_at = old_seen  # last seen only moves forward
    return (
        build_id,
        device_id,
        report.binary_uuid,
        report.os,
        report.boot_time,
        report.started_at,
        report.started_at.astimezone(UTC).date(),
        last_seen_at,
        report.bot,
        *end_facts,
    )


UPSERT_COLUMNS = ("app_id", "session_id", *FACT_COLUMNS, "received_at", "updated_at", *CLASS_FIELDS)
NOT_CLASSIFIED = (PENDING, None, "", None)  # CLASS_FIELDS of a run not classified yet


def _written_run_facts(row: Written) -> RunFacts:
    """What the rules read of a written run: the report's own facts, or, when the report
    kept the end stored before, those of the stored row."""
    report = row.report
    if report.end is not None or not row.facts[END_AT]:
        return report.run_facts()
    values = dict(zip(FACT_COLUMNS, row.facts, strict=True))
    values["build__version"], values["build__number"] = report.build_version, report.build_number
    return run_facts_from_values(values)


def _expected_results(
    rows: Sequence[Written], facts: Sequence[RunFacts], now: datetime
) -> list[tuple]:
    """CLASS_FIELDS for each written run, classified against the next written run of its device
    (or none): what it gets in the common case, where an upload brings the newest runs. Writing
    it with the facts spares a second write of every new run; the classification step checks
    it against the stored neighbours and corrects the few it got wrong (late uploads)."""
    by_device: dict[int, list[tuple[datetime, str, int]]] = defaultdict(list)
    for i, row in enumerate(rows):
        by_device[row.facts[DEVICE_AT]].append((row.facts[STARTED_AT], row.session_id, i))
    successor: list[int | None] = [None] * len(rows)
    for runs in by_device.values():
        runs.sort()
        for (*_, i), (*_, j) in itertools.pairwise(runs):
            successor[i] = j
    results = []
    for i, row in enumerate(rows):
        following = successor[i]
        result = classify_session(
            facts[i],
            facts[following] if following is not None else None,
            is_grace_passed(row.facts[STARTED_AT], row.facts[LAST_SEEN_AT], now),
        )
        results.append(_class_columns(result, now))
    return results


def _upsert_runs(
    app: App, rows: Sequence[Written], results: Sequence[tuple], updated_at: datetime
) -> dict[str, int]:
    """Insert new runs and rewrite the facts and the expected result of stored ones; answers
    the pk of each session id. A stored run keeps its pk and its received_at."""
    values = [
        (app.pk, row.session_id, *row.facts, row.received_at, updated_at, *result)
        for row, result in zip(rows, results, strict=True)
    ]
    returned = upsert_rows(
        Session,
        UPSERT_COLUMNS,
        values,
        conflict=("app_id", "session_id"),
        update=(*FACT_COLUMNS, "updated_at", *CLASS_FIELDS),
        returning=("session_id", "id"),
    )
    if not is_postgres():  # SQLite's executemany answers nothing
        returned = _pks_of(app, [row.session_id for row in rows])
    return dict(returned)


def _pks_of(app: App, session_ids: Sequence[str]) -> list[tuple[str, int]]:
    pks: list[tuple[str, int]] = []
    for batch in chunked(list(session_ids)):
        rows = Session.objects.filter(where_in("session_id", batch), app=app).order_by()
        pks.extend(rows.values_list("session_id", "pk"))
    return pks


# --- classification ----------------------------------------------------------------------------


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
    runs = Session.objects.filter(condition, device_id=OuterRef("device_id")).order_by(*order)
    return Subquery(runs.values("pk")[:1])


def _neighbour_pks(pks: Sequence[int], before: bool) -> list[int]:
    found: list[int] = []
    for batch in chunked(list(pks)):
        found.extend(
            pk
            for pk in Session.objects.filter(where_in("pk", batch))
            .order_by()
            .annotate(neighbour=_neighbour(before))
            .values_list("neighbour", flat=True)
            if pk is not None
        )
    return found


class Run(NamedTuple):
    """What classifying a run reads: its facts, when it ran and its stored result."""

    pk: int
    build_id: int
    started_at: datetime
    last_seen_at: datetime | None
    result: tuple  # CLASS_FIELDS as stored (classified_at unread: None)
    facts: RunFacts


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


def _run_of(row: dict) -> Run:
    """A Run from a `.values(*RUN_VALUES)` row."""
    return Run(
        row["pk"],
        row["build_id"],
        row["started_at"],
        row["last_seen_at"],
        (row["classification"], row["rule"], row["rules_version"], None),
        run_facts_from_values(row),
    )


def _runs(
    pks: Iterable[int], with_successor: bool = False
) -> tuple[dict[int, Run], dict[int, int | None]]:
    """These runs by pk and, if asked, the pk of each one's current successor on its device."""
    runs: dict[int, Run] = {}
    successors: dict[int, int | None] = {}
    extra = ["successor"] if with_successor else []
    for batch in chunked(sorted(set(pks))):
        rows = Session.objects.filter(where_in("pk", batch)).order_by()
        if with_successor:
            rows = rows.annotate(successor=_neighbour(before=False))
        for row in rows.values(*RUN_VALUES, *extra):
            runs[row["pk"]] = _run_of(row)
            if with_successor:
                successors[row["pk"]] = row["successor"]
    return runs, successors


def _neighbours(pks: Sequence[int]) -> list[tuple[int, int | None, int | None]]:
    """(pk, predecessor pk, successor pk) of these runs on their devices."""
    found: list[tuple[int, int | None, int | None]] = []
    for batch in chunked(sorted(pks)):
        rows = (
            Session.objects.filter(where_in("pk", batch))
            .order_by()
            .annotate(predecessor=_neighbour(before=True), successor=_neighbour(before=False))
        )
        found.extend(rows.values_list("pk", "predecessor", "successor"))
    return found


class Reclassified(NamedTuple):
    pk: int
    build_id: int
    result: tuple  # the new CLASS_FIELDS


def _class_columns(result: Classification, now: datetime) -> tuple:
    """CLASS_FIELDS for a result: a pending run holds no rule, no version and no date."""
    if result.cls == PENDING:
        return NOT_CLASSIFIED
    return (result.cls, result.rule, result.rules_version, now)


def _same_result(a: tuple, b: tuple) -> bool:
    """Same class, rule and rules version (CLASS_FIELDS tuples; the date does not count)."""
    return a[:3] == b[:3]


def classify_sessions(pks: Iterable[int], now: datetime) -> list[tuple[int, int]]:
    """Classify the given runs against their current successors and store the results that
    differ. Answers (pk, build id) of the runs whose class, rule or rules version changed."""
    return [(fix.pk, fix.build_id) for fix in _classify_runs(pks, now)]


def _classify_runs(pks: Iterable[int], now: datetime) -> list[Reclassified]:
    changed: list[Reclassified] = []
    for batch in chunked(sorted(set(pks))):
        runs, successor_of = _runs(batch, with_successor=True)
        changed.extend(_classify_and_store(runs, successor_of, now))
    return changed


def _classify_written(
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
    for pk, predecessor, successor in _neighbours(list(written)):
        successor_of[pk] = successor
        if predecessor is not None:
            predecessor_of[predecessor] = pk
    successor_of.update(predecessor_of)
    others = [pk for pk in old_predecessors if pk not in successor_of]
    changed = _classify_runs(others, now) if others else []
    changed.extend(_classify_and_store(dict(written), successor_of, now))
    return changed


def _classify_and_store(
    runs: dict[int, Run], successor_of: dict[int, int | None], now: datetime
) -> list[Reclassified]:
    """Classify each key of `successor_of` against its successor (reading the runs that `runs`
    lacks), store the results that differ and answer them."""
    needed = {*successor_of, *(pk for pk in successor_of.values() if pk is not None)}
    runs.update(_runs(needed.difference(runs))[0])
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
    return _store_classifications(results, now)


def _store_classifications(
    results: Iterable[tuple[Run, Classification]], now: datetime
) -> list[Reclassified]:
    changed: list[Reclassified] = []
    for run, result in results:
        columns = _class_columns(result, now)
        if not _same_result(columns, run.result):
            changed.append(Reclassified(run.pk, run.build_id, columns))
    update_rows(Session, CLASS_FIELDS, [(fix.pk, *fix.result) for fix in changed])
    return changed


def classify_expired_sessions(
    app: App, now: datetime | None = None, recompute: bool = True
) -> list[tuple[int, int]]:
    """Classify the app's pending runs whose end is known and whose grace period has passed."""
    now = now or timezone.now()
    with transaction.atomic():
        without_jit()
        changed = _classify_expired(app, now)
        if recompute and changed:
            recompute_build_stats({fix.build_id for fix in changed})
    return [(fix.pk, fix.build_id) for fix in changed]


def _classify_expired(app: App, now: datetime) -> list[Reclassified]:
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
    return _classify_runs(pks, now) if pks else []


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
        outcome.changed += len(_store_classifications(pending_results, now))
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
            run = _run_of(row)
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


def _with_last(rows: Iterator[dict]) -> Iterator[tuple[dict, dict | None]]:
    """Each row with the row after it (None after the last)."""
    previous: dict | None = None
    for row in rows:
        if previous is not None:
            yield previous, row
        previous = row
    if previous is not None:
        yield previous, None


# --- counts ------------------------------------------------------------------------------------

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
        for batch in chunked(ids):
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


def _count_sessions(build_ids: Sequence[int], by_day: bool) -> dict[tuple, dict]:
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
    counts: dict[tuple, dict] = {}
    for row in runs.values(*keys).annotate(**aggregates):
        entry = {name: row[name] for name in aggregates if not name.startswith("class_")}
        entry["classes"] = {c: row[f"class_{c}"] for c in CLASSES if row[f"class_{c}"]}
        counts[tuple(row[k] for k in keys)] = entry
    return counts
