"""Allocator churn measurements: runs of scenarios, and their allocator calls per function.

Only per-function sums (count, bytes, Σ log2 bytes) are stored, never a churn value: churn is
Σ w(f) · log2_bytes(f), computed when read with the app's current weights, so editing the
weights re-prices every build at once.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

# Allocator churn weights (Kudrjavets et al.): cost of one call is weight * log2(bytes).
DEFAULT_CHURN_WEIGHTS = {"calloc": 2, "free": 1, "malloc": 1, "realloc": 3}
DEFAULT_THRESHOLD_PERCENT = 10.0


class ChurnSettings(models.Model):
    """An app's churn weights (merged over the defaults) and its regression limit."""

    app = models.OneToOneField(
        "core.App", on_delete=models.CASCADE, primary_key=True, related_name="churn_settings"
    )
    weights = models.JSONField(default=dict, blank=True)
    threshold_percent = models.FloatField(default=DEFAULT_THRESHOLD_PERCENT)

    def __str__(self) -> str:
        return f"churn settings of {self.app_id}"


class Scenario(models.Model):
    """A piece of work the app measures between two markers, by name (`open_chat`)."""

    app = models.ForeignKey("core.App", on_delete=models.CASCADE, related_name="churn_scenarios")
    name = models.CharField(max_length=200)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["app", "name"], name="churn_scenario_identity")
        ]
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ChurnRun(models.Model):
    """One run of the app (one launch, one test iteration) that measured some scenarios."""

    app = models.ForeignKey("core.App", on_delete=models.CASCADE, related_name="churn_runs")
    build = models.ForeignKey("core.Build", on_delete=models.CASCADE, related_name="+")
    device = models.ForeignKey(
        "core.Device", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    run_id = models.CharField(max_length=200)
    captured_at = models.DateTimeField()
    received_at = models.DateTimeField(default=timezone.now)
    upload_id = models.BigIntegerField(null=True, blank=True)  # ingest's Upload, when known

    class Meta:
        indexes = [models.Index(fields=["app", "build"]), models.Index(fields=["build", "run_id"])]

    def __str__(self) -> str:
        return f"run {self.run_id} of {self.build}"


class ScenarioRun(models.Model):
    """One scenario measured in one run: its markers, thread, elapsed time."""

    run = models.ForeignKey(ChurnRun, on_delete=models.CASCADE, related_name="scenario_runs")
    # The app's id, the distribution column on Citus (an app's rows on one worker).
    app = models.ForeignKey(
        "core.App", on_delete=models.DO_NOTHING, db_constraint=False, db_index=False,
        related_name="+",
    )  # fmt: skip
    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="runs")
    build = models.ForeignKey("core.Build", on_delete=models.CASCADE, related_name="+")
    thread = models.CharField(max_length=200, blank=True, default="")
    start_marker = models.CharField(max_length=200, blank=True, default="")
    end_marker = models.CharField(max_length=200, blank=True, default="")
    elapsed_ms = models.FloatField()
    calls = models.BigIntegerField(default=0)
    sent_calls = models.BooleanField(default=False)  # the device sent calls, not sums

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "scenario", "app"], name="churn_scenario_run_identity"
            )
        ]
        indexes = [models.Index(fields=["scenario", "build"])]


class ScenarioFunction(models.Model):
    """One allocator function's calls in one scenario run."""

    scenario_run = models.ForeignKey(
        ScenarioRun, on_delete=models.CASCADE, related_name="functions"
    )
    # The app's id, the distribution column on Citus (an app's rows on one worker).
    app = models.ForeignKey(
        "core.App", on_delete=models.DO_NOTHING, db_constraint=False, db_index=False,
        related_name="+",
    )  # fmt: skip
    function = models.CharField(max_length=100)
    count = models.BigIntegerField()
    bytes = models.BigIntegerField()
    log2_bytes = models.FloatField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["scenario_run", "function", "app"], name="churn_function_identity"
            )
        ]
