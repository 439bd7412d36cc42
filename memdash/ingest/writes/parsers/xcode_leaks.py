"""Xcode's `leaks` report (format `xcode.leaks`): its leak trees into leak reports and groups (the
leaks lens), and its `ROOT CYCLE` loops into retain cycles (the cycles lens), clustered with
FBRetainCycleDetector's by the same bad link: one cluster, one triage, whichever tool found it.
A ROOT CYCLE's record counts in its report's totals and points at its clusters.

The report names its build in its header (`Version: 8.0.4 (104)`) when the app is an app; the
upload's `build_version` wins over it. Device and the rest come with the upload.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from django.urls import reverse

from memdash.core.models import Build, Device
from memdash.core.writes.uploads import NOT_JSON, FormatHandler, Progress, StoreResult, UploadMeta
from memdash.cycles.logic.clustering import canonical_cycle, cycle_digest
from memdash.cycles.logic.parse import ParsedCycles
from memdash.cycles.reads.clusters import clusters_of_loops
from memdash.cycles.writes import store_cycle_report
from memdash.ingest.writes.parsers.leaks import build_and_device, check_numbers, check_text
from memdash.leaks.logic.parsers import xcode_leaks
from memdash.leaks.models import LeakReport
from memdash.leaks.writes.reports import cycle_records, link_cycle_clusters, store_leak_log

FORMAT = "xcode.leaks"
_VERSION = re.compile(r"^(?P<version>[^\s()]+)(?: \((?P<number>[^)]*)\))?$")
_DATE = "%Y-%m-%d %H:%M:%S.%f %z"


def named_build(report: LeakReport | Any) -> tuple[str, str]:
    """(version, number) of `Version: 8.0.4 (104)` in the report's header, ("", "") without."""
    match = _VERSION.match(str(report.info.get("version", "")))
    if match is None:
        return "", ""
    number = match["number"] or ""
    return match["version"], "" if number == "???" else number


def captured_at(report: Any, meta: UploadMeta) -> datetime:
    """The report's `Date/Time:` where it prints one with its offset, else when it arrived."""
    try:
        return datetime.strptime(str(report.info.get("date_time", "")), _DATE)
    except ValueError:
        return meta.received_at


def store_cycles(
    meta: UploadMeta, build: Build, device: Device | None, parsed: xcode_leaks.XcodeLeaks,
    at: datetime, reports: list[LeakReport],
) -> dict[str, int]:  # fmt: skip
    """The ROOT CYCLE loops as one retain-cycle report; each cycle record told its clusters."""
    if not parsed.cycles:
        return {}
    cycles = ParsedCycles(
        cycles=[tuple((cls, via) for cls, via, _own in loop) for loop in parsed.cycles],
        ownership=[tuple(own for _cls, _via, own in loop) for loop in parsed.cycles],
    )
    report = store_cycle_report(
        meta.app, build, device, at, cycles, source_format=FORMAT, upload_id=meta.upload_id
    )
    records = cycle_records(reports)
    digests = {
        record.pk: [loop_digest(loop) for loop in record.detail.get("loops", [])]
        for record in records
    }
    clusters = clusters_of_loops(meta.app, [d for ds in digests.values() for d in ds])
    link_cycle_clusters(
        {pk: sorted({clusters[d] for d in ds if d in clusters}) for pk, ds in digests.items()}
    )
    return {"cycles": report.cycles, "cycle_clusters": len(set(clusters.values()))}


def loop_digest(loop: list[Any]) -> str:
    """A stored record's loop (`[class, [via], ownership]` links) as its retain cycle's digest."""
    return cycle_digest(canonical_cycle([(cls, tuple(via)) for cls, via, _own in loop]))


def detect(raw: bytes, doc: Any) -> bool:
    return doc is NOT_JSON and xcode_leaks.looks_like(raw)


def process(raw: bytes, doc: Any, meta: UploadMeta, progress: Progress) -> StoreResult:
    """Check everything first, then store the leaks and the cycles, in the upload's one
    transaction."""
    progress("parse", 0.0)
    check_text(raw)
    parsed = xcode_leaks.parse(raw)
    check_numbers(parsed.log)
    first = parsed.log.reports[0]
    build, device = build_and_device(meta, *named_build(first), what="leaks reports")
    at = captured_at(first, meta)
    progress("store", 0.5)
    stored = store_leak_log(
        meta.app, build, device, parsed.log, captured_at=at, received_at=meta.received_at,
        upload_id=meta.upload_id, source_format=FORMAT,
    )  # fmt: skip
    counts = {**stored.counts(), **store_cycles(meta, build, device, parsed, at, stored.reports)}
    progress("done", 1.0)
    report = stored.reports[0]
    return StoreResult(
        kind="leaks",
        url=report.get_absolute_url()
        if len(stored.reports) == 1
        else reverse("leaks:group_list", args=[meta.app.pk]),
        object_id=report.pk,
        counts=counts,
    )


HANDLER = FormatHandler(
    name=FORMAT,
    description="Xcode's leaks report (leaks <pid>, a .memgraph, --atExit), trees and stacks",
    detect=detect,
    process=process,
)
