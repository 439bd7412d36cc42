"""Demo data: a believable chat app with a story to find.

`com.example.chat` ships builds 8.0.1 … 8.0.5. In 8.0.4 an image cache (`ChatImageCache`) stops
evicting: it grows in every generation of every snapshot and pushes FOOMs up; 8.0.5 fixes it.
Each domain adds its part of the story through `load(ctx)` in its own `demo.py`.
"""

from __future__ import annotations

import importlib
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.contrib.auth import get_user_model
from django.db import transaction

from memdash.core import services
from memdash.core.models import App, Build, Device, Membership
from memdash.core.uploads import UploadMeta

BUNDLE_ID = "com.example.chat"
DEMO_USER, DEMO_PASSWORD = "demo", "memdash-demo"
BUILDS = [("8.0.1", "101"), ("8.0.2", "102"), ("8.0.3", "103"), ("8.0.4", "104"), ("8.0.5", "105")]
LEAKING_CATEGORY = "ChatImageCache"
# OS versions bare, as the monitors send them (`"os": "17.4.1"` in the sessions format): the
# other domains' demo data uses the same names, so each OS shows once in the filters.
DEVICES = [
    ("D-1001", "iPhone14,5", "17.4.1"),
    ("D-1002", "iPhone12,1", "16.7.2"),
    ("D-1003", "iPhone15,2", "17.5"),
    ("D-1004", "iPhone13,2", "17.4.1"),
]
DOMAINS = ["snapshots", "ingest", "foom", "cycles", "leaks", "churn"]
START = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)


@dataclass
class DemoContext:
    app: App
    builds: list[Build]
    devices: list[Device]
    user: object
    rng: random.Random
    leaking_category: str = LEAKING_CATEGORY
    snapshots: list = field(default_factory=list)

    @property
    def leaking_build(self) -> Build:
        return self.builds[3]

    @property
    def fixed_build(self) -> Build:
        return self.builds[4]

    def build_date(self, build: Build) -> datetime:
        """Builds are released a week apart."""
        return START + timedelta(days=7 * self.builds.index(build))

    def meta_for(self, build: Build, device: Device | None = None) -> UploadMeta:
        return UploadMeta(
            app=self.app,
            received_at=self.build_date(build),
            build_version=build.version,
            build_number=build.number,
            device_id=device.device_key if device else "",
            device_model=device.model if device else "",
            os=device.os if device else "",
        )


def demo_user():
    users = get_user_model()
    user = users.objects.filter(username=DEMO_USER).first()
    if user is None:
        user = users.objects.create_user(DEMO_USER, password=DEMO_PASSWORD, is_staff=True)
    return user


def load_demo(verbosity: int = 1, write=print) -> DemoContext | None:
    """Create the demo app and every domain's demo data; does nothing if it exists already."""
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
        for domain in DOMAINS:
            try:
                module = importlib.import_module(f"memdash.{domain}.demo")
            except ModuleNotFoundError:
                continue
            if verbosity:
                write(f"demo data: {domain}")
            module.load(ctx)
    return ctx
