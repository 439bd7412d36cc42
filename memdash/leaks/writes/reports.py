"""Writes of leak reports: a parsed `LeakLog` into reports, records and groups, in bulk, then the
groups' counts and their triage sightings (a fixed group seen again in a later build reopens)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, Max, Min, Sum

from memdash.core.models import App, Build, Device
from memdash.leaks.logic import reports as plain
from memdash.leaks.logic.fingerprint import FINGERPRINT_VERSION, Fingerprint, fingerprint
from memdash.leaks.logic.naming import image_ids, name_frames, needs_name
from memdash.leaks.models import LeakGroup, LeakRecord, LeakReport, UnnamedImage
from memdash.symbols import reads as symbols
from memdash.symbols.logic.lookup import normalize_debug_id
from memdash.triage.models import Status

MAX_TITLE = 500
MAX_PROCESS = 255
UNATTRIBUTED = "suppressions_outside_reports"


@dataclass(frozen=True)
class LeaksStored:
    reports: list[LeakReport]
    records: int
    groups: int
    new_groups: int
    reopened: int

    def counts(self) -> dict[str, int]:
        return {
            "reports": len(self.reports),
            "records": self.records,
            "groups": self.groups,
            "new_groups": self.new_groups,
            "reopened": self.reopened,
        }


def symbolicated_frames(frames: Iterable[dict[str, Any]]) -> int:
    """How many frames of a stored stack name a function: the measure of a better stack."""
    return sum(1 for frame in frames if frame.get("symbol"))


def name_log_frames(app: App, log: plain.LeakLog) -> int:
    """Name the frames of a parsed log that the app's debug files know (before fingerprinting,
    so a leak is grouped by name from the start); answers how many stacks changed. Debug files
    arriving later rename the stored stacks (memdash.leaks.writes.names)."""
    records = [record for report in log.reports for record in report.records]
    wanted = image_ids(frame for record in records for frame in record.frames)
    resolve = symbols.symbolicator(app, wanted) if wanted else None
    if not resolve:
        return 0
    changed = 0
    for record in records:
        named = name_frames(record.frames, resolve)
        if named is not None:
            record.frames = named
            changed += 1
    return changed


def record_unnamed_images(app: App, records: Iterable[LeakRecord]) -> None:
    """The modules (by debug id) each record still has frames without a name in."""
    rows = []
    for record in records:
        found = {
            normalize_debug_id(frame.build_id)
            for frame in map(plain.StackFrame.from_dict, record.frames)
            if needs_name(frame)
        }
        rows += [
            UnnamedImage(app=app, build_id=record.build_id, record_id=record.pk, debug_id=d)
            for d in sorted(found)
            if d
        ]
    UnnamedImage.objects.bulk_create(rows, batch_size=2_000)


def report_row(
    app: App,
    build: Build,
    device: Device | None,
    report: plain.LeakReport,
    position: int,
    *,
    captured_at: datetime,
    received_at: datetime,
    upload_id: int | None,
    source_format: str,
) -> LeakReport:
    return LeakReport(
        app=app,
        build=build,
        device=device,
        upload_id=upload_id,
        position=position,
        tool=report.tool,
        source_format=source_format,
        process=report.process[:MAX_PROCESS],
        captured_at=captured_at,
        received_at=received_at,
        stated_bytes=report.stated_bytes,
        stated_allocations=report.stated_allocations,
        stated_records=report.stated_records,
        listed_bytes=report.listed_bytes,
        listed_allocations=report.listed_allocations,
        listed_records=report.listed_records,
        unreachable_bytes=report.unreachable_bytes,
        unreachable_allocations=report.unreachable_allocations,
        kinds=report.kind_totals(),
        info=report.info,
        suppressions=suppression_rows(report.suppressions),
    )


def suppression_rows(suppressions: list[plain.Suppression]) -> list[dict[str, Any]]:
    return [{"template": s.template, "count": s.count, "bytes": s.bytes} for s in suppressions]


def sighting_may_change(group: LeakGroup, build: Build) -> bool:
    """Whether seeing `group` in `build` could change its triage: it was marked fixed, or the
    build lies outside the builds it was seen in."""
    if group.status == Status.FIXED:
        return True
    first, last = group.first_seen_build, group.last_seen_build
    if first is None or last is None:
        return True
    return build.release_key < first.release_key or build.release_key > last.release_key


def groups_for(
    app: App, found: dict[str, tuple[Fingerprint, list[dict[str, Any]]]]
) -> tuple[dict[str, LeakGroup], int]:
    """The app's groups for these fingerprints, creating the missing ones; a concurrent upload
    creating the same group is ignored and its row read back."""
    keys = list(found)
    existing = LeakGroup.objects.filter(
        app=app, fingerprint_version=FINGERPRINT_VERSION, fingerprint__in=keys
    ).select_related("first_seen_build", "last_seen_build")
    groups = {group.fingerprint: group for group in existing}
    missing = [key for key in keys if key not in groups]
    if missing:
        LeakGroup.objects.bulk_create(
            [
                LeakGroup(
                    app=app,
                    fingerprint=key,
                    fingerprint_version=FINGERPRINT_VERSION,
                    title=found[key][0].title[:MAX_TITLE],
                    by_size=found[key][0].by_size,
                    frame_keys=list(found[key][0].frames),
                    stack=found[key][1],
                )
                for key in missing
            ],
            ignore_conflicts=True,
        )
        groups = {group.fingerprint: group for group in existing.all()}
    return groups, len(missing)


def refresh_group_counts(app_id: int, group_ids: list[int]) -> None:
    """Occurrences, bytes, devices, builds, first and last seen of these groups of the app,
    recounted from their records (so two uploads at once cannot lose each other's counts). The
    app named on both sides of the join to the reports: on Citus it stays on the app's worker."""
    stats = (
        LeakRecord.objects.filter(app_id=app_id, report__app_id=app_id, group_id__in=group_ids)
        .values("group_id")
        .annotate(
            occurrences=Count("id"),
            total_bytes=Sum("bytes"),
            total_allocations=Sum("allocations"),
            device_count=Count("device_id", distinct=True),
            build_count=Count("build_id", distinct=True),
            first=Min("report__captured_at"),
            last=Max("report__captured_at"),
        )
        .order_by()
    )
    groups = LeakGroup.objects.filter(app_id=app_id).in_bulk(group_ids)
    for row in stats:
        group = groups[row["group_id"]]
        group.occurrences = row["occurrences"]
        group.bytes = row["total_bytes"] or 0
        group.allocations = row["total_allocations"] or 0
        group.devices = row["device_count"]
        group.builds = row["build_count"]
        group.first_seen_at = row["first"]
        group.last_seen_at = row["last"]
    LeakGroup.objects.bulk_update(
        groups.values(),
        [
            "occurrences",
            "bytes",
            "allocations",
            "devices",
            "builds",
            "first_seen_at",
            "last_seen_at",
        ],
    )


def store_leak_log(
    app: App,
    build: Build,
    device: Device | None,
    log: plain.LeakLog,
    *,
    captured_at: datetime,
    received_at: datetime,
    upload_id: int | None = None,
    source_format: str = "",
) -> LeaksStored:
    """Store a parsed (already validated) log: every report, every record, the groups."""
    report_rows = LeakReport.objects.bulk_create(
        [
            report_row(
                app,
                build,
                device,
                report,
                position,
                captured_at=captured_at,
                received_at=received_at,
                upload_id=upload_id,
                source_format=source_format,
            )
            for position, report in enumerate(log.reports)
        ]
    )
    if log.other_suppressions:
        # Printed outside any report (a process whose leaks were all suppressed): kept with
        # the upload's first report.
        first = report_rows[0]
        first.info = {**first.info, UNATTRIBUTED: suppression_rows(log.other_suppressions)}
        first.save(update_fields=["info"])
    name_log_frames(app, log)
    # Fingerprint every leak (still-reachable memory is stored but not grouped), keeping for
    # each fingerprint the most symbolicated stack of this upload.
    prepared: list[tuple[LeakReport, int, plain.LeakRecord, list[dict[str, Any]], str | None]] = []
    found: dict[str, tuple[Fingerprint, list[dict[str, Any]]]] = {}
    for row, report in zip(report_rows, log.reports, strict=True):
        for position, record in enumerate(report.records):
            frames = [frame.as_dict() for frame in record.frames]
            key = None
            if record.cycle:  # triaged with the app's retain cycles: in no leak group
                record.detail = {**record.detail, "cycle": True}
            elif record.is_unreachable:
                print_ = fingerprint(record)
                key = print_.key
                best = found.get(key)
                if best is None or symbolicated_frames(frames) > symbolicated_frames(best[1]):
                    found[key] = (print_, frames)
            prepared.append((row, position, record, frames, key))
    groups, new_groups = groups_for(app, found)
    created = LeakRecord.objects.bulk_create(
        [
            LeakRecord(
                report=row,
                app_id=app.pk,
                group=groups[key] if key else None,
                build=build,
                device=device,
                position=position,
                kind=record.kind,
                bytes=record.bytes,
                allocations=record.allocations,
                size=record.size,
                address=f"0x{record.address:x}" if record.address is not None else "",
                frames=frames,
                detail=record.detail,
            )
            for row, position, record, frames, key in prepared
        ],
        batch_size=2_000,
    )
    record_unnamed_images(app, created)
    better_stacks = [
        group
        for key, group in groups.items()
        if symbolicated_frames(found[key][1]) > symbolicated_frames(group.stack)
    ]
    for group in better_stacks:
        group.stack = found[group.fingerprint][1]
    LeakGroup.objects.bulk_update(better_stacks, ["stack"])
    group_ids = [group.pk for group in groups.values()]
    refresh_group_counts(app.pk, group_ids)
    # Sightings: widen first/last seen build, reopen a group fixed in an earlier build (the
    # triage service locks and decides; groups it would leave as they are are not asked).
    reopened = sum(
        group.seen_in(build) for group in groups.values() if sighting_may_change(group, build)
    )
    return LeaksStored(
        reports=report_rows,
        records=len(prepared),
        groups=len(groups),
        new_groups=new_groups,
        reopened=reopened,
    )


def cycle_records(reports: Iterable[LeakReport]) -> list[LeakRecord]:
    """The records of these reports that are retain cycles (Xcode's `ROOT CYCLE`)."""
    records = LeakRecord.objects.filter(report__in=list(reports), group__isnull=True)
    return [record for record in records.order_by("pk") if record.detail.get("cycle")]


def link_cycle_clusters(links: dict[int, list[int]]) -> None:
    """Say on each retain-cycle record (by id) which retain-cycle clusters its loops are in, so
    that its report links to where they are triaged."""
    records = LeakRecord.objects.in_bulk(list(links))
    for pk, cluster_ids in links.items():
        records[pk].detail = {**records[pk].detail, "cycle_clusters": cluster_ids}
    LeakRecord.objects.bulk_update(records.values(), ["detail"])
