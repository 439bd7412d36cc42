"""The demo loader: the demo app, its builds and devices, then each installed app's part of the
story, found the way Django's admin finds `admin` modules: each app's `demo` module, if it has
one, gives its part as `load(ctx)` (named by the app's label) or its parts as `PARTS` (name ->
load). The site imports none of them by name, so it never imports ingest (its sibling floor)."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import timedelta
from importlib import import_module

from django.apps import apps
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.utils.module_loading import module_has_submodule

from memdash import floors
from memdash.core.demo import BUILDS, BUNDLE_ID, DEVICES, START, DemoContext, demo_user
from memdash.core.models import App, Build, Membership
from memdash.core.writes import apps as services

Load = Callable[[DemoContext], None]

# The story in order (`memdash.floors`: the parts before the lenses, then each lens's). The FOOM
# runs link to the snapshots stored before them (the allocations' and the Matrix report's); the
# debug files name the report's frames once it is stored; the OS's exit records follow the FOOM
# runs they describe. The parts share one random generator, so the order also fixes the data. A
# part of an app that is not installed is left out.
ORDER = floors.demo_order()


def demo_parts() -> list[tuple[str, Load]]:
    """Every installed app's demo parts, in `ORDER`; a part with no place there is an error."""
    found: dict[str, Load] = {}
    for config in apps.get_app_configs():
        if config.module is None or not module_has_submodule(config.module, "demo"):
            continue
        module = import_module(f"{config.name}.demo")
        parts: dict[str, Load] | None = getattr(module, "PARTS", None)
        if parts is None:
            load: Load | None = getattr(module, "load", None)
            parts = {config.label: load} if load is not None else {}  # else a helper module
        for name, part in parts.items():
            if name not in ORDER:
                raise ImproperlyConfigured(
                    f"the demo part {name!r} of {config.name} has no place in "
                    "memdash.floors (a lens's `demo`, or DEMO_BEFORE_LENSES)"
                )
            found[name] = part
    return [(name, found[name]) for name in ORDER if name in found]


def load_demo(verbosity: int = 1, write: Callable[[str], object] = print) -> DemoContext | None:
    """Create the demo app and every app's demo data; does nothing if it exists already."""
    if App.objects.filter(bundle_id=BUNDLE_ID, platform="ios").exists():
        return None
    parts = demo_parts()
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
        for name, load in parts:
            if verbosity:
                write(f"demo data: {name}")
            load(ctx)
    return ctx
