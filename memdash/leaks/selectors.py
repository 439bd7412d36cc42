"""Reads of leaks: per-build totals, groups (current fingerprint version), reports, records."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from django.db.models import Count, QuerySet, Sum

from memdash.core.models import App, Build
from memdash.core.selectors import builds_in_release_order
from memdash.leaks.fingerprint import FINGERPRINT_VERSION
from memdash.leaks.models import LeakGroup, LeakRecord, LeakReport
from memdash.triage.models import Status

SORTS = {
    "last_seen": ("-last_seen_at", "-id"),
    "bytes": ("-bytes", "-id"),
    "occurrences": ("-occurrences", "-id"),
    "devices": ("-devices", "-id"),
    "first_seen": ("first_seen_at", "id"),
}
OPEN_STATUSES = [Status.NEW, Status.OPEN]


@dataclass(frozen=True)
class BuildLeaks:
    """A build's leak reports, added up."""

    build: Build
    reports: int
    devices: int
    unreachable_bytes: int
    unreachable_allocations: int
    unlisted_bytes: int  # counted by the tools, not listed

    @property
    def bytes_per_report(self) -> float:
        return self.unreachable_bytes / self.reports if self.reports else 0.0

    @property
    def allocations_per_report(self) -> float:
        return self.unreachable_allocations / self.reports if self.reports else 0.0


def build_totals(app: App) -> list[BuildLeaks]:
    """Builds with leak reports, in release order."""
    rows = {
        row["build_id"]: row
        for row in LeakReport.objects.filter(app=app)
        .values("build_id")
        .annotate(
            reports=Count("id"),
            devices=Count("device_id", distinct=True),
            total_bytes=Sum("unreachable_bytes"),
            total_allocations=Sum("unreachable_allocations"),
            stated=Sum("stated_bytes"),
            listed=Sum("listed_bytes"),
        )
        .order_by()
    }
    unlisted = unlisted_bytes_per_build(app)
    return [
        BuildLeaks(
            build=build,
            reports=rows[build.pk]["reports"],
            devices=rows[build.pk]["devices"],
            unreachable_bytes=rows[build.pk]["total_bytes"] or 0,
            unreachable_allocations=rows[build.pk]["total_allocations"] or 0,
            unlisted_bytes=unlisted.get(build.pk, 0),
        )
        for build in builds_in_release_order(app)
        if build.pk in rows
    ]


def unlisted_bytes_per_build(app: App) -> dict[int, int]:
    """Σ max(stated - listed, 0) per build, over the reports that state a total."""
    totals: dict[int, int] = {}
    reports = LeakReport.objects.filter(app=app, stated_bytes__isnull=False).values_list(
        "build_id", "stated_bytes", "listed_bytes"
    )
    for build_id, stated, listed in reports:
        # stated_bytes__isnull=False above: never None here.
        totals[build_id] = totals.get(build_id, 0) + max(cast(int, stated) - listed, 0)
    return totals


def current_groups(app: App) -> QuerySet[LeakGroup]:
    """Groups made by today's fingerprint rules (older versions keep their history apart)."""
    return LeakGroup.objects.filter(app=app, fingerprint_version=FINGERPRINT_VERSION)


def group_rows(
    app: App, statuses: Sequence[str] | None = None, sort: str = "last_seen"
) -> QuerySet[LeakGroup]:
    groups = current_groups(app)
    if statuses:
        groups = groups.filter(status__in=statuses)
    return groups.select_related("assignee", "first_seen_build", "last_seen_build").order_by(
        *SORTS.get(sort, SORTS["last_seen"])
    )


def counts_by_status(app: App) -> dict[str, int]:
    counts = dict(
        current_groups(app).values("status").annotate(n=Count("id")).values_list("status", "n")
    )
    return {status: counts.get(status, 0) for status in Status.values}


def group_for_app(app: App, group_id: int) -> LeakGroup | None:
    return (
        LeakGroup.objects.filter(app=app, pk=group_id)
        .select_related("app", "assignee", "first_seen_build", "last_seen_build", "fixed_in_build")
        .first()
    )


def occurrences_per_build(group: LeakGroup) -> list[tuple[Build, int, int]]:
    """(build, records, bytes) in release order."""
    rows = {
        row["build_id"]: row
        for row in LeakRecord.objects.filter(group=group)
        .values("build_id")
        .annotate(n=Count("id"), total=Sum("bytes"))
        .order_by()
    }
    return [
        (build, rows[build.pk]["n"], rows[build.pk]["total"] or 0)
        for build in builds_in_release_order(group.app)
        if build.pk in rows
    ]


def group_records(group: LeakGroup, limit: int = 50) -> QuerySet[LeakRecord]:
    """The newest records of a group, with where they came from."""
    return (
        LeakRecord.objects.filter(group=group)
        .select_related("report", "build", "device")
        .order_by("-report__captured_at", "-id")[:limit]
    )


def recent_reports(app: App, limit: int = 20) -> QuerySet[LeakReport]:
    return (
        LeakReport.objects.filter(app=app)
        .select_related("build", "device")
        .order_by("-captured_at", "-id")[:limit]
    )


def report_for_app(app: App, report_id: int) -> LeakReport | None:
    return (
        LeakReport.objects.filter(app=app, pk=report_id).select_related("build", "device").first()
    )


def report_records(report: LeakReport) -> QuerySet[LeakRecord]:
    return report.records.select_related("group").order_by("position")
