"""Uploads: the raw file as received, its hash, and what became of it."""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from memdash.core.models import App, IngestKey
from memdash.core.writes.transactions import retried_on_deadlock

if TYPE_CHECKING:
    from memdash.core.logic.errors import UploadRefused
    from memdash.core.writes.uploads import StoreResult

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
    # The claim of whoever processes it (`claim`): `processing` until `lease_until`; after it,
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

    # --- Its life cycle -----------------------------------------------------------------------
    # queued -> processing (`claim`, with a lease) -> done (`finish`), rejected (`reject`) or
    # failed (`fail`); failed, or processing past its lease, -> queued again (`take_back`,
    # `requeue_stale`); processing, cancelled by the database, -> queued again (`release`).
    # Each step is one UPDATE, its own transaction or a part of its caller's (an outcome is
    # written in the transaction of the data it stored), that only one worker can win: the
    # claim is checked in one place, `_held_update`.

    def _held_update(self, allowed: Q, values: dict[str, Any]) -> bool:
        """Write `values` if the upload is still as `allowed` says under the claim this object
        read (`attempts` is the claim's token), and set them on it; False, with nothing
        written, when another worker took it meanwhile."""
        held = Upload.objects.filter(allowed, pk=self.pk, attempts=self.attempts)
        if not held.update(**values):
            return False
        for name, value in values.items():
            setattr(self, name, value)
        return True

    def _lease(self) -> dict[str, Any]:
        """The fields of the upload claimed now: `processing`, its lease, one more claim."""
        now = timezone.now()
        lease = timedelta(seconds=settings.MEMDASH_UPLOAD_LEASE_SECONDS)
        return {
            "status": self.PROCESSING, "started_at": now, "lease_until": now + lease,
            "attempts": self.attempts + 1,
        }  # fmt: skip

    @classmethod
    def stale(cls, now: datetime) -> Q:
        """Uploads whose worker is taken for dead: `processing` past their lease."""
        return Q(status=cls.PROCESSING) & (Q(lease_until__lt=now) | Q(lease_until__isnull=True))

    def claim(self) -> bool:
        """Take the queued upload for this worker: one UPDATE that only one worker can win.
        False: another took it, or it is no longer queued."""
        return self._held_update(Q(status=self.QUEUED), self._lease())

    def claim_unsaved(self) -> None:
        """Claim an upload not yet stored, processed where it is received: claimed from its
        first write (its INSERT), with no UPDATE to `processing` after."""
        for name, value in self._lease().items():
            setattr(self, name, value)

    def finish(self, result: StoreResult) -> bool:
        """Done: what the upload stored. Written in the transaction of that data."""
        return self._end(
            self.DONE, counts=result.counts, unread=result.unread, result_kind=result.kind,
            result_id=result.object_id, result_url=result.url,
        )  # fmt: skip

    def reject(self, refusal: UploadRefused) -> bool:
        """Refused for its content: the message, the path of the offending value, the status."""
        return self._end(
            self.REJECTED, error=refusal.message, error_path=refusal.path,
            error_status=refusal.status,
        )  # fmt: skip

    def fail(self) -> bool:
        """An error of ours, not the uploader's: kept, said, logged by the caller."""
        return self._end(self.FAILED, error="internal error", error_status=500)

    def _end(self, status: str, **outcome: Any) -> bool:
        """Write how the upload ended, if this worker still holds its claim; what `outcome`
        does not name is cleared."""
        values = {
            "error": "", "error_path": "", "error_status": None, "counts": {}, "unread": [],
            "result_kind": "", "result_id": None, "result_url": "", **outcome,
            "status": status, "format": self.format, "finished_at": timezone.now(),
            "lease_until": None,
        }  # fmt: skip
        return self._held_update(Q(status=self.PROCESSING), values)

    def release(self) -> bool:
        """Queued again by the worker holding it, with nothing stored (its transaction was
        cancelled by the database to break a deadlock): the next claim takes it at once."""
        again = {"status": self.QUEUED, "lease_until": None}
        return self._held_update(Q(status=self.PROCESSING), again)

    def take_back(self, here: bool) -> bool:
        """Process again an upload sent again, when it failed (on our side: a bug since fixed, a
        lost database; never for its content) or its worker is taken for dead (its lease ran
        out): sending the same content again is how a device retries. Queued again, or `here`
        claimed at once; one UPDATE that only one door wins, so two doors retrying at once
        process it once."""
        again: dict[str, Any] = {
            "status": self.QUEUED, "error": "", "error_path": "", "error_status": None,
            "finished_at": None, "lease_until": None,
        }  # fmt: skip
        if here:
            again.update(self._lease())
        return self._held_update(Q(status=self.FAILED) | self.stale(timezone.now()), again)

    @classmethod
    def requeue_stale(cls, limit: int = 100) -> list[int]:
        """Queue again the uploads of workers taken for dead, each by one UPDATE of its own, so
        that two passes at once queue it once (and one the database cancelled for a deadlock,
        met on Citus with an upload being stored, is tried again). Returns their ids (the
        caller enqueues them)."""
        now = timezone.now()
        found = cls.objects.filter(cls.stale(now)).order_by("pk").values_list("pk", flat=True)
        still_stale = cls.objects.filter(cls.stale(now))
        again = {"status": cls.QUEUED, "lease_until": None}
        return [
            pk
            for pk in list(found[:limit])
            if retried_on_deadlock(partial(still_stale.filter(pk=pk).update, **again))
        ]

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
