"""The demo's Matrix report: a FOOM run of the leaking build, linked to its snapshot."""

from __future__ import annotations

import random

import pytest

from memdash.allocations.models import CategoryTotal, Snapshot
from memdash.core.demo import BUILDS, DemoContext
from memdash.core.writes import apps as core_services
from memdash.foom.models import Session
from memdash.ingest.demo import matrix as demo_matrix
from memdash.ingest.models import Upload


@pytest.mark.django_db
def test_demo_uploads_a_matrix_report_for_a_foom_of_the_leaking_build(app, member):
    builds = [core_services.get_or_create_build(app, v, n) for v, n in BUILDS]
    ctx = DemoContext(app=app, builds=builds, devices=[], user=member, rng=random.Random(4))
    demo_matrix.load(ctx)

    assert sorted(Upload.objects.values_list("format", "status")) == [
        ("matrix", Upload.DONE),
        ("memdash.sessions", Upload.DONE),
    ]
    run = Session.objects.get(session_id=demo_matrix.FOOM_SESSION)
    assert run.classification == "foom"
    snapshot = Snapshot.objects.get(session_id=demo_matrix.FOOM_SESSION)
    assert (snapshot.trigger, snapshot.build) == ("foom", ctx.leaking_build)
    # 4800 × 256 KiB + 40 × 2 MiB + 12 × 4 MiB + 2100 × 1024 + 24000 × 48 + 15600 × 64
    #   + 7200 × 112 + 360 × 768 + 2700 × 48
    # = 1258291200 + 83886080 + 50331648 + 2150400 + 1152000 + 998400 + 806400 + 276480 + 129600
    # = 1398022208 bytes in 4800 + 40 + 12 + 2100 + 24000 + 15600 + 7200 + 360 + 2700 = 56812
    assert (snapshot.persistent, snapshot.persistent_bytes) == (56812, 1398022208)
    heaviest = CategoryTotal.objects.filter(snapshot=snapshot).order_by("-persistent_bytes")[0]
    assert heaviest.category.name == ctx.leaking_category
