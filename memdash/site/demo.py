"""The demo loader: the demo app, its builds and devices, then each lens's part of the story."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import timedelta

from django.db import transaction

from memdash.allocations import demo as allocations_demo
from memdash.churn import demo as churn_demo
from memdash.core import services
from memdash.core.demo import BUILDS, BUNDLE_ID, DEVICES, START, DemoContext, demo_user
from memdash.core.models import App, Build, Membership
from memdash.cycles import demo as cycles_demo
from memdash.foom import demo as foom_demo
from memdash.ingest import demo as ingest_demo
from memdash.ingest import demo_os, demo_symbols
from memdash.leaks import demo as leaks_demo

# In this order: the FOOM runs link to the snapshots stored before them.
PARTS: list[tuple[str, Callable[[DemoContext], None]]] = [
    ("snapshots", allocations_demo.load),
    ("ingest", ingest_demo.load),
    ("debug files", demo_symbols.load),  # names the Matrix report's frames once committed
    ("foom", foom_demo.load),
    ("os exits", demo_os.load),  # MetricKit from the FOOM runs; the Android variant
    ("cycles", cycles_demo.load),
    ("leaks", leaks_demo.load),
    ("churn", churn_demo.load),
]


def load_demo(verbosity: int = 1, write: Callable[[str], object] = print) -> DemoContext | None:
    """Create the demo app and every lens's demo data; does nothing if it exists already."""
    if App.objects.filter(bundle_id=BUNDLE_ID, platform="ios").exists():
        return None
    with transaction.atomic():
        app = services.get_or_create_app(BUNDLE_ID, "ios", "Chat")
        user = demo_user()
        services.add_member(app, user, Membership.ADMIN)
        builds = [
            services.get_or_create_build(app, version, number, f"c0ffee{i}")
            for i, (version, number) in enumerate(BUILDS)
        ]
        for i, build in enumerate(builds):
            Build.objects.filter(pk=build.pk).update(created_at=START + timedelta(days=7 * i))
        devices = [services.get_or_create_device(app, *d) for d in DEVICES]
        ctx = DemoContext(app=app, builds=builds, devices=devices, user=user, rng=random.Random(4))
        for name, load in PARTS:
            if verbosity:
                write(f"demo data: {name}")
            load(ctx)
    return ctx
