"""The demo's OS story: MetricKit for the iOS builds, with 8.0.4's memory-limit kills up as its
FOOMs are; an Android variant whose exits show where rules 2 and 15 mislead."""

from __future__ import annotations

import pytest

from memdash.core.models import App
from memdash.foom import demo as foom_demo
from memdash.foom.models import MetricKitPayload, Session
from memdash.foom.reads.exits import SAME_DEVICES, agreement_by_build, os_build_rows
from memdash.ingest.demo import os_exits as demo_os
from memdash.ingest.models import Upload

pytestmark = pytest.mark.django_db


@pytest.mark.slow  # the OS exits' demo part
def test_the_demo_sends_both_and_tells_the_story(demo_context):
    ctx = demo_context
    foom_demo.load(ctx)
    demo_os.load(ctx)
    # every payload and exit went through the ingest service and was stored
    uploads = Upload.objects.filter(format__in=("memdash.metrickit", "memdash.exitinfo"))
    # MetricKit: one upload per iOS build and device with classified runs, naming the device;
    # ApplicationExitInfo: one per Android build
    devices_of_builds = (
        Session.objects.filter(app=ctx.app)
        .exclude(classification="pending")
        .values_list("build_id", "device_id")
        .distinct()
    )
    assert uploads.count() == len(set(devices_of_builds)) + 3
    assert set(uploads.values_list("status", flat=True)) == {Upload.DONE}
    assert not MetricKitPayload.objects.filter(app=ctx.app, device_key="").exists()
    # every device named: the agreement compares the runs of the devices that sent MetricKit
    assert {a.basis for a in agreement_by_build(ctx.app)} == {SAME_DEVICES}

    ios = {row.build.pk: row.counts.memory_rate for row in os_build_rows(ctx.app)}
    leaking = ios[ctx.leaking_build.pk]
    assert set(ios) == {b.pk for b in ctx.builds}
    for build in ctx.builds:
        if build != ctx.leaking_build:
            assert ios[build.pk].rate < leaking.rate, build  # 8.0.4's memory kills are up

    android = App.objects.get(bundle_id=ctx.app.bundle_id, platform="android")
    rows = os_build_rows(android)
    assert [str(row.build) for row in rows] == ["8.0.3 (103)", "8.0.4 (104)", "8.0.5 (105)"]
    by_rule: dict[int, list[float]] = {}
    for build in agreement_by_build(android):
        assert build.basis == "matched runs"
        for row in build.rules:
            totals = by_rule.setdefault(row.rule, [0, 0])
            totals[0] += row.false_fooms
            totals[1] += row.missed
    assert by_rule[15][0] > 0  # ANRs that rule 15 called FOOMs
    assert by_rule[2][1] > 0  # memory-limiter kills that rule 2 called os_kill
    assert by_rule[1] == [0, 0]  # the OS's own low_memory never disagrees with itself
