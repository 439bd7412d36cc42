"""Debug files of an app (one row per object: a fat Mach-O gives one per architecture) and the
passes that name stored frames after some arrive.

The object's bytes are kept as uploaded (`path`, content-addressed, so two architectures of one
fat file share it) next to the symcache made from it at upload (`symcache_path`), both relative
to MEDIA_ROOT: lookups only ever open the symcache.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from memdash.core.models import App, IngestKey

DSYM, MACHO, ELF, BREAKPAD = "dsym", "macho", "elf", "breakpad"
KINDS = [(DSYM, "dSYM"), (MACHO, "Mach-O"), (ELF, "ELF"), (BREAKPAD, "Breakpad")]


class DebugFile(models.Model):
    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="debug_files")
    # symbolic's normal form: a lowercase UUID, with `-<age>` when the age is not 0.
    debug_id = models.CharField(max_length=64)
    code_id = models.CharField(max_length=128, blank=True, default="")  # ELF build id in full
    arch = models.CharField(max_length=32)
    kind = models.CharField(max_length=16, choices=KINDS)
    features = models.JSONField(default=list, blank=True)  # symtab, debug, unwind, sources
    image_name = models.CharField(max_length=255)  # what frames of this image are named after
    file_name = models.CharField(max_length=255, blank=True, default="")  # in the upload
    size = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64)
    path = models.CharField(max_length=255)
    symcache_path = models.CharField(max_length=255)
    uploaded_at = models.DateTimeField(default=timezone.now)
    key = models.ForeignKey(IngestKey, null=True, blank=True, on_delete=models.SET_NULL)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["app", "debug_id", "arch"], name="debugfile_identity")
        ]
        indexes = [models.Index(fields=["app", "code_id"], name="debugfile_code_id")]
        ordering = ["image_name", "arch", "-uploaded_at"]

    def __str__(self) -> str:
        return f"{self.image_name} {self.arch} {self.debug_id}"

    @property
    def has_lines(self) -> bool:
        return "debug" in self.features or self.kind == BREAKPAD

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.pk,
            "image": self.image_name,
            "arch": self.arch,
            "debug_id": self.debug_id,
            "code_id": self.code_id,
            "kind": self.kind,
            "features": self.features,
            "size": self.size,
            "sha256": self.sha256,
            "file": self.file_name,
            "uploaded_at": self.uploaded_at.isoformat(),
        }


class SymbolicationJob(models.Model):
    """Naming the frames already stored after debug files arrived: one per upload that added a
    debug file, run as a task by the floor that stores frames (it listens for
    `signals.debug_files_stored`)."""

    QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
    STATES = [(s, s) for s in (QUEUED, RUNNING, DONE, FAILED)]

    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="+")
    debug_ids = models.JSONField(default=list)  # of the debug files it applies
    state = models.CharField(max_length=10, choices=STATES, default=QUEUED, db_index=True)
    snapshots_total = models.IntegerField(default=0)
    snapshots_done = models.IntegerField(default=0)
    frames_named = models.BigIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Symbolication {self.pk} ({self.state})"

    @property
    def is_active(self) -> bool:
        return self.state in (self.QUEUED, self.RUNNING)

    # Its life cycle: queued -> running (`start`, one UPDATE only one worker wins) -> done or
    # failed (`finish`), its progress written as it goes (`progress`). Each one UPDATE.

    def _set(self, **values: Any) -> None:
        SymbolicationJob.objects.filter(pk=self.pk).update(**values)
        for name, value in values.items():
            setattr(self, name, value)

    def start(self) -> bool:
        """Mark the queued job running; False when another worker took it."""
        values = {"state": self.RUNNING, "started_at": timezone.now()}
        if not SymbolicationJob.objects.filter(pk=self.pk, state=self.QUEUED).update(**values):
            return False
        for name, value in values.items():
            setattr(self, name, value)
        return True

    def progress(self, done: int, total: int, frames: int) -> None:
        self._set(snapshots_done=done, snapshots_total=total, frames_named=frames)

    def finish(self, error: str = "") -> None:
        """Done, or failed with `error` (recorded on the job, shown on the pages)."""
        self._set(
            state=self.FAILED if error else self.DONE, error=error, finished_at=timezone.now()
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.pk,
            "state": self.state,
            "snapshots_total": self.snapshots_total,
            "snapshots_done": self.snapshots_done,
            "frames_named": self.frames_named,
            "error": self.error,
        }


UPLOAD_STATUSES = ("queued", "processing", "done", "rejected", "failed")


class DebugFileUpload(models.Model):
    """An upload of debug files: its body as received (streamed to storage by the request), and
    what became of it. The request only stores the body and queues the task
    (`symbols.tasks.process_debug_files_task`); unpacking, checking each object and building its
    symcache happen in a worker. Its life cycle is its methods (`claim`, `finish`, `reject`,
    `fail`), each one UPDATE that only the claim's holder (`attempts`) wins, as an upload's."""

    QUEUED, PROCESSING, DONE, REJECTED, FAILED = (
        "queued",
        "processing",
        "done",
        "rejected",
        "failed",
    )
    STATUSES = [(s, s) for s in (QUEUED, PROCESSING, DONE, REJECTED, FAILED)]

    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="+")
    key = models.ForeignKey(IngestKey, null=True, blank=True, on_delete=models.SET_NULL)
    file = models.FileField(upload_to="debug-uploads/%Y/%m/%d/", blank=True)
    filename = models.CharField(max_length=255, blank=True, default="")
    image_name = models.CharField(max_length=255, blank=True, default="")
    size = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True, default="")
    status = models.CharField(max_length=12, choices=STATUSES, default=QUEUED, db_index=True)
    error = models.TextField(blank=True, default="")
    error_path = models.CharField(max_length=255, blank=True, default="")
    error_status = models.SmallIntegerField(null=True, blank=True)
    result = models.JSONField(default=dict, blank=True)  # {"objects": [...], "symbolication": …}
    # The claim of whoever processes it (`claim`): `processing` until `lease_until`; after it the
    # worker is taken for dead and the upload queued again (`symbols.tasks.requeue_stale`).
    # `attempts` counts the claims and is the claim's token: only its holder writes the outcome.
    lease_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Debug files upload {self.pk} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.DONE, self.REJECTED, self.FAILED)

    def _update(self, allowed: str, **values: Any) -> bool:
        """Write `values` if the upload is still `allowed` under this claim; False otherwise."""
        held = DebugFileUpload.objects.filter(pk=self.pk, status=allowed, attempts=self.attempts)
        if not held.update(**values):
            return False
        for name, value in values.items():
            setattr(self, name, value)
        return True

    def claim(self) -> bool:
        """Take the queued upload for this worker (one UPDATE only one worker wins), for
        MEMDASH_UPLOAD_LEASE_SECONDS (the lease of uploads)."""
        now = timezone.now()
        lease = timedelta(seconds=settings.MEMDASH_UPLOAD_LEASE_SECONDS)
        return self._update(
            self.QUEUED, status=self.PROCESSING, started_at=now, lease_until=now + lease,
            attempts=self.attempts + 1,
        )  # fmt: skip

    def finish(self, result: dict[str, Any]) -> bool:
        return self._update(
            self.PROCESSING, status=self.DONE, result=result, finished_at=timezone.now(),
            lease_until=None,
        )  # fmt: skip

    def update_result(self, result: dict[str, Any]) -> bool:
        """What is known of it since it was done (its symbolication job ran meanwhile)."""
        return self._update(self.DONE, result=result)

    def reject(self, message: str, path: str, status: int) -> bool:
        return self._update(
            self.PROCESSING, status=self.REJECTED, error=message, error_path=path[:255],
            error_status=status, finished_at=timezone.now(), lease_until=None,
        )  # fmt: skip

    def fail(self) -> bool:
        """An error of ours, not the upload's: kept, said, logged by the caller."""
        return self._update(
            self.PROCESSING, status=self.FAILED, error="internal error", error_status=500,
            finished_at=timezone.now(), lease_until=None,
        )  # fmt: skip

    def as_json(self, url: str) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.pk,
            "status": self.status,
            "url": url,
            "filename": self.filename,
            "size": self.size,
            "sha256": self.sha256,
            "created_at": self.created_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
        }
        if self.status in (self.REJECTED, self.FAILED):
            data["error"] = self.error
            data["path"] = self.error_path
        if self.status == self.DONE:
            data.update(self.result)
        return data
