"""Leak reports from the field and from CI, their records, and the groups they fall into.

A report is one leak check of one process as a tool printed it (libmemunreachable,
LeakSanitizer, valgrind). It keeps the totals the tool stated next to the sum of its records.
Each record that is a leak (not valgrind's "still reachable") belongs to a `LeakGroup`: the
records, across reports, devices and builds, whose allocation stacks have the same fingerprint
(memdash.leaks.logic.fingerprint). Groups are triaged like retain-cycle clusters (memdash.triage).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import models
from django.urls import reverse
from django.utils import timezone

from memdash.leaks.logic.fingerprint import FINGERPRINT_VERSION
from memdash.leaks.logic.reports import (
    LOST_KINDS,
    NO_LEAK_CHECK,
    NOTHING_LISTED,
    REACHABLE,
    SANITIZER,
    VALGRIND,
    XCODE_LEAKS,
    kind_label,
)
from memdash.triage.models import Triaged

if TYPE_CHECKING:
    from memdash.core.models import Build

LOST = frozenset(LOST_KINDS)
# What Xcode's `leaks` says of the process that the report page shows as cards, not as a line.
XCODE_CARDS = (
    "footprint", "footprint_bytes", "peak_footprint", "peak_footprint_bytes", "malloced_nodes",
    "malloced_kb", "path", "process", "process_name", "pid", "analysis_tool", "load_address",
    "crash_report_version", "idle_exit",
)  # fmt: skip


def tool_name(tool: str, info: dict[str, Any]) -> str:
    if tool == SANITIZER:
        return str(info.get("sanitizer") or "LeakSanitizer")
    if tool == VALGRIND:
        return "valgrind memcheck"
    if tool == XCODE_LEAKS:
        return "Xcode leaks"
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
            models.UniqueConstraint(
                fields=["upload_id", "position", "app"], name="leaks_once_per_upload"
            )
        ]

    def __str__(self) -> str:
        return f"{self.tool} report of {self.process or 'a process'} in {self.build}"

    def get_absolute_url(self) -> str:
        return reverse("leaks:report_detail", args=[self.app_id, self.pk])

    @property
    def tool_name(self) -> str:
        """The tool as it names itself: LeakSanitizer (from its ERROR line, under whichever
        sanitizer), valgrind memcheck, libmemunreachable, Xcode leaks (Apple's `leaks`)."""
        return tool_name(self.tool, self.info)

    @property
    def tool_info(self) -> list[tuple[str, object]]:
        """What the tool said about itself and the run (ABI, version, command …); the heap
        summary has a table of its own."""
        hidden = {
            "suppressions_outside_reports", "heap_summary", "sanitizer", "fatal_signal",
            "leak_check", *XCODE_CARDS,
        }  # fmt: skip
        return [(k, v) for k, v in self.info.items() if k not in hidden]

    @property
    def footprint(self) -> dict[str, Any]:
        """Xcode's `leaks`: the process's physical footprint and its peak (as printed and in
        bytes) and what it had allocated, shown with the report; {} for other tools."""
        return {key: self.info[key] for key in XCODE_CARDS if key in self.info}

    @property
    def heap_summary(self) -> dict[str, int]:
        """valgrind's HEAP SUMMARY (in use at exit, total heap usage), when it printed one."""
        summary = self.info.get("heap_summary")
        return summary if isinstance(summary, dict) else {}

    @property
    def fatal_signal(self) -> dict[str, Any]:
        """The signal the process died of (valgrind's "Process terminating with default action
        of signal 11 (SIGSEGV)", its XML's `<fatal_signal>`): number, name, event, frames; {}
        when it exited."""
        signal = self.info.get("fatal_signal")
        return signal if isinstance(signal, dict) else {}

    @property
    def no_leak_check(self) -> bool:
        """No leak check ran (the process died, valgrind ran with --leak-check=no): its leaked
        memory is unknown, not 0."""
        return self.info.get("leak_check") == NO_LEAK_CHECK

    @property
    def nothing_listed(self) -> bool:
        """valgrind's XML of protocol 4 or 5 listed no loss record: it states no totals, so
        the leaked memory is not in the file (not 0)."""
        return self.info.get("leak_check") == NOTHING_LISTED

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

    def occurrences_in(self, build: Build) -> int:
        return LeakRecord.objects.filter(group=self, build=build).count()

    @property
    def by_shape(self) -> bool:
        """Grouped by the tree its tool printed (Xcode's `leaks` without stacks), not a stack."""
        return not self.by_size and not self.stack and bool(self.frame_keys)

    @property
    def rules_outdated(self) -> bool:
        """Made by other fingerprint rules than today's: listed as it is until it is regrouped
        (memdash.leaks.writes.regroup)."""
        return self.fingerprint_version != FINGERPRINT_VERSION


class LeakRecord(models.Model):
    """One record of a report: allocations the tool printed together, with their stack."""

    report = models.ForeignKey(LeakReport, on_delete=models.CASCADE, related_name="records")
    # The app's id, the distribution column on Citus (an app's rows on one worker).
    app = models.ForeignKey(
        "core.App", on_delete=models.DO_NOTHING, db_constraint=False, db_index=False,
        related_name="+",
    )  # fmt: skip
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


# --- LeakCanary (Android): heap analyses, their leaks clustered by LeakCanary's signature -----


class LeakTraceAnalysis(models.Model):
    """One LeakCanary heap analysis (`HeapAnalysisSuccess`, or `shark-cli analyze`) of one app
    process; its leaks are occurrences of their clusters."""

    app = models.ForeignKey("core.App", on_delete=models.CASCADE, related_name="+")
    build = models.ForeignKey("core.Build", on_delete=models.CASCADE, related_name="+")
    device = models.ForeignKey(
        "core.Device", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    upload_id = models.BigIntegerField(null=True, blank=True)  # ingest's Upload, when known
    position = models.PositiveIntegerField(default=0)  # which analysis of its upload
    captured_at = models.DateTimeField()  # the heap dump's time, else when it arrived
    received_at = models.DateTimeField(default=timezone.now)
    leakcanary_version = models.CharField(max_length=32, blank=True, default="")
    process = models.CharField(max_length=255, blank=True, default="")
    # What the section headings announce (`2 APPLICATION LEAKS`), as LeakCanary counts.
    application_leaks = models.PositiveIntegerField(default=0)
    library_leaks = models.PositiveIntegerField(default=0)
    unreachable_objects = models.PositiveIntegerField(null=True, blank=True)
    unreachable = models.JSONField(default=list, blank=True)  # that section's lines
    metadata = models.JSONField(default=dict, blank=True)  # METADATA, keys as printed

    class Meta:
        indexes = [models.Index(fields=["app", "-id"])]
        constraints = [
            models.UniqueConstraint(
                fields=["upload_id", "position", "app"], name="leaks_analysis_once_per_upload"
            )
        ]

    def __str__(self) -> str:
        return f"LeakCanary analysis of {self.process or 'a process'} in {self.build}"

    def get_absolute_url(self) -> str:
        return reverse("leaks:trace_analysis", args=[self.app_id, self.pk])


class LeakTraceCluster(Triaged):
    """The leaks of one LeakCanary signature (the hash of the references likely to cause them):
    one bug, whatever device or build it was found on; triaged like retain-cycle clusters."""

    app = models.ForeignKey("core.App", on_delete=models.CASCADE, related_name="+")
    signature = models.CharField(max_length=64)
    library = models.BooleanField(default=False)  # a known bug of 3rd-party code
    title = models.CharField(max_length=500)
    leaking_class = models.CharField(max_length=500, blank=True, default="")
    pattern = models.TextField(blank=True, default="")  # a library leak's `Leak pattern:`
    description = models.TextField(blank=True, default="")
    gc_root = models.CharField(max_length=255, blank=True, default="")
    trace = models.JSONField(default=list)  # the latest trace shown (objects, as stored)
    occurrences = models.PositiveBigIntegerField(default=0)  # analyses that found it
    traces = models.PositiveBigIntegerField(default=0)  # leak traces over them
    retained_bytes = models.BigIntegerField(default=0)  # as LeakCanary states them, summed
    devices = models.PositiveIntegerField(default=0)
    builds = models.PositiveIntegerField(default=0)
    first_seen_at = models.DateTimeField(null=True, blank=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["app", "signature"], name="leaks_trace_signature")
        ]
        indexes = [models.Index(fields=["app", "library", "status"])]

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("leaks:trace_detail", args=[self.app_id, self.pk])

    def occurrences_in(self, build: Build) -> int:
        return LeakTraceOccurrence.objects.filter(cluster=self, build=build).count()


class LeakTraceOccurrence(models.Model):
    """One leak of one analysis: what LeakCanary retained and showed there."""

    analysis = models.ForeignKey(
        LeakTraceAnalysis, on_delete=models.CASCADE, related_name="occurrences"
    )
    # The app's id, the distribution column on Citus (an app's rows on one worker).
    app = models.ForeignKey(
        "core.App", on_delete=models.DO_NOTHING, db_constraint=False, db_index=False,
        related_name="+",
    )  # fmt: skip
    cluster = models.ForeignKey(
        LeakTraceCluster, on_delete=models.CASCADE, related_name="occurrence_set"
    )
    # Copied from the analysis so that counts per cluster, build and device are one query.
    build = models.ForeignKey("core.Build", on_delete=models.CASCADE, related_name="+")
    device = models.ForeignKey(
        "core.Device", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    captured_at = models.DateTimeField()
    position = models.PositiveIntegerField(default=0)
    retained_bytes = models.BigIntegerField(null=True, blank=True)  # over its traces
    retained_objects = models.BigIntegerField(null=True, blank=True)  # of the leaking object
    traces = models.PositiveIntegerField(default=1)  # with this signature in the analysis
    gc_root = models.CharField(max_length=255, blank=True, default="")
    trace = models.JSONField(default=list)

    class Meta:
        indexes = [models.Index(fields=["cluster", "build"])]
        ordering = ["-captured_at", "-id"]

    def __str__(self) -> str:
        return f"{self.cluster} in {self.build}"
