"""Demo data: a believable chat app with a story to find.

`com.example.chat` ships builds 8.0.1 … 8.0.5. In 8.0.4 an image cache (`ChatImageCache`) stops
evicting: it grows in every generation of every snapshot and pushes FOOMs up; 8.0.5 fixes it.
Each app adds its part of the story through `load(ctx)` (or its parts through `PARTS`) in its
own `demo.py`; the site's loader (`memdash.site.demo`) makes the app, its builds and devices,
finds those modules and calls them in its `ORDER`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model

from memdash.core.models import App, Build, Device
from memdash.core.writes.uploads import UploadMeta

if TYPE_CHECKING:
    from django.contrib.auth.models import User

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
START = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)


@dataclass
class DemoContext:
    app: App
    builds: list[Build]
    devices: list[Device]
    user: User
    rng: random.Random
    leaking_category: str = LEAKING_CATEGORY
    snapshots: list[Any] = field(default_factory=list)

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


def demo_user() -> User:
    users = get_user_model()
    user = users.objects.filter(username=DEMO_USER).first()
    if user is None:
        user = users.objects.create_user(DEMO_USER, password=DEMO_PASSWORD, is_staff=True)
    return user
