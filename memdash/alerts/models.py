"""Alerts of an app: the rules its admins set, where messages go, what fired, and each message's
delivery.

An alert is one condition of one rule (`key`: the build, the category, the cluster) that held
when data landed: it fires once, is recorded, and does not fire again while the condition holds;
once the condition no longer holds it is cleared, and if it comes back it is a new alert. Each
alert is delivered to each of its rule's destinations by a `Delivery`, retried with backoff by a
task until it is sent or has failed for good (`last_error` kept for the notifications page).
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from django.db import models, transaction
from django.utils import timezone

from memdash.alerts.logic.kinds import KIND_CHOICES
from memdash.alerts.logic.messages import retry_delay

EMAIL, WEBHOOK, SLACK = "email", "webhook", "slack"
DESTINATION_KINDS = [(EMAIL, "E-mail"), (WEBHOOK, "Webhook (signed JSON)"), (SLACK, "Slack")]
MAX_ATTEMPTS = 8  # about two hours of backoff (logic.messages.retry_delay), then given up


def new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


class Destination(models.Model):
    """Where an app's alerts go: e-mail addresses, a webhook (JSON signed with `secret`), or a
    Slack-compatible incoming webhook. With `digest_minutes`, at most one message per interval."""

    app = models.ForeignKey("core.App", on_delete=models.CASCADE, related_name="alert_destinations")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=DESTINATION_KINDS)
    target = models.CharField(max_length=2000)  # URL, or comma-separated e-mail addresses
    # Shown to the app's admins to check signatures (as GitHub's and Stripe's webhook secrets
    # are); memdash needs it in clear to sign, so it is not hashed like an ingest key.
    secret = models.CharField(max_length=100, default=new_secret)
    digest_minutes = models.PositiveIntegerField(default=0)  # 0: one message per alert
    last_sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_kind_display()})"

    def digest_due(self, now: Any) -> bool:
        """Whether a digest may go now: none sent yet, or the interval has passed since."""
        if not self.digest_minutes or self.last_sent_at is None:
            return True
        return now >= self.last_sent_at + timedelta(minutes=self.digest_minutes)


class AlertRule(models.Model):
    """One condition to watch (`kind`, see `logic.kinds.KINDS`) with its figures."""

    app = models.ForeignKey("core.App", on_delete=models.CASCADE, related_name="alert_rules")
    kind = models.CharField(max_length=32, choices=KIND_CHOICES)
    # A rate in percent (FOOM, OS kills): fire above it. None: only by the 95% bands.
    threshold_percent = models.FloatField(null=True, blank=True)
    # Rates: also fire when the build's rate is above the previous build's beyond both bands.
    significant = models.BooleanField(default=True)
    min_runs = models.PositiveIntegerField(default=100)  # classified runs before a rate counts
    # Category growth: the gate's limit ("5%" of the median, or bytes like "1MiB") and alpha.
    max_growth = models.CharField(max_length=32, default="5%")
    alpha = models.FloatField(default=0.05)
    enabled = models.BooleanField(default=True)
    destinations = models.ManyToManyField(Destination, blank=True, related_name="rules")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["kind", "id"]

    def __str__(self) -> str:
        return self.get_kind_display()


class Alert(models.Model):
    """A condition of a rule that held: fired once, cleared when it no longer holds."""

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="alerts")
    app = models.ForeignKey("core.App", on_delete=models.CASCADE, related_name="alerts")
    key = models.CharField(max_length=200)  # what the condition is about: "build:12", …
    title = models.CharField(max_length=500)
    text = models.TextField()
    link = models.CharField(max_length=2000)  # the page that explains it (a path)
    figures = models.JSONField(default=dict)
    fired_at = models.DateTimeField(default=timezone.now)
    cleared_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-fired_at", "-id"]
        constraints = [
            # At most one open alert per condition: the same condition fires once until it clears.
            models.UniqueConstraint(
                fields=["rule", "key"],
                condition=models.Q(cleared_at__isnull=True),
                name="alerts_one_open_alert_per_condition",
            )
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def is_open(self) -> bool:
        return self.cleared_at is None

    def clear(self) -> None:
        self.cleared_at = timezone.now()
        self.save(update_fields=["cleared_at"])


class Delivery(models.Model):
    """One alert's message to one destination, with its attempts."""

    PENDING, SENT, FAILED = "pending", "sent", "failed"
    STATUSES = [(PENDING, "pending"), (SENT, "sent"), (FAILED, "failed")]

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="deliveries")
    destination = models.ForeignKey(
        Destination, on_delete=models.CASCADE, related_name="deliveries"
    )
    status = models.CharField(max_length=16, choices=STATUSES, default=PENDING, db_index=True)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    message = models.TextField(blank=True, default="")  # what was sent, as the receiver saw it

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["alert", "destination"], name="alerts_delivery_once")
        ]
        indexes = [models.Index(fields=["destination", "status", "next_attempt_at"])]

    def mark_sent(self, message: str) -> bool:
        """Sent (once: only a pending delivery becomes sent)."""
        with transaction.atomic():
            done = Delivery.objects.filter(pk=self.pk, status=self.PENDING).update(
                status=self.SENT, sent_at=timezone.now(), message=message,
                attempts=models.F("attempts") + 1, last_error="",
            )  # fmt: skip
        self.refresh_from_db()
        return bool(done)

    def mark_failed_attempt(self, error: str, message: str) -> None:
        """A failed attempt: tried again after the backoff, or failed for good after the last."""
        self.attempts += 1
        self.last_error = error[:2000]
        self.message = message
        if self.attempts >= MAX_ATTEMPTS:
            self.status = self.FAILED
        else:
            self.next_attempt_at = timezone.now() + retry_delay(self.attempts)
        self.save(update_fields=["attempts", "last_error", "message", "status", "next_attempt_at"])
