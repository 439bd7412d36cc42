"""Writes of what the OS says about the app's exits: store MetricKit payloads and Android exits,
match exits to the runs they ended, and keep the per-build, per-day counts the pages read.

A re-sent payload or exit is stored once: exits by pid and timestamp; a MetricKit payload by the
device the upload names and the payload's digest (two devices' identical days are two payloads;
a payload sent without a device is the same as any stored one with its digest). A device's
window sent again with other counts replaces the stored one, unless a count went down: a count
over a fixed window cannot shrink, so that upload is refused with the count's path and nothing
is stored. Without a device a changed window cannot be told from another device's, so a payload
without one whose build and window are stored already (or twice in the upload) is refused as a
duplicate window: never counted twice. Exits are matched when they arrive and again when runs
arrive (`rematch_exits`, from `services.store_sessions`), so the order of uploads does not
matter.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from itertools import batched
from typing import Any

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from memdash.core.logic.errors import InvalidUpload
from memdash.core.logic.numbers import MAX_INT64
from memdash.core.models import App
from memdash.core.reads.where_in import where_in
from memdash.core.writes.apps import get_or_create_build, get_or_create_device
from memdash.core.writes.bulk import update_rows
from memdash.foom.logic.exits import (
    BACKGROUND_MEMORY,
    CLOCK_SLACK,
    MAX_RUN_SPAN,
    MEMORY,
    MetricKitReport,
    ProcessExitReport,
    RunCandidate,
    match_exit,
    verdict_counts,
)
from memdash.foom.models import MetricKitPayload, OsExitDayStats, ProcessExit, Session
from memdash.foom.writes.classify import CHUNK

DayKey = tuple[int, date]  # (build id, day)
Window = tuple[str, str, datetime, datetime]  # build version and number, begin, end


# --- MetricKit ------------------------------------------------------------------------------------


def store_metrickit(
    app: App,
    reports: Sequence[MetricKitReport],
    *,
    device_key: str = "",
    build_commit: str = "",
    upload_id: int | None = None,
    received_at: datetime | None = None,
) -> dict[str, int]:
    """Store checked payloads of `app` (all or none); answers the upload's counts."""
    received_at = received_at or timezone.now()
    counts = {"payloads": len(reports), "created": 0, "unchanged": 0, "replaced": 0}
    with transaction.atomic():
        seen = _stored_digests(app, device_key, [r.digest for r in reports])
        fresh = []
        for report in reports:  # a payload twice in one upload is stored once too
            if report.digest not in seen:
                seen.add(report.digest)
                fresh.append(report)
        counts["unchanged"] = len(reports) - len(fresh)
        if device_key:
            replaced = _replaced_windows(app, device_key, fresh)
        else:
            _refuse_duplicate_windows(app, fresh)
            replaced = []
        builds = {
            key: get_or_create_build(app, key[0], key[1], build_commit).pk
            for key in sorted({(r.build_version, r.build_number) for r in fresh})
        }
        keys: set[DayKey] = {(row.build_id, row.day) for row in replaced}
        MetricKitPayload.objects.filter(pk__in=[row.pk for row in replaced]).delete()
        rows = [
            _payload_row(app, r, builds[(r.build_version, r.build_number)], device_key)
            for r in fresh
        ]
        for row in rows:
            row.upload_id, row.received_at = upload_id, received_at
        MetricKitPayload.objects.bulk_create(rows, batch_size=CHUNK)
        paths: dict[DayKey, str] = {}  # the first payload of each day, where its sum is refused
        for row, report in zip(rows, fresh, strict=True):
            paths.setdefault((row.build_id, row.day), report.path)
        keys |= set(paths)
        counts["created"], counts["replaced"] = len(rows) - len(replaced), len(replaced)
        recompute_exit_stats(app, keys, paths)
    return counts


def _stored_digests(app: App, device_key: str, digests: Iterable[str]) -> set[str]:
    """The digests already stored for this device; without one, for any device (the payload
    again, whoever sent it first)."""
    found: set[str] = set()
    for batch in batched(sorted(set(digests)), CHUNK):
        rows = MetricKitPayload.objects.filter(where_in("digest", batch), app=app)
        if device_key:
            rows = rows.filter(device_key=device_key)
        found.update(rows.order_by().values_list("digest", flat=True))
    return found


def _refuse_duplicate_windows(app: App, reports: Sequence[MetricKitReport]) -> None:
    """Payloads that name no device: refuse one whose build and window are stored already, or
    come twice in the upload. It may be another device's day or the same day with other counts;
    nothing tells which, and storing it could count the same exits twice."""
    seen: set[Window] = set()
    for report in reports:
        window = (report.build_version, report.build_number, report.begins_at, report.ends_at)
        if window in seen:
            raise _duplicate_window(report, "another payload of this upload has")
        seen.add(window)
    stored: set[Window] = set()
    for batch in batched(sorted({r.begins_at for r in reports}), CHUNK):
        rows = MetricKitPayload.objects.filter(app=app, begins_at__in=batch).order_by()
        stored.update(rows.values_list("build__version", "build__number", "begins_at", "ends_at"))
    for report in reports:
        if (report.build_version, report.build_number, report.begins_at, report.ends_at) in stored:
            raise _duplicate_window(report, "a stored payload has")


def _duplicate_window(report: MetricKitReport, who: str) -> InvalidUpload:
    at = "timeStampBegin"
    return InvalidUpload(
        f"duplicate window: {who} build {report.build_version} ({report.build_number}) and "
        f"this window ({report.begins_at:%Y-%m-%d %H:%M} – {report.ends_at:%Y-%m-%d %H:%M} "
        "UTC), and the upload names no device, so this may be the same day counted twice: "
        "send each device's payloads with its id (device_id, or the wrapper's device.id)",
        f"{report.path}.{at}" if report.path else at,
    )


def _replaced_windows(
    app: App, device_key: str, reports: Sequence[MetricKitReport]
) -> list[MetricKitPayload]:
    """The stored payloads of the same device, build and window that these replace (a device
    updated during a day has a window of each build); refuses a report whose count is lower
    than the stored one's (a count over a window cannot go back)."""
    if not device_key or not reports:
        return []
    stored: dict[Window, MetricKitPayload] = {
        (row.build.version, row.build.number, row.begins_at, row.ends_at): row
        for row in MetricKitPayload.objects.filter(
            app=app, device_key=device_key, begins_at__in=[r.begins_at for r in reports]
        ).select_related("build")
    }
    replaced = []
    for report in reports:
        old = stored.get(
            (report.build_version, report.build_number, report.begins_at, report.ends_at)
        )
        if old is None:
            continue
        for side, new, before in (
            ("foregroundExitData", report.foreground, old.foreground),
            ("backgroundExitData", report.background, old.background),
        ):
            for key, n in sorted(before.items()):
                if new.get(key, 0) < n:
                    at = f"applicationExitMetrics.{side}.{key}"
                    raise InvalidUpload(
                        f"goes backwards: {n} stored for this device's window "
                        f"({report.begins_at:%Y-%m-%d %H:%M} UTC), now {new.get(key, 0)}",
                        f"{report.path}.{at}" if report.path else at,
                    )
        replaced.append(old)
    return replaced


def _payload_row(
    app: App, report: MetricKitReport, build_id: int, device_key: str
) -> MetricKitPayload:
    foreground = verdict_counts(report.foreground, foreground=True)
    background = verdict_counts(report.background, foreground=False)
    return MetricKitPayload(
        app=app,
        build_id=build_id,
        digest=report.digest,
        device_key=device_key,
        device_type=report.device_type,
        os_version=report.os_version,
        architecture=report.architecture,
        begins_at=report.begins_at,
        ends_at=report.ends_at,
        day=report.day,
        foreground=report.foreground,
        background=report.background,
        foreground_exits=sum(report.foreground.values()),
        foreground_memory=foreground.get(MEMORY, 0),
        background_exits=sum(report.background.values()),
        background_memory=background.get(BACKGROUND_MEMORY, 0),
        peak_memory_bytes=report.peak_memory_bytes,
        suspended_memory_bytes=report.suspended_memory_bytes,
        suspended_samples=report.suspended_samples,
    )


# --- Android ApplicationExitInfo ------------------------------------------------------------------


def store_process_exits(
    app: App,
    exits: Sequence[ProcessExitReport],
    *,
    build_version: str,
    build_number: str = "",
    build_commit: str = "",
    device_key: str = "",
    device_model: str = "",
    device_os: str = "",
    upload_id: int | None = None,
    received_at: datetime | None = None,
) -> dict[str, int]:
    """Store checked exits of `app` and match them to their runs; answers the upload's counts.
    An exit whose run is found belongs to the run's build, the others to the upload's."""
    received_at = received_at or timezone.now()
    with transaction.atomic():
        build = get_or_create_build(app, build_version, build_number, build_commit)
        device = (
            get_or_create_device(app, device_key, device_model, device_os) if device_key else None
        )
        stored = _stored_exits(app, exits)
        fresh = [e for e in exits if (e.pid, e.timestamp) not in stored]
        matched = _match(app, [(e.pid, e.timestamp, e.session_id, device_key) for e in fresh])
        rows = []
        for i, e in enumerate(fresh):
            session_pk, build_id = matched.get(i, (None, build.pk))
            rows.append(
                ProcessExit(
                    app=app, build_id=build_id, device=device, session_id=session_pk,
                    upload_id=upload_id, pid=e.pid, process_name=e.process_name,
                    reason=e.reason, description=e.description, importance=e.importance,
                    foreground=e.foreground, verdict=e.verdict, pss_kb=e.pss_kb,
                    rss_kb=e.rss_kb, status=e.status, timestamp=e.timestamp,
                    day=e.timestamp.date(), state_session_id=e.session_id,
                    received_at=received_at,
                )
            )  # fmt: skip
        ProcessExit.objects.bulk_create(rows, batch_size=CHUNK)
        recompute_exit_stats(app, {(row.build_id, row.day) for row in rows})
    return {
        "exits": len(exits),
        "created": len(rows),
        "unchanged": len(exits) - len(rows),
        "matched": len(matched),
    }


def _stored_exits(app: App, exits: Sequence[ProcessExitReport]) -> set[tuple[int, datetime]]:
    found: set[tuple[int, datetime]] = set()
    for batch in batched(sorted({e.pid for e in exits}), CHUNK):
        rows = ProcessExit.objects.filter(app=app, pid__in=batch).order_by()
        found.update(rows.values_list("pid", "timestamp"))
    return found


# (pid, timestamp, run id from processStateSummary, device key) of an exit to match
ExitKey = tuple[int, datetime, str, str]


def _match(app: App, exits: Sequence[ExitKey]) -> dict[int, tuple[int, int]]:
    """Index of each exit whose run is found -> (run pk, run's build id): first by the run id
    the app recorded, else by pid and time (`exits.match_exit`)."""
    found: dict[int, tuple[int, int]] = {}
    by_id: dict[str, tuple[int, int]] = {}
    for ids in batched(sorted({sid for *_, sid, _ in exits if sid}), CHUNK):
        rows = Session.objects.filter(where_in("session_id", ids), app=app).order_by()
        by_id.update(
            (sid, (pk, b)) for sid, pk, b in rows.values_list("session_id", "pk", "build_id")
        )
    rest = []
    for i, (_, _, sid, _) in enumerate(exits):
        if sid in by_id:
            found[i] = by_id[sid]
        else:
            rest.append(i)
    if not rest:
        return found
    earliest = min(exits[i][1] for i in rest) - MAX_RUN_SPAN
    latest = max(exits[i][1] for i in rest) + CLOCK_SLACK
    candidates: dict[int, list[tuple[RunCandidate, int]]] = defaultdict(list)
    for batch in batched(sorted({exits[i][0] for i in rest}), CHUNK):
        rows = Session.objects.filter(
            app=app, pid__in=batch, started_at__gte=earliest, started_at__lte=latest
        ).order_by()
        for pk, pid, started, seen, device, build_id in rows.values_list(
            "pk", "pid", "started_at", "last_seen_at", "device__device_key", "build_id"
        ):
            if pid is not None:  # the filter's pids: never None here
                candidates[pid].append((RunCandidate(pk, started, seen, device), build_id))
    for i in rest:
        pid, timestamp, _, device_key = exits[i]
        builds = {run.pk: build_id for run, build_id in candidates[pid]}
        run = match_exit(timestamp, device_key, [run for run, _ in candidates[pid]])
        if run is not None:
            found[i] = (run.pk, builds[run.pk])
    return found


def rematch_exits(app: App, session_pks: Sequence[int]) -> None:
    """Match the app's unmatched exits to these runs, just stored (their pids or ids may be the
    ones the exits name); an exit that finds its run moves to the run's build."""
    unmatched = ProcessExit.objects.filter(app=app, session__isnull=True)
    if not session_pks or not unmatched.exists():
        return
    pids: set[int] = set()
    ids: set[str] = set()
    for batch in batched(session_pks, CHUNK):
        for pid, sid in Session.objects.filter(pk__in=batch).values_list("pid", "session_id"):
            ids.add(sid)
            if pid is not None:
                pids.add(pid)
    candidates = list(
        unmatched.filter(Q(pid__in=pids) | Q(state_session_id__in=ids))
        .select_related("device")
        .order_by("pk")
    )
    if not candidates:
        return
    keys = [
        (e.pid, e.timestamp, e.state_session_id, e.device.device_key if e.device else "")
        for e in candidates
    ]
    touched: set[DayKey] = set()
    moved: list[tuple[int, int, int]] = []  # (exit pk, run pk, build id)
    for i, (session_pk, build_id) in sorted(_match(app, keys).items()):
        exit_row = candidates[i]
        touched |= {(exit_row.build_id, exit_row.day), (build_id, exit_row.day)}
        moved.append((exit_row.pk, session_pk, build_id))
    update_rows(ProcessExit, ("session_id", "build_id"), moved)
    recompute_exit_stats(app, touched)


# --- the counts per build and day -----------------------------------------------------------------


def recompute_exit_stats(
    app: App, keys: Iterable[DayKey], paths: Mapping[DayKey, str] | None = None
) -> None:
    """Rewrite OsExitDayStats of these (build, day) pairs from the stored payloads and exits.
    A day whose counts add up past a 64-bit column is refused at the path `paths` gives for it
    (the upload's payload of that day)."""
    wanted = set(keys)
    if not wanted:
        return
    builds, days = {b for b, _ in wanted}, {d for _, d in wanted}
    stats: dict[tuple[int, date, str], dict[str, Any]] = {}
    for row in MetricKitPayload.objects.filter(build_id__in=builds, day__in=days).values(
        "build_id", "day", "foreground", "background"
    ):
        if (row["build_id"], row["day"]) in wanted:
            entry = stats.setdefault(
                (row["build_id"], row["day"], OsExitDayStats.METRICKIT), _empty()
            )
            entry["reports"] += 1
            for side, reasons in (
                ("foreground", row["foreground"]),
                ("background", row["background"]),
            ):
                for reason, n in reasons.items():
                    _add(entry, side, reason, n, _verdicts(reason, side))
    grouped = (
        ProcessExit.objects.filter(build_id__in=builds, day__in=days)
        .values("build_id", "day", "foreground", "verdict", "reason")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for group in grouped:
        if (group["build_id"], group["day"]) in wanted:
            entry = stats.setdefault(
                (group["build_id"], group["day"], OsExitDayStats.EXITINFO), _empty()
            )
            entry["reports"] += group["n"]
            side = "foreground" if group["foreground"] else "background"
            _add(entry, side, group["reason"], group["n"], group["verdict"])
    totals = {key: _totals(entry) for key, entry in stats.items()}
    for (build_id, day, _), total in sorted(totals.items()):
        if max(total[name] for name in SUMMED) > MAX_INT64:
            path = (paths or {}).get((build_id, day), "")
            raise InvalidUpload(
                f"the exits of this build on {day} would add up to more than {MAX_INT64}",
                f"{path}.applicationExitMetrics" if path else "applicationExitMetrics",
            )
    days_of: dict[int, set[date]] = defaultdict(set)
    for build_id, day in wanted:
        days_of[build_id].add(day)
    with transaction.atomic():
        for build_id, build_days in sorted(days_of.items()):  # a statement per build
            OsExitDayStats.objects.filter(build_id=build_id, day__in=build_days).delete()
        OsExitDayStats.objects.bulk_create(
            [
                OsExitDayStats(app=app, build_id=b, day=d, source=source, **total)
                for (b, d, source), total in totals.items()
            ],
            batch_size=CHUNK,
        )


def _verdicts(reason: str, side: str) -> str:
    counts = verdict_counts({reason: 1}, foreground=side == "foreground")
    return next(iter(counts))


def _empty() -> dict[str, Any]:
    return {
        "reports": 0,
        "foreground": {},
        "background": {},
        "reasons": {"foreground": {}, "background": {}},
    }


def _add(entry: dict[str, Any], side: str, reason: str, n: int, verdict: str) -> None:
    if not n:
        return
    entry[side][verdict] = entry[side].get(verdict, 0) + n
    reasons = entry["reasons"][side]
    reasons[reason] = reasons.get(reason, 0) + n


SUMMED = ("foreground_exits", "foreground_memory", "background_exits", "background_memory")


def _totals(entry: dict[str, Any]) -> dict[str, Any]:
    return {
        **entry,
        "foreground_exits": sum(entry["foreground"].values()),
        "foreground_memory": entry["foreground"].get(MEMORY, 0),
        "background_exits": sum(entry["background"].values()),
        "background_memory": entry["background"].get(BACKGROUND_MEMORY, 0),
    }
