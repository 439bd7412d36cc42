"""LeakCanary's heap analyses as text (format `leakcanary`): each analysis, each leak an occurrence
of the cluster of its signature in the leaks lens. The text names no app version: the build is
the upload's (`build_version`, `build_number`); device likewise. LeakCanary runs on Android:
another platform's key is refused."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from memdash.core.logic.errors import WrongApp
from memdash.core.writes.uploads import NOT_JSON, FormatHandler, Progress, StoreResult, UploadMeta
from memdash.ingest.writes.parsers.leaks import build_and_device, check_text
from memdash.leaks.logic.parsers import leakcanary
from memdash.leaks.writes.leak_traces import store_leakcanary

FORMAT = "leakcanary"


def detect(raw: bytes, doc: Any) -> bool:
    return doc is NOT_JSON and leakcanary.looks_like(raw)


def process(raw: bytes, doc: Any, meta: UploadMeta, progress: Progress) -> StoreResult:
    if meta.app.platform not in ("android", "other"):
        raise WrongApp(f"LeakCanary runs on Android; this key's app is {meta.app.platform}")
    progress("parse", 0.0)
    check_text(raw)
    parsed = leakcanary.parse(raw)
    build, device = build_and_device(meta, what="LeakCanary analyses")
    progress("store", 0.5)
    stored = store_leakcanary(
        meta.app, build, device, parsed, received_at=meta.received_at, upload_id=meta.upload_id
    )
    progress("done", 1.0)
    analyses = stored.analyses
    counts = {**stored.counts(), "failed_analyses": parsed.failed}
    return StoreResult(
        kind="leakcanary",
        url=analyses[0].get_absolute_url()
        if len(analyses) == 1
        else reverse("leaks:trace_list", args=[meta.app.pk]),
        object_id=analyses[0].pk if len(analyses) == 1 else None,
        counts=counts,
    )


HANDLER = FormatHandler(
    name=FORMAT,
    description="LeakCanary heap analyses (HeapAnalysisSuccess text, shark-cli, Logcat), "
    "with build_version",
    detect=detect,
    process=process,
)
