"""The demo's FOOM story: the rate rises in the leaking build, falls after the fix, and FOOM runs
link to snapshots in which the leaking category dominates."""

from __future__ import annotations

import random

import pytest

from memdash.allocations.models import Snapshot
from memdash.core.demo import BUILDS, DEVICES, DemoContext
from memdash.core.writes import apps as services
from memdash.foom import demo
from memdash.foom.models import Session
from memdash.foom.reads import rates as selectors

pytestmark = pytest.mark.django_db


@pytest.fixture
def ctx():
    app = services.get_or_create_app("com.example.chat", "ios", "Chat")
    builds = [
        services.get_or_create_build(app, v, n, f"c0ffee{i}") for i, (v, n) in enumerate(BUILDS)
    ]
    devices = [services.get_or_create_device(app, *d) for d in DEVICES]
    return DemoContext(app=app, builds=builds, devices=devices, user=None, rng=random.Random(4))


def test_demo_tells_the_story(ctx):
    demo.load(ctx)
    rates = {row.build.pk: row.counts.session_rate for row in selectors.build_trend(ctx.app)}
    leaking = rates[ctx.leaking_build.pk]
    assert all(rates[b.pk] is not None for b in ctx.builds)
    for build in ctx.builds:
        if build != ctx.leaking_build:
            # not only higher: the intervals do not overlap
            assert rates[build.pk].high < leaking.low, build
    # every build has FOOM runs, and some of them have a snapshot with trigger "foom"
    fooms = Session.objects.filter(classification="foom")
    for build in ctx.builds:
        linked = Snapshot.objects.filter(
            build=build, trigger="foom", session_id__in=fooms.values("session_id")
        )
        assert linked.exists(), build
    # in the leaking build's FOOM snapshots the leaking category leads
    _, categories = selectors.foom_snapshot_categories(ctx.leaking_build)
    assert categories[0].name == ctx.leaking_category
