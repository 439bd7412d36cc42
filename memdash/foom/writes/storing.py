"""The steps of storing an upload of runs (`services.store_sessions` runs them in order): resolve
builds and devices, compare the reports with the stored runs, upsert the runs whose facts
changed, and count what the upload changed.

The rows travel as plain tuples in FACT_COLUMNS order (`memdash.core.writes.bulk`), not as model
instances, and every read or write takes a fixed number of statements per CHUNK runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import batched, pairwise
from typing import Any, NamedTuple

from memdash.core.models import App, Device
from memdash.core.reads.where_in import is_postgres, where_in
from memdash.core.writes.apps import get_or_create_build
from memdash.core.writes.bulk import update_rows, upsert_rows
from memdash.foom.logic.classify import END_FLAGS, RunFacts, classify_session
from memdash.foom.logic.reports import SessionReport
from memdash.foom.models import Session, run_facts_from_values
from memdash.foom.writes.classify import (
    CHUNK,
    CLASS_FIELDS,
    NOT_CLASSIFIED,
    ClassRow,
    Reclassified,
    Run,
    class_columns,
    is_grace_passed,
    same_result,
)

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
    "pid",
    "has_end",
    "end_state",
    "active_for_ms",
    *END_FLAGS,
    "os_exit_reason",
    "memory_warnings",
    "footprint_bytes",
    "peak_footprint_bytes",
)

# A run's facts as stored, in FACT_COLUMNS order (ids, strings, dates, flags, numbers).
FactRow = tuple[Any, ...]

# The same facts as database columns, in the same order: the tuples `_fact_row` builds.
FACT_COLUMNS = tuple(f"{name}_id" if name in ("build", "device") else name for name in FACT_FIELDS)
BUILD_AT, DEVICE_AT = FACT_COLUMNS.index("build_id"), FACT_COLUMNS.index("device_id")
STARTED_AT, LAST_SEEN_AT = FACT_COLUMNS.index("started_at"), FACT_COLUMNS.index("last_seen_at")
PID_AT = FACT_COLUMNS.index("pid")
END_AT = FACT_COLUMNS.index("has_end")
# The end facts of a run whose end has not arrived (the model's defaults).
NO_END = (False, "", None, *(False for _ in END_FLAGS), "", None, None, None)

UPSERT_COLUMNS = ("app_id", "session_id", *FACT_COLUMNS, "received_at", "updated_at", *CLASS_FIELDS)


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


class StoredRun(NamedTuple):
    pk: int
    received_at: datetime
    facts: FactRow
    result: ClassRow

    @property
    def position(self) -> tuple[int, datetime]:
        return self.facts[DEVICE_AT], self.facts[STARTED_AT]


class Written(NamedTuple):
    """A run the upload writes: its report, the facts to store, its result before the upload."""

    report: SessionReport
    facts: FactRow
    received_at: datetime
    before: ClassRow

    @property
    def session_id(self) -> str:
        return self.report.id


# --- reading what is stored --------------------------------------------------------------------


def resolve_builds(app: App, reports: Iterable[SessionReport]) -> dict[tuple[str, str], int]:
    """A handful per upload: the core service's race-safe get_or_create is fine here."""
    commits: dict[tuple[str, str], str] = {}
    for r in reports:
        key = (r.build_version, r.build_number)
        commits[key] = commits.get(key) or r.build_commit
    return {
        key: get_or_create_build(app, key[0], key[1], commit).pk for key, commit in commits.items()
    }


def resolve_devices(app: App, reports: Sequence[SessionReport]) -> dict[str, int]:
    """Device ids of all the upload's devices in a few statements; model and OS from each
    device's latest run."""
    latest: dict[str, tuple[str, str]] = {}
    for r in sorted(reports, key=lambda r: r.started_at):
        model, os = latest.get(r.device_id, ("", ""))
        latest[r.device_id] = (r.device_model or model, r.os or os)
    keys = sorted(latest)

    def fetch(wanted: Iterable[str]) -> dict[str, tuple[int, str, str]]:
        found: dict[str, tuple[int, str, str]] = {}
        for batch in batched(wanted, CHUNK):
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
    stale: list[tuple[int, str, str]] = []
    for key, (pk, model, os) in devices.items():
        new_model, new_os = latest[key]
        if (new_model and new_model != model) or (new_os and new_os != os):
            stale.append((pk, new_model or model, new_os or os))
    update_rows(Device, ("model", "os"), stale)
    return {key: pk for key, (pk, _, _) in devices.items()}


def stored_runs(app: App, session_ids: Iterable[str]) -> dict[str, StoredRun]:
    """The stored copies of these runs of the app, by session id."""
    stored: dict[str, StoredRun] = {}
    for batch in batched(session_ids, CHUNK):
        rows = Session.objects.filter(where_in("session_id", batch), app=app).order_by()
        for sid, pk, received_at, *values in rows.values_list(
            "session_id", "pk", "received_at", *FACT_COLUMNS, *CLASS_FIELDS
        ):
            stored[sid] = StoredRun(pk, received_at, tuple(values[:-4]), tuple(values[-4:]))
    return stored


# --- what the upload changes -------------------------------------------------------------------


def changed_runs(
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


def _fact_row(
    report: SessionReport, build_id: int, device_id: int, old: StoredRun | None
) -> FactRow:
    """The facts to store for a report, in FACT_COLUMNS order, merged with the stored copy."""
    end = report.end
    if end is not None:
        end_facts: tuple[Any, ...] = (
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
    pid = report.pid if report.pid is not None or old is None else old.facts[PID_AT]
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
        pid,
        *end_facts,
    )


def count_reclassified(
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
        if not same_result(fix.result if fix else run.result, row.before):
            outcome.reclassified += 1
    outcome.reclassified += len(fixes)
    outcome.builds.update(fix.build_id for fix in fixes.values())


# --- writing the runs --------------------------------------------------------------------------


def write_runs(
    app: App, rows: Sequence[Written], received_at: datetime, now: datetime
) -> list[tuple[Written, Run]]:
    """Upsert the runs; a run without a result yet gets the one it most likely gets (see
    `_expected_results`), a run with one keeps it (and its date) until the classification step
    re-decides it. Answers each with the Run it now is in the table."""
    facts = [_written_run_facts(row) for row in rows]
    expected = [
        result if same_result(row.before, NOT_CLASSIFIED) else row.before
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
) -> list[ClassRow]:
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
        for (*_, i), (*_, j) in pairwise(runs):
            successor[i] = j
    results = []
    for i, row in enumerate(rows):
        following = successor[i]
        result = classify_session(
            facts[i],
            facts[following] if following is not None else None,
            is_grace_passed(row.facts[STARTED_AT], row.facts[LAST_SEEN_AT], now),
        )
        results.append(class_columns(result, now))
    return results


def _upsert_runs(
    app: App, rows: Sequence[Written], results: Sequence[ClassRow], updated_at: datetime
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


def _pks_of(app: App, session_ids: Iterable[str]) -> list[tuple[str, int]]:
    pks: list[tuple[str, int]] = []
    for batch in batched(session_ids, CHUNK):
        rows = Session.objects.filter(where_in("session_id", batch), app=app).order_by()
        pks.extend(rows.values_list("session_id", "pk"))
    return pks
