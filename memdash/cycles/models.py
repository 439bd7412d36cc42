"""Retain cycles from the field: uploads, distinct loops, their occurrences, and clusters.

A loop reported a thousand times is stored once (`CanonicalCycle`, with its key and cluster)
and referenced by each occurrence (`RetainCycle`), so re-clustering an app rewrites the few
distinct loops, never the occurrences.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import models, transaction
from django.urls import reverse
from django.utils import timezone

from memdash.cycles.logic.clustering import Reference, reference_from_json, reference_text
from memdash.triage.models import Triaged, TriageEvent

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from memdash.core.models import Build

# Class-name prefixes that belong to the system (retain-cycles-v1 "System and app classes").
DEFAULT_SYSTEM_PREFIXES = [
    "NS", "__NS", "UI", "_UI", "CA", "CF", "__CF", "OS_", "WK", "_WK", "NSKVO", "Swift.", "_Tt",
]  # fmt: skip


class CycleSettings(models.Model):
    """An app's own list of system class prefixes (empty: the defaults)."""

    app = models.OneToOneField(
        "core.App", on_delete=models.CASCADE, primary_key=True, related_name="cycle_settings"
    )
    system_prefixes = models.JSONField(default=list, blank=True)

    def __str__(self) -> str:
        return f"cycle settings of {self.app_id}"


class CycleReport(models.Model):
    """One upload of retain cycles: what came in and what was dropped as transient."""

    app = models.ForeignKey("core.App", on_delete=models.CASCADE, related_name="cycle_reports")
    build = models.ForeignKey("core.Build", on_delete=models.CASCADE, related_name="+")
    device = models.ForeignKey(
        "core.Device", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    captured_at = models.DateTimeField()
    received_at = models.DateTimeField(default=timezone.now)
    upload_id = models.BigIntegerField(null=True, blank=True)  # ingest's Upload, when known
    source_format = models.CharField(max_length=64)
    cycles = models.PositiveIntegerField(default=0)
    dropped = models.PositiveIntegerField(default=0)  # with a freed `(null)` object

    class Meta:
        indexes = [models.Index(fields=["app", "captured_at"])]
        # An upload makes at most one report, whoever processes it and however often.
        constraints = [
            models.UniqueConstraint(fields=["upload_id", "app"], name="cycles_one_per_upload")
        ]

    def __str__(self) -> str:
        return f"{self.cycles} cycles from {self.build} at {self.captured_at:%Y-%m-%d %H:%M}"


class Cluster(Triaged):
    """A minimal key: the cycles that contain it, triaged as one task."""

    app = models.ForeignKey("core.App", on_delete=models.CASCADE, related_name="cycle_clusters")
    key = models.JSONField()  # [class, ...]: app classes, or all classes when system
    key_digest = models.CharField(max_length=64)
    system = models.BooleanField(default=False)
    algorithm_version = models.CharField(max_length=32)
    # False once no cycle belongs to it any more (a shorter key took its cycles, or the prefix
    # list changed); kept with its triage history, and current again if its key comes back.
    is_current = models.BooleanField(default=True)
    merged_into = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    occurrences = models.PositiveIntegerField(default=0)
    cycles = models.PositiveIntegerField(default=0)  # distinct loops
    devices = models.PositiveIntegerField(default=0)
    builds = models.PositiveIntegerField(default=0)  # builds affected
    newest_at = models.DateTimeField(null=True, blank=True)  # latest occurrence captured
    created_at = models.DateTimeField(default=timezone.now)
    # The reference a member chose to weaken, [holder, [via, ...], held]; null: the computed one
    # (memdash.cycles.logic.clustering.link_to_weaken).
    link_to_weaken = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["app", "system", "key_digest"], name="cycles_cluster_identity"
            )
        ]
        indexes = [
            models.Index(fields=["app", "is_current", "system"]),
            # The list's default order, so a page of 10,000 clusters is read off the index.
            models.Index(
                fields=["app", "is_current", "system", "-occurrences", "id"],
                name="cycles_cluster_by_occurrences",
            ),
        ]

    def __str__(self) -> str:
        return " → ".join(self.key)

    def get_absolute_url(self) -> str:
        return reverse("cycles:cluster_detail", args=[self.app_id, self.pk])

    def occurrence_rows(self) -> models.QuerySet[RetainCycle]:
        """Every occurrence of the cluster's loops; the app named on both sides of the join to
        the loops, so that on Citus the query stays on the app's worker."""
        return RetainCycle.objects.filter(
            app_id=self.app_id, canonical__app_id=self.app_id, canonical__cluster=self
        )

    def occurrences_in(self, build: Build) -> int:
        return self.occurrence_rows().filter(build=build).count()

    def choose_link_to_weaken(
        self, user: User | None, reference: Reference | None
    ) -> TriageEvent | None:
        """Store the reference a member chose to weaken (None: back to the computed one) and
        record it in the triage history; None when it was already the choice. The caller
        checks that the loop offers it (`clustering.links_to_offer`)."""
        value = [reference[0], list(reference[1]), reference[2]] if reference else None
        with transaction.atomic():
            current = type(self).objects.select_for_update().get(pk=self.pk, app_id=self.app_id)
            old = reference_from_json(current.link_to_weaken)
            if old == reference:
                return None
            current.link_to_weaken = value
            current.save(update_fields=["link_to_weaken"])
            event = TriageEvent.objects.create(
                item=current,
                actor=user,
                kind=TriageEvent.CHANGE,
                changes=[
                    {
                        "field": "link_to_weaken",
                        "from": reference_text(old) if old else "computed",
                        "to": reference_text(reference) if reference else "computed",
                    }
                ],
            )
        self.link_to_weaken = value
        return event


class CanonicalCycle(models.Model):
    """One distinct loop of an app, in canonical rotation."""

    app = models.ForeignKey("core.App", on_delete=models.CASCADE, related_name="+")
    canonical = models.JSONField()  # [[class, [via, ...]], ...] smallest rotation
    # The ownership of the reference into each link, where a tool said it (Xcode's `leaks`):
    # "strong", "weak", "unsafe_unretained", "unowned", "" unknown; [] when none did.
    ownership = models.JSONField(default=list, blank=True)
    digest = models.CharField(max_length=64)
    key = models.JSONField()  # as Cluster.key, for this loop alone
    system = models.BooleanField(default=False)
    length = models.PositiveSmallIntegerField()
    cluster = models.ForeignKey(
        Cluster, null=True, blank=True, on_delete=models.SET_NULL, related_name="members"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["app", "digest"], name="cycles_canonical_identity")
        ]

    def __str__(self) -> str:
        return " → ".join(cls for cls, _via in self.canonical)


class RetainCycle(models.Model):
    """One occurrence: a loop reported by one device in one build."""

    report = models.ForeignKey(CycleReport, on_delete=models.CASCADE, related_name="occurrences")
    canonical = models.ForeignKey(
        CanonicalCycle, on_delete=models.CASCADE, related_name="occurrences"
    )
    # Copied from the report so that counts per cluster, build and device are one query.
    app = models.ForeignKey("core.App", on_delete=models.CASCADE, related_name="+")
    build = models.ForeignKey("core.Build", on_delete=models.CASCADE, related_name="+")
    device = models.ForeignKey(
        "core.Device", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    captured_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["app", "build"])]

    def __str__(self) -> str:
        return f"{self.canonical} ({self.build})"

    @property
    def key(self) -> list[str]:
        return self.canonical.key

    @property
    def system(self) -> bool:
        return self.canonical.system
