"""Uploads: the raw file as received, its hash, and what became of it."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from memdash.core.models import App, IngestKey

# For results that are not one object: the count saying how much was stored, when it is not
# the count named like the result kind (a sessions upload counts its `sessions`).
RESULT_COUNTS = {
    "churn": "runs",
    "metrickit": "payloads",
    "exitinfo": "exits",
    "leakcanary": "analyses",
}


class Upload(models.Model):
    QUEUED, PROCESSING, DONE, REJECTED, FAILED = (
        "queued",
        "processing",
        "done",
        "rejected",
        "failed",
    )
    STATUSES = [(s, s) for s in (QUEUED, PROCESSING, DONE, REJECTED, FAILED)]
    API, PAGE, COMMAND = "api", "page", "command"

    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="uploads")
    key = models.ForeignKey(IngestKey, on_delete=models.SET_NULL, null=True, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    source = models.CharField(max_length=10, default=API)
    file = models.FileField(upload_to="uploads/%Y/%m/%d/", blank=True)
    filename = models.CharField(max_length=255, blank=True)
    size = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    # sha256 of the content (decompressed; a JSON document without the whitespace around it) and
    # the fields that came with it: the same capture twice is one upload, however it was packed.
    idempotency_key = models.CharField(max_length=64, blank=True)
    client_key = models.CharField(max_length=255, blank=True)  # the client's Idempotency-Key
    fields = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=12, choices=STATUSES, default=QUEUED, db_index=True)
    format = models.CharField(max_length=40, blank=True)
    error = models.TextField(blank=True)
    error_path = models.CharField(max_length=255, blank=True)
    error_status = models.SmallIntegerField(null=True, blank=True)
    counts = models.JSONField(default=dict, blank=True)
    unread = models.JSONField(default=list, blank=True)  # paths of keys memdash did not read
    result_kind = models.CharField(max_length=20, blank=True)
    result_id = models.BigIntegerField(null=True, blank=True)
    result_url = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The claim of whoever processes it (tasks.claim): `processing` until `lease_until`; after it,
    # the worker is taken for dead and the upload queued again. `attempts` counts the claims and
    # is the claim's token: only its holder may write the outcome.
    lease_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["app", "idempotency_key"],
                condition=~models.Q(idempotency_key=""),
                name="upload_idempotency",
            ),
            models.UniqueConstraint(
                fields=["app", "client_key"],
                condition=~models.Q(client_key=""),
                name="upload_client_key",
            ),
        ]

    def __str__(self) -> str:
        return f"Upload {self.pk} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("ingest:upload_detail", args=[self.pk])

    @property
    def api_url(self) -> str:
        return reverse("ingest:api_upload_detail", args=[self.pk])

    @property
    def result_label(self) -> str:
        """What the upload made, for the pages: `snapshot #21` for one object, else what it
        stored by its counts (`sessions: 12 stored`), never `#None`."""
        kind = self.result_kind or "result"
        if self.result_id is not None:
            return f"{kind} #{self.result_id}"
        counts = self.counts or {}
        stored = counts.get(RESULT_COUNTS.get(kind, kind))
        if isinstance(stored, int):
            noun = f" {RESULT_COUNTS[kind]}" if kind in RESULT_COUNTS else ""
            return f"{kind}: {stored:,}{noun} stored"
        return kind

    @property
    def is_finished(self) -> bool:
        return self.status in (self.DONE, self.REJECTED, self.FAILED)

    def as_json(self) -> dict[str, Any]:
        data = {
            "id": self.pk,
            "status": self.status,
            "url": self.api_url,
            "app": self.app.bundle_id,
            "format": self.format,
            "size": self.size,
            "sha256": self.sha256,
            "created_at": self.created_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "counts": self.counts,
        }
        if self.unread:
            data["unread"] = self.unread
        if self.status in (self.REJECTED, self.FAILED):
            data["error"] = self.error
            data["path"] = self.error_path
        if self.status == self.DONE:
            data[self.result_kind or "result"] = {"id": self.result_id, "url": self.result_url}
        return data
