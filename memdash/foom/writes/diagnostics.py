"""Storing MetricKit's diagnostics: one row each (`MetricKitDiagnostic`), in the upload's
transaction, after the whole upload was checked (memdash.ingest's MetricKit door)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.utils import timezone

from memdash.core.models import App
from memdash.core.writes.apps import get_or_create_build
from memdash.foom.logic.diagnostics import Diagnostic, frame_count
from memdash.foom.models import MetricKitDiagnostic


def store_diagnostics(
    app: App,
    diagnostics: Sequence[Diagnostic],
    *,
    device_key: str = "",
    build_commit: str = "",
    upload_id: int | None = None,
    received_at: datetime | None = None,
) -> dict[str, int]:
    """Store checked diagnostics of `app`, each once (by the device and its digest); answers how
    many there were and how many were new. Their builds are (appVersion, appBuildVersion)."""
    received_at = received_at or timezone.now()
    digests = {d.digest for d in diagnostics}
    stored = set(
        MetricKitDiagnostic.objects.filter(app=app, device_key=device_key, digest__in=digests)
        .order_by()
        .values_list("digest", flat=True)
    )
    builds: dict[tuple[str, str], int] = {}
    rows = []
    for d in diagnostics:
        if d.digest in stored:
            continue
        stored.add(d.digest)  # the same diagnostic twice in one upload is one row too
        key = (d.app_version, d.build_number)
        if key not in builds:
            builds[key] = get_or_create_build(app, *key, build_commit).pk
        assert d.begins_at is not None and d.ends_at is not None  # the door sets the window
        rows.append(
            MetricKitDiagnostic(
                app=app, build_id=builds[key], upload_id=upload_id, device_key=device_key,
                digest=d.digest, kind=d.kind, begins_at=d.begins_at, ends_at=d.ends_at,
                device_type=d.device_type, os_version=d.os_version,
                architecture=d.architecture, summary=d.summary, per_thread=d.per_thread,
                stacks=[{"attributed": s.attributed, "frames": s.frames} for s in d.stacks],
                frames=sum(frame_count(s.frames) for s in d.stacks), received_at=received_at,
            )
        )  # fmt: skip
    MetricKitDiagnostic.objects.bulk_create(rows, batch_size=200)
    return {"diagnostics": len(diagnostics), "diagnostics_created": len(rows)}
