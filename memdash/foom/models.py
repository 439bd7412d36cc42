"""App runs (sessions), how each one ended, and the FOOM counts that the pages read.

A `Session` keeps the facts the app reported (sessions-v1) next to the class the rules gave it,
the rule's number and the rules version, so a new version of the rules can re-classify the
history and every result says what produced it. The pages never count sessions: they read
`BuildFoomStats` (one row per build) and `BuildDayFoomStats` (one row per build and day), which
the services recompute for the builds an upload or a re-classification touched.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.urls import reverse
from django.utils import timezone

from memdash.core.models import App, Build, Device
from memdash.foom.logic.classify import (
    CLASSES,
    END_FLAGS,
    PENDING,
    RULE_NAMES,
    RULES,
    STATES,
    EndFacts,
    RunFacts,
)
from memdash.foom.logic.diagnostics import KIND_LABELS, summary_line


class Session(models.Model):
    # A large, bulk-written table (see memdash.core.writes.bulk): like the snapshot rows, its
    # foreign keys carry no database constraint (checking three per inserted run costs as much as
    # the insert) and no index of their own (each leads one of the indexes below, and every index
    # costs each insert and re-classification). The services write only ids they resolved in
    # the same transaction. Deleting an app or a build removes its runs in one statement (the
    # pre_delete receivers of apps.py); deleting a device cascades through the ORM.
    app = models.ForeignKey(
        App,
        on_delete=models.CASCADE,
        related_name="foom_sessions",
        db_constraint=False,
        db_index=False,
    )
    session_id = models.CharField(max_length=200)
    build = models.ForeignKey(
        Build,
        on_delete=models.CASCADE,
        related_name="foom_sessions",
        db_constraint=False,
        db_index=False,
    )
    device = models.ForeignKey(
        Device,
        on_delete=models.CASCADE,
        related_name="foom_sessions",
        db_constraint=False,
        db_index=False,
    )
    binary_uuid = models.CharField(max_length=128, blank=True, default="")
    os = models.CharField(max_length=128, blank=True, default="")
    boot_time = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField()
    started_day = models.DateField()  # UTC day of started_at: the key of the daily counts
    last_seen_at = models.DateTimeField(null=True, blank=True)
    bot = models.BooleanField(default=False)
    # The process id (Android): matches the run to the OS's record of its exit (exit_services).
    pid = models.IntegerField(null=True, blank=True)

    # What the run recorded about its end; has_end is False until it arrives.
    has_end = models.BooleanField(default=False)
    end_state = models.CharField(
        max_length=16, blank=True, default="", choices=[(s, s) for s in STATES]
    )
    active_for_ms = models.BigIntegerField(null=True, blank=True)
    crashed = models.BooleanField(default=False)
    main_thread_blocked = models.BooleanField(default=False)
    user_quit = models.BooleanField(default=False)
    exit_called = models.BooleanField(default=False)
    debugger = models.BooleanField(default=False)
    simulator = models.BooleanField(default=False)
    extension = models.BooleanField(default=False)
    thermal_critical = models.BooleanField(default=False)
    os_exit_reason = models.CharField(max_length=64, blank=True, default="")
    memory_warnings = models.IntegerField(null=True, blank=True)
    footprint_bytes = models.BigIntegerField(null=True, blank=True)
    peak_footprint_bytes = models.BigIntegerField(null=True, blank=True)

    # The result of the rules.
    classification = models.CharField(
        max_length=20, default=PENDING, choices=[(c, c) for c in CLASSES]
    )
    rule = models.SmallIntegerField(null=True, blank=True)
    rules_version = models.CharField(max_length=32, blank=True, default="")
    classified_at = models.DateTimeField(null=True, blank=True)

    received_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            # Session id first: an upload looks its runs up by id, and with the app first
            # a planner without statistics reads the app's whole history instead.
            models.UniqueConstraint(fields=["session_id", "app"], name="foom_session_identity")
        ]
        indexes = [
            # predecessor / successor on the device
            models.Index(fields=["device", "started_at"], name="foom_session_device_time"),
            # the counts of a build, and its FOOM sessions
            models.Index(fields=["build", "classification"], name="foom_session_build_class"),
            # the grace-period sweep: pending runs of an app by age. Partial: it holds only the
            # few runs still pending, so classifying a run removes it instead of re-inserting it.
            models.Index(
                fields=["app", "started_at"],
                condition=models.Q(classification=PENDING),
                name="foom_session_app_pending",
            ),
            # an Android exit's run by pid; partial: runs without a pid (iOS) are not in it
            models.Index(
                fields=["app", "pid"],
                condition=models.Q(pid__isnull=False),
                name="foom_session_app_pid",
            ),
        ]
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return self.session_id

    def get_absolute_url(self) -> str:
        return reverse("foom:session_detail", args=[self.app_id, self.pk])

    @property
    def rule_text(self) -> str:
        return RULES.get(self.rule, "") if self.rule is not None else ""

    @property
    def rule_name(self) -> str:
        """What the deciding rule means, in a few words (`Hung`, `App updated`)."""
        return RULE_NAMES.get(self.rule, "") if self.rule is not None else ""

    def end_facts(self) -> EndFacts | None:
        if not self.has_end:
            return None
        return EndFacts(
            state=self.end_state,
            active_for_ms=self.active_for_ms,
            **{flag: getattr(self, flag) for flag in END_FLAGS},
            os_exit_reason=self.os_exit_reason or None,
            memory_warnings=self.memory_warnings,
            footprint_bytes=self.footprint_bytes,
            peak_footprint_bytes=self.peak_footprint_bytes,
        )


# The columns a classification reads, besides the build's version and number.
RUN_FACT_FIELDS = (
    "binary_uuid",
    "os",
    "boot_time",
    "bot",
    "has_end",
    "end_state",
    "active_for_ms",
    *END_FLAGS,
    "os_exit_reason",
)


def run_facts_from_values(row: dict[str, Any]) -> RunFacts:
    """RunFacts from a `.values()` row holding RUN_FACT_FIELDS plus build__version/build__number."""
    end = None
    if row["has_end"]:
        end = EndFacts(
            state=row["end_state"],
            active_for_ms=row["active_for_ms"],
            **{flag: row[flag] for flag in END_FLAGS},
            os_exit_reason=row["os_exit_reason"] or None,
        )
    return RunFacts(
        build_version=row["build__version"],
        build_number=row["build__number"],
        binary_uuid=row["binary_uuid"],
        os=row["os"],
        boot_time=row["boot_time"],
        bot=row["bot"],
        end=end,
    )


class FoomCounts(models.Model):
    """The counts behind a FOOM rate. `classified` excludes pending and excluded runs;
    `rate_sessions` is the per-session denominator (classified runs that ended in the
    foreground); per user: `foom_devices` / `classified_devices`."""

    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="+")
    sessions = models.IntegerField(default=0)
    classified = models.IntegerField(default=0)
    rate_sessions = models.IntegerField(default=0)
    foom = models.IntegerField(default=0)
    devices = models.IntegerField(default=0)
    classified_devices = models.IntegerField(default=0)
    foom_devices = models.IntegerField(default=0)
    classes = models.JSONField(default=dict)  # class -> sessions, every class present
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        abstract = True


class BuildFoomStats(FoomCounts):
    # One row per build (the unique key below, with the app as Citus wants in every unique key).
    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="+", db_index=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["build", "app"], name="foom_buildstats_identity")
        ]
        indexes = [models.Index(fields=["app"], name="foom_buildstats_app")]

    def __str__(self) -> str:
        return f"FOOM counts of build {self.build_id}"


class BuildDayFoomStats(FoomCounts):
    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="foom_day_stats")
    day = models.DateField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["build", "day", "app"], name="foom_builddaystats_identity"
            )
        ]
        indexes = [models.Index(fields=["app", "day"], name="foom_daystats_app_day")]

    def __str__(self) -> str:
        return f"FOOM counts of build {self.build_id} on {self.day}"


# --- what the operating system says (exit_services.py) -----------------------------------------


class MetricKitPayload(models.Model):
    """One iOS MetricKit `MXMetricPayload`: a device's exits per reason over a window (a day),
    and its memory metrics. The payload names no device; the upload may (`device_key`). A
    payload is identified by the device it came with and its digest: the same payload sent
    twice is one row, two devices' identical days are two (see exit_services). The sums of
    counts are 64-bit: each count is at most 2³¹ − 1, but a window has a dozen of them."""

    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="+")
    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="metrickit_payloads")
    upload_id = models.BigIntegerField(null=True, blank=True)
    digest = models.CharField(max_length=64)
    device_key = models.CharField(max_length=255, blank=True, default="")  # when sent with one
    device_type = models.CharField(max_length=128, blank=True, default="")
    os_version = models.CharField(max_length=128, blank=True, default="")
    architecture = models.CharField(max_length=32, blank=True, default="")
    begins_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    day = models.DateField()  # exits.window_day
    foreground = models.JSONField(default=dict)  # reason key -> exits, as MetricKit names them
    background = models.JSONField(default=dict)
    foreground_exits = models.BigIntegerField(default=0)
    foreground_memory = models.BigIntegerField(default=0)
    background_exits = models.BigIntegerField(default=0)
    background_memory = models.BigIntegerField(default=0)
    peak_memory_bytes = models.BigIntegerField(null=True, blank=True)
    suspended_memory_bytes = models.BigIntegerField(null=True, blank=True)
    suspended_samples = models.IntegerField(null=True, blank=True)
    received_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["app", "device_key", "digest"], name="foom_metrickit_identity"
            )
        ]
        indexes = [
            models.Index(fields=["build", "day"], name="foom_metrickit_build_day"),
            # a payload sent without a device: is its window stored already (exit_services)?
            models.Index(fields=["app", "begins_at"], name="foom_metrickit_app_window"),
        ]

    def __str__(self) -> str:
        return f"MetricKit {self.device_type} {self.day}"


class ProcessExit(models.Model):
    """One Android `ApplicationExitInfo`: how a process of the app died, by the OS's word, and
    the run it ended when one matches (by the run id the app recorded, or by pid and time)."""

    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="+")
    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="process_exits")
    device = models.ForeignKey(
        Device, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    # Runs carry no constraints and are deleted in bulk (see Session): a vanished run reads as
    # no match.
    session = models.ForeignKey(
        Session,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        null=True,
        blank=True,
        related_name="+",
    )
    upload_id = models.BigIntegerField(null=True, blank=True)
    pid = models.IntegerField()
    process_name = models.CharField(max_length=255)
    reason = models.CharField(max_length=32)  # exits.ANDROID_REASONS
    description = models.TextField(blank=True, default="")
    importance = models.IntegerField()
    foreground = models.BooleanField()
    verdict = models.CharField(max_length=20)  # exits.VERDICTS
    pss_kb = models.BigIntegerField(null=True, blank=True)
    rss_kb = models.BigIntegerField(null=True, blank=True)
    status = models.IntegerField(null=True, blank=True)
    timestamp = models.DateTimeField()
    day = models.DateField()  # UTC day of the timestamp
    state_session_id = models.CharField(max_length=200, blank=True, default="")
    received_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["app", "pid", "timestamp"], name="foom_processexit_identity"
            )
        ]
        indexes = [
            models.Index(fields=["build", "day"], name="foom_processexit_build_day"),
            models.Index(
                fields=["app", "pid"],
                condition=models.Q(session__isnull=True),
                name="foom_processexit_unmatched",
            ),
        ]
        ordering = ["-timestamp", "-id"]

    def __str__(self) -> str:
        return f"{self.process_name} pid {self.pid}: {self.reason}"


class OsExitDayStats(models.Model):
    """What the OS reported of a build's exits on a day (UTC), from one source: the counts the
    pages and the CI gate read, rewritten from the payloads or exits of the days an upload
    touched. `foreground`/`background`: exits per verdict; `reasons`: per reason as the source
    names them."""

    METRICKIT, EXITINFO = "metrickit", "exitinfo"
    SOURCES = [(METRICKIT, "iOS MetricKit"), (EXITINFO, "Android ApplicationExitInfo")]

    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="+")
    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="os_exit_day_stats")
    day = models.DateField()
    source = models.CharField(max_length=12, choices=SOURCES)
    reports = models.IntegerField(default=0)  # payloads or exits
    # Sums of MetricKit's counts over a day's payloads: 64-bit (exit_services checks the bound).
    foreground_exits = models.BigIntegerField(default=0)
    foreground_memory = models.BigIntegerField(default=0)
    background_exits = models.BigIntegerField(default=0)
    background_memory = models.BigIntegerField(default=0)
    foreground = models.JSONField(default=dict)
    background = models.JSONField(default=dict)
    reasons = models.JSONField(default=dict)  # {"foreground": {reason: n}, "background": {…}}

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["build", "day", "source", "app"], name="foom_osexitdaystats_identity"
            )
        ]
        indexes = [models.Index(fields=["app", "day"], name="foom_osexitdaystats_app_day")]

    def __str__(self) -> str:
        return f"OS exits of build {self.build_id} on {self.day} ({self.source})"


class MetricKitDiagnostic(models.Model):
    """One diagnostic of an iOS `MXDiagnosticPayload` (a crash, a hang, a CPU exception, a disk
    write exception or a slow launch), one row each however many a payload holds, with its
    call-stack tree as the device sent it: frames by binary UUID and offset
    (`foom.logic.diagnostics`: `[uuid, offset, samples, binary name, [sub-frames…]]`), named by
    the app's debug files when a page shows them. The same diagnostic sent twice is one row."""

    KINDS = [(kind, label) for kind, label in KIND_LABELS.items()]

    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="+")
    build = models.ForeignKey(Build, on_delete=models.CASCADE, related_name="metrickit_diagnostics")
    upload_id = models.BigIntegerField(null=True, blank=True)
    device_key = models.CharField(max_length=255, blank=True, default="")  # when sent with one
    digest = models.CharField(max_length=64)
    kind = models.CharField(max_length=16, choices=KINDS)
    begins_at = models.DateTimeField()  # the payload's window
    ends_at = models.DateTimeField()
    device_type = models.CharField(max_length=128, blank=True, default="")
    os_version = models.CharField(max_length=128, blank=True, default="")
    architecture = models.CharField(max_length=32, blank=True, default="")
    summary = models.JSONField(default=dict)  # what happened: diagnostics.SUMMARY_KEYS
    per_thread = models.BooleanField(default=True)  # MXCallStackTree.callStackPerThread
    stacks = models.JSONField(default=list)  # [{"attributed": bool, "frames": [frame, …]}, …]
    frames = models.IntegerField(default=0)
    received_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["app", "device_key", "digest"], name="foom_diagnostic_identity"
            )
        ]
        indexes = [models.Index(fields=["app", "build", "kind"], name="foom_diagnostic_kind")]
        ordering = ["-begins_at", "-id"]

    def __str__(self) -> str:
        return f"MetricKit {self.kind} of build {self.build_id}"

    @property
    def kind_label(self) -> str:
        return KIND_LABELS.get(self.kind, self.kind)

    @property
    def summary_line(self) -> str:
        return summary_line(self.kind, self.summary)
