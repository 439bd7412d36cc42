"""Leak reports from the field and from CI, their records, and the groups they fall into.

A report is one leak check of one process as a tool printed it (libmemunreachable,
LeakSanitizer, valgrind). It keeps the totals the tool stated next to the sum of its records.
Each record that is a leak (not valgrind's "still reachable") belongs to a `LeakGroup`: the
records, across reports, devices and builds, whose allocation stacks have the same fingerprint
(memdash.leaks.fingerprint). Groups are triaged like retain-cycle clusters (memdash.triage).
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.urls import reverse
from django.utils import timezone

from memdash.triage.models import Triaged


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
    # As the tool states them (null: the tool states none, as valgrind's XML has no totals).
    stated_bytes = models.BigIntegerField(null=True, blank=True)
    stated_allocations = models.BigIntegerField(null=True, blank=True)
    stated_records = models.PositiveIntegerField(null=True, blank=True)
    # The sum of the records it listed.
    listed_bytes = models.BigIntegerField(default=0)
    listed_allocations = models.BigIntegerField(default=0)
    listed_records = models.PositiveIntegerField(default=0)
    # The leaked memory: stated totals where there are any, else the unreachable records' sum.
    unreachable_bytes = models.BigIntegerField(default=0)
    unreachable_allocations = models.BigIntegerField(default=0)
    info = models.JSONField(default=dict, blank=True)
    suppressions = models.JSONField(default=list, blank=True)  # [{template, count, bytes}]

    class Meta:
        indexes = [models.Index(fields=["app", "build"]), models.Index(fields=["app", "-id"])]

    def __str__(self) -> str:
        return f"{self.tool} report of {self.process or 'a process'} in {self.build}"

    def get_absolute_url(self) -> str:
        return reverse("leaks:report_detail", args=[self.app_id, self.pk])

    @property
    def tool_info(self) -> list[tuple[str, object]]:
        """What the tool said about itself and the run (ABI, version, command …)."""
        return [(k, v) for k, v in self.info.items() if k != "suppressions_outside_reports"]

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
    its build id (memdash.symbols.lookup.normalize_debug_id), so that a debug file arriving
    later finds the records it names (memdash.leaks.symbol_services). The record is referred to
    by id only, so that records are still deleted in bulk; the rows go with the record's build."""

    app = models.ForeignKey("core.App", on_delete=models.CASCADE, related_name="+")
    build = models.ForeignKey("core.Build", on_delete=models.CASCADE, related_name="+")
    record_id = models.BigIntegerField(db_index=True)
    debug_id = models.CharField(max_length=64)

    class Meta:
        indexes = [models.Index(fields=["app", "debug_id"], name="leaks_unnamed_debug_id")]
