"""Writes of the FOOM domain: store uploaded runs, classify them, keep the per-build counts.

The order of work for an upload (all inside the upload's transaction):
1. resolve builds and devices in bulk, read the stored copies of the uploaded runs;
2. upsert the runs whose facts changed (a re-upload that says nothing new writes nothing; an
   absent `end` never erases one that arrived before);
3. classify what the upload can have changed: the runs themselves, their predecessors on the
   device (whose successor may now be known or be another run), and, for a run that moved in
   time or to another device, its old predecessor; plus the app's runs whose grace period ran out;
4. recompute the counts of every build whose runs or classes changed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, OuterRef, Q, Subquery
from django.utils import timezone

from memdash.core.models import App, Build, Device
from memdash.core.services import get_or_create_build
from memdash.core.uploads import Progress, no_progress
from memdash.foom.classify import (
    CLASSES,
    END_FLAGS,
    EXCLUDED,
    FOOM,
    FOREGROUND,
    PENDING,
    Classification,
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

CHUNK = 2000  # ids per IN (...) and rows per bulk statement

# Columns an upload writes (the facts); the classification columns are written by `_classify`.
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
END_FIELDS = FACT_FIELDS[FACT_FIELDS.index("has_end") :]
CLASS_FIELDS = ("classification", "rule", "rules_version", "classified_at")


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
    progress("builds and devices", 0.05)
    builds = _resolve_builds(app, reports)
    devices = _resolve_devices(app, reports)
    stored = _stored_sessions(app, [r.id for r in reports])

    progress("sessions", 0.2)
    rows: list[Session] = []
    moved_pks: list[int] = []  # stored runs that change device or start time
    for report in sorted(reports, key=lambda r: r.id):  # one lock order for concurrent uploads
        old = stored.get(report.id)
        row = _session_row(app, report, builds, devices, old, received_at)
        if old is None:
            outcome.created += 1
        elif _facts(row) == _facts(old):
            outcome.unchanged += 1
            continue
        else:
            outcome.updated += 1
            outcome.builds.add(old.build_id)
            if (old.device_id, old.started_at) != (row.device_id, row.started_at):
                moved_pks.append(old.pk)
        outcome.builds.add(row.build_id)
        rows.append(row)

    # Their predecessors before the move: those runs lose their successor.
    targets: set[int] = set(_neighbour_pks(moved_pks, before=True))
    for batch in chunked(rows):
        Session.objects.bulk_create(
            batch,
            update_conflicts=True,
            unique_fields=["app", "session_id"],
            update_fields=[*FACT_FIELDS, "updated_at"],
        )

    progress("classification", 0.6)
    written = _pks_of(app, [row.session_id for row in rows])
    targets.update(written)
    targets.update(_neighbour_pks(written, before=True))
    changed = classify_sessions(targets, now)
    changed += classify_expired_sessions(app, now, recompute=False)
    outcome.reclassified = len(changed)
    outcome.builds.update(build_id for _, build_id in changed)

    progress("counts", 0.9)
    recompute_build_stats(outcome.builds)
    return outcome


def _resolve_builds(app: App, reports: Iterable[SessionReport]) -> dict[tuple[str, str], Build]:
    """A handful per upload: the core service's race-safe get_or_create is fine here."""
    commits: dict[tuple[str, str], str] = {}
    for r in reports:
        key = (r.build_version, r.build_number)
        commits[key] = commits.get(key) or r.build_commit
    return {
        key: get_or_create_build(app, key[0], key[1], commit) for key, commit in commits.items()
    }


def _resolve_devices(app: App, reports: Sequence[SessionReport]) -> dict[str, Device]:
    """All the upload's devices in a few statements; model and OS from each device's latest run."""
    latest: dict[str, tuple[str, str]] = {}
    for r in sorted(reports, key=lambda r: r.started_at):
        model, os = latest.get(r.device_id, ("", ""))
        latest[r.device_id] = (r.device_model or model, r.os or os)
    keys = sorted(latest)

    def fetch(wanted: Sequence[str]) -> dict[str, Device]:
        found: dict[str, Device] = {}
        for batch in chunked(list(wanted)):
            for device in Device.objects.filter(app=app, device_key__in=batch):
                found[device.device_key] = device
        return found

    devices = fetch(keys)
    missing = [k for k in keys if k not in devices]
    if missing:
        Device.objects.bulk_create(
            [Device(app=app, device_key=k, model=latest[k][0], os=latest[k][1]) for k in missing],
            ignore_conflicts=True,  # another upload may create the same device meanwhile
            batch_size=CHUNK,
        )
        devices.update(fetch(missing))
    stale = []
    for key, device in devices.items():
        model, os = latest[key]
        if (model and device.model != model) or (os and device.os != os):
            device.model, device.os = model or device.model, os or device.os
            stale.append(device)
    if stale:
        Device.objects.bulk_update(stale, ["model", "os"], batch_size=CHUNK)
    return devices


def _stored_sessions(app: App, session_ids: Sequence[str]) -> dict[str, Session]:
    stored: dict[str, Session] = {}
    for batch in chunked(list(session_ids)):
        for session in Session.objects.filter(app=app, session_id__in=batch):
            stored[session.session_id] = session
    return stored


def _pks_of(app: App, session_ids: Sequence[str]) -> list[int]:
    pks: list[int] = []
    for batch in chunked(list(session_ids)):
        pks.extend(
            Session.objects.filter(app=app, session_id__in=batch).values_list("pk", flat=True)
        )
    return pks


def _session_row(
    app: App,
    report: SessionReport,
    builds: dict[tuple[str, str], Build],
    devices: dict[str, Device],
    old: Session | None,
    received_at: datetime,
) -> Session:
    row = Session(
        app=app,
        session_id=report.id,
        build=builds[(report.build_version, report.build_number)],
        device=devices[report.device_id],
        binary_uuid=report.binary_uuid,
        os=report.os,
        boot_time=report.boot_time,
        started_at=report.started_at,
        started_day=report.started_at.astimezone(UTC).date(),
        last_seen_at=report.last_seen_at,
        bot=report.bot,
        received_at=old.received_at if old else received_at,
        updated_at=received_at,
    )
    end = report.end
    if end is not None:
        row.has_end = True
        row.end_state = end.state
        row.active_for_ms = end.active_for_ms
        for flag in END_FLAGS:
            setattr(row, flag, getattr(end, flag))
        row.os_exit_reason = end.os_exit_reason or ""
        row.memory_warnings = end.memory_warnings
        row.footprint_bytes = end.footprint_bytes
        row.peak_footprint_bytes = end.peak_footprint_bytes
    elif old is not None and old.has_end:
        # The end arrives once, on the next launch; a later copy of the start must not erase it.
        for name in END_FIELDS:
            setattr(row, name, getattr(old, name))
    if (
        old is not None
        and old.last_seen_at
        and (row.last_seen_at is None or row.last_seen_at < old.last_seen_at)
    ):
        row.last_seen_at = old.last_seen_at  # last seen only moves forward
    return row


def _facts(session: Session) -> tuple:
    return tuple(
        getattr(session, f"{name}_id" if name in ("build", "device") else name)
        for name in FACT_FIELDS
    )


# --- classification ----------------------------------------------------------------------------


def _neighbour(before: bool) -> Subquery:
    """The pk of the run just before (or after) the outer run on its device, by start time
    (ties broken by session id so that the order is total)."""
    start, sid = OuterRef("started_at"), OuterRef("session_id")
    if before:
        condition = Q(started_at__lt=start) | Q(started_at=start, session_id__lt=sid)
        order = ("-started_at", "-session_id")
    else:
        condition = Q(started_at__gt=start) | Q(started_at=start, session_id__gt=sid)
        order = ("started_at", "session_id")
    runs = Session.objects.filter(condition, device_id=OuterRef("device_id")).order_by(*order)
    return Subquery(runs.values("pk")[:1])


def _neighbour_pks(pks: Sequence[int], before: bool) -> list[int]:
    found: list[int] = []
    for batch in chunked(list(pks)):
        found.extend(
            pk
            for pk in Session.objects.filter(pk__in=batch)
            .annotate(neighbour=_neighbour(before))
            .values_list("neighbour", flat=True)
            if pk is not None
        )
    return found


FACT_VALUES = ("build__version", "build__number", *RUN_FACT_FIELDS)
ROW_VALUES = (
    "pk",
    "build_id",
    "started_at",
    "last_seen_at",
    "classification",
    "rule",
    "rules_version",
    *FACT_VALUES,
)


def classify_sessions(pks: Iterable[int], now: datetime) -> list[tuple[int, int]]:
    """Classify the given runs against their current successors and store the results that
    differ. Answers (pk, build id) of the runs whose class, rule or rules version changed."""
    changed: list[tuple[int, int]] = []
    for batch in chunked(sorted(set(pks))):
        rows = list(
            Session.objects.filter(pk__in=batch)
            .annotate(successor=_neighbour(before=False))
            .values(*ROW_VALUES, "successor")
        )
        successor_pks = [row["successor"] for row in rows if row["successor"] is not None]
        successors = {
            row["pk"]: row
            for row in Session.objects.filter(pk__in=successor_pks).values("pk", *FACT_VALUES)
        }
        results = []
        for row in rows:
            following = successors.get(row["successor"])
            result = classify_session(
                run_facts_from_values(row),
                run_facts_from_values(following) if following else None,
                is_grace_passed(row["started_at"], row["last_seen_at"], now),
            )
            results.append((row, result))
        changed.extend(_store_classifications(results, now))
    return changed


def _store_classifications(
    results: Iterable[tuple[dict, Classification]], now: datetime
) -> list[tuple[int, int]]:
    updates: list[Session] = []
    changed: list[tuple[int, int]] = []
    for row, result in results:
        stored = (row["classification"], row["rule"], row["rules_version"] or None)
        version = result.rules_version if result.cls != PENDING else None
        if stored == (result.cls, result.rule, version):
            continue
        updates.append(
            Session(
                pk=row["pk"],
                classification=result.cls,
                rule=result.rule,
                rules_version=version or "",
                classified_at=None if result.cls == PENDING else now,
            )
        )
        changed.append((row["pk"], row["build_id"]))
    if updates:
        Session.objects.bulk_update(updates, list(CLASS_FIELDS), batch_size=CHUNK)
    return changed


def classify_expired_sessions(
    app: App, now: datetime | None = None, recompute: bool = True
) -> list[tuple[int, int]]:
    """Classify the app's pending runs whose end is known and whose grace period has passed."""
    now = now or timezone.now()
    with transaction.atomic():
        pks = list(
            Session.objects.filter(
                app=app,
                classification=PENDING,
                has_end=True,
                started_at__lte=now - GRACE_PERIOD,
            ).values_list("pk", flat=True)
        )
        changed = classify_sessions(pks, now) if pks else []
        if recompute and changed:
            recompute_build_stats({build_id for _, build_id in changed})
    return changed


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
    pending_results: list[tuple[dict, Classification]] = []

    def flush() -> None:
        outcome.changed += len(_store_classifications(pending_results, now))
        pending_results.clear()

    with transaction.atomic():
        runs = (
            Session.objects.filter(app=app)
            .order_by("device_id", "started_at", "session_id")
            .values(*ROW_VALUES, "device_id")
            .iterator(chunk_size=CHUNK)
        )
        for run, following in _with_last(runs):
            outcome.sessions += 1
            same_device = following is not None and following["device_id"] == run["device_id"]
            successor = following if same_device else None
            result = classify_session(
                run_facts_from_values(run),
                run_facts_from_values(successor) if successor else None,
                is_grace_passed(run["started_at"], run["last_seen_at"], now),
            )
            if run["classification"] != result.cls:
                transitions[(run["classification"], result.cls)] += 1
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
    """Counts per build (or per build and day): two GROUP BY queries over the builds' runs."""
    keys = ["build_id", "started_day"] if by_day else ["build_id"]
    runs = Session.objects.filter(build_id__in=build_ids).order_by()
    counts: dict[tuple, dict] = {}

    def entry(key: tuple) -> dict:
        return counts.setdefault(
            key,
            {
                "sessions": 0,
                "classified": 0,
                "rate_sessions": 0,
                "foom": 0,
                "devices": 0,
                "classified_devices": 0,
                "foom_devices": 0,
                "classes": {},
            },
        )

    for row in runs.values(*keys, "classification", "end_state").annotate(n=Count("pk")):
        counted = entry(tuple(row[k] for k in keys))
        cls, n = row["classification"], row["n"]
        counted["sessions"] += n
        counted["classes"][cls] = counted["classes"].get(cls, 0) + n
        if cls not in UNCOUNTED:
            counted["classified"] += n
            if row["end_state"] == FOREGROUND:
                counted["rate_sessions"] += n
        if cls == FOOM:
            counted["foom"] += n
    device_counts = runs.values(*keys).annotate(
        devices=Count("device_id", distinct=True),
        classified_devices=Count(
            "device_id", distinct=True, filter=~Q(classification__in=UNCOUNTED)
        ),
        foom_devices=Count("device_id", distinct=True, filter=Q(classification=FOOM)),
    )
    for row in device_counts:
        counted = entry(tuple(row[k] for k in keys))
        for name in ("devices", "classified_devices", "foom_devices"):
            counted[name] = row[name]
    for counted in counts.values():
        counted["classes"] = {c: counted["classes"][c] for c in CLASSES if c in counted["classes"]}
    return counts
