"""Leak reports from the field and from CI, their records, and the groups they fall into.

A report is one leak check of one process as a tool printed it (libmemunreachable,
LeakSanitizer, valgrind). It keeps the totals the tool stated next to the sum of its records.
Each record that is a leak (not valgrind's "still reachable") belongs to a `LeakGroup`: the
records, across reports, devices and builds, whose allocation stacks have the same fingerprint
(memdash.leaks.logic.fingerprint). Groups are triaged like retain-cycle clusters (memdash.triage).
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.urls import reverse
from django.utils import timezone

from memdash.leaks.logic.fingerprint import FINGERPRINT_VERSION
from memdash.leaks.logic.reports import LOST_KINDS, REACHABLE, SANITIZER, VALGRIND, kind_label
from memdash.triage.models import Triaged

LOST = frozenset(LOST_KINDS)


def tool_name(tool: str, info: dict[str, Any]) -> str:
    if tool == SANITIZER:
        return str(info.get("sanitizer") or "LeakSanitizer")
    if tool == VALGRIND:
        return "valgrind memcheck"
    return tool


def kind_figure(kinds: dict[str, Any], kind: str, what: str) -> int | None:
    """A kind's bytes or allocations: as stated where stated, else as listed."""
    totals = kinds.get(kind)
    if not totals:
        return None
    stated = totals.get(f"stated_{what}")
    return int(stated) if stated is not None else int(totals.get(f"listed_{what}") or 0)


class LeakReport(models.Model):
    app = models.ForeignKey("core.App", on_delete=models.CASCADE, related_name="leak_reports")
    build = models.ForeignKey("core.Build", on_delete=models.CASCADE, related_name="+")
    device = models.ForeignKey(
        "core.Device", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    upload_id = models.BigIntegerField(null=True, blank=True)  # ingest's Upload, when known
    position = models.PositiveIntegerField(default=0)  # which report of its upload
    tool = models.CharField(max_length=32)  # libmemunreachable, sanitizer, valgrind
    source_format = models.CharField(max_length=64, blank=True, default="")
    process = models.CharField(max_length=255, blank=True, default="")
    captured_at = models.DateTimeField()
    received_at = models.DateTimeField(default=timezone.now)
    # Lost memory (the leaks: every kind but still reachable) as the tool states it (null: the
    # tool states none, as valgrind's XML of protocol 4 has no totals).
    stated_bytes = models.BigIntegerField(null=True, blank=True)
    stated_allocations = models.BigIntegerField(null=True, blank=True)
    stated_records = models.PositiveIntegerField(null=True, blank=True)  # of every kind
    # The sum of the lost records it listed (still reachable ones are in `kinds`).
    listed_bytes = models.BigIntegerField(default=0)
    listed_allocations = models.BigIntegerField(default=0)
    listed_records = models.PositiveIntegerField(default=0)  # of every kind
    # The leaked memory: stated totals where there are any, else the lost records' sum.
    unreachable_bytes = models.BigIntegerField(default=0)
    unreachable_allocations = models.BigIntegerField(default=0)
    # Per kind (direct, indirect, possible, reachable, suppressed): {stated_bytes,
    # stated_allocations (null where the tool states none per kind), listed_bytes,
    # listed_allocations, records} (memdash.leaks.logic.reports.LeakReport.kind_totals).
    kinds = models.JSONField(default=dict, blank=True)
    info = models.JSONField(default=dict, blank=True)
    suppressions = models.JSONField(default=list, blank=True)  # [{template, count, bytes}]

    class Meta:
        indexes = [models.Index(fields=["app", "build"]), models.Index(fields=["app", "-id"])]
        # An upload's reports are stored once, whoever processes it and however often.
        constraints = [
            models.UniqueConstraint(fields=["upload_id", "position"], name="leaks_once_per_upload")
        ]

    def __str__(self) -> str:
        return f"{self.tool} report of {self.process or 'a process'} in {self.build}"

    def get_absolute_url(self) -> str:
        return reverse("leaks:report_detail", args=[self.app_id, self.pk])

    @property
    def tool_name(self) -> str:
        """The tool as it names itself: LeakSanitizer (from its ERROR line, under whichever
        sanitizer), valgrind memcheck, libmemunreachable."""
        return tool_name(self.tool, self.info)

    @property
    def tool_info(self) -> list[tuple[str, object]]:
        """What the tool said about itself and the run (ABI, version, command …); the heap
        summary has a table of its own."""
        hidden = {"suppressions_outside_reports", "heap_summary", "sanitizer"}
        return [(k, v) for k, v in self.info.items() if k not in hidden]

    @property
    def heap_summary(self) -> dict[str, int]:
        """valgrind's HEAP SUMMARY (in use at exit, total heap usage), when it printed one."""
        summary = self.info.get("heap_summary")
        return summary if isinstance(summary, dict) else {}

    @property
    def kind_rows(self) -> list[dict[str, Any]]:
        """`kinds` in order, each with its kind, the tool's word for it and `lost` (a leak)."""
        return [
            {**totals, "kind": kind, "label": kind_label(self.tool, kind), "lost": kind in LOST}
            for kind, totals in self.kinds.items()
        ]

    @property
    def reachable_bytes(self) -> int | None:
        """Still-reachable memory, stated where the tool states it, else listed; None when the
        report says nothing of it."""
        return kind_figure(self.kinds, REACHABLE, "bytes")

    @property
    def reachable_allocations(self) -> int | None:
        return kind_figure(self.kinds, REACHABLE, "allocations")

    @property
    def suppressions_outside_reports(self) -> list[dict[str, Any]]:
        return self.info.get("suppressions_outside_reports", [])

    @property
    def unlisted_bytes(self) -> int:
        return max((self.stated_bytes or 0) - self.listed_bytes, 0)

    @property
    def unlisted_allocations(self) -> int:
        return max((self.stated_allocations or 0) - self.listed_allocations, 0)

    @property
    def unlisted_records(self) -> int:
        return max((self.stated_records or 0) - self.listed_records, 0)


class LeakGroup(Triaged):
    """The leaks with one fingerprint: one allocation site, one task."""

    app = models.ForeignKey("core.App", on_delete=models.CASCADE, related_name="leak_groups")
    fingerprint = models.CharField(max_length=64)
    fingerprint_version = models.CharField(max_length=32)
    title = models.CharField(max_length=500)  # the top frame, or the size for stackless leaks
    by_size = models.BooleanField(default=False)
    frame_keys = models.JSONField(default=list)  # what the fingerprint hashed
    # A representative stack to show: the most symbolicated one seen so far.
    stack = models.JSONField(default=list)
    occurrences = models.PositiveBigIntegerField(default=0)  # records
    bytes = models.BigIntegerField(default=0)
    allocations = models.BigIntegerField(default=0)
    devices = models.PositiveIntegerField(default=0)
    builds = models.PositiveIntegerField(default=0)
    first_seen_at = models.DateTimeField(null=True, blank=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["app", "fingerprint_version", "fingerprint"], name="leaks_group_identity"
            )
        ]
        indexes = [models.Index(fields=["app", "fingerprint_version", "status"])]

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("leaks:group_detail", args=[self.app_id, self.pk])

    @property
    def rules_outdated(self) -> bool:
        """Made by other fingerprint rules than today's: listed as it is until it is regrouped
        (memdash.leaks.writes.regroup)."""
        return self.fingerprint_version != FINGERPRINT_VERSION


class LeakRecord(models.Model):
    """One record of a report: allocations the tool printed together, with their stack."""

    report = models.ForeignKey(LeakReport, on_delete=models.CASCADE, related_name="records")
    group = models.ForeignKey(
        LeakGroup, null=True, blank=True, on_delete=models.SET_NULL, related_name="records"
    )  # null for memory that is still reachable: not a leak
    build = models.ForeignKey("core.Build", on_delete=models.CASCADE, related_name="+")
    device = models.ForeignKey(
        "core.Device", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    position = models.PositiveIntegerField(default=0)
    kind = models.CharField(max_length=16)  # direct, indirect, possible, reachable
    bytes = models.BigIntegerField()
    allocations = models.BigIntegerField()
    size = models.BigIntegerField(null=True, blank=True)  # of one allocation, when known
    address = models.CharField(max_length=18, blank=True, default="")
    frames = models.JSONField(default=list)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [models.Index(fields=["group", "build"])]
        ordering = ["report_id", "position"]


class UnnamedImage(models.Model):
    """A module a record's stack has frames in that no debug file named yet, by the debug id of
    its build id (memdash.symbols.logic.lookup.normalize_debug_id), so that a debug file arriving
    later finds the records it names (memdash.leaks.writes.names). The record is referred to
    by id only, so that records are still deleted in bulk; the rows go with the record's build."""

    app = models.ForeignKey("core.App", on_delete=models.CASCADE, related_name="+")
    build = models.ForeignKey("core.Build", on_delete=models.CASCADE, related_name="+")
    record_id = models.BigIntegerField(db_index=True)
    debug_id = models.CharField(max_length=64)

    class Meta:
        indexes = [models.Index(fields=["app", "debug_id"], name="leaks_unnamed_debug_id")]
