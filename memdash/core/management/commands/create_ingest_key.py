"""python manage.py create_ingest_key <app-id> --platform ios: prints a new key once."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memdash.core.models import PLATFORMS
from memdash.core.writes.apps import create_ingest_key, get_or_create_app


class Command(BaseCommand):
    help = "Create an ingest key for an app (creating the app if needed); the key is shown once."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("bundle_id", help="the app's bundle id or package name")
        parser.add_argument("--platform", required=True, choices=PLATFORMS)
        parser.add_argument("--name", default="", help="the app's display name")
        parser.add_argument("--key-name", default="", help="a label for the key")

    def handle(
        self, *args: Any, bundle_id: str, platform: str, name: str, key_name: str, **options: Any
    ) -> None:
        if not bundle_id.strip():
            raise CommandError("the bundle id must not be empty")
        app = get_or_create_app(bundle_id.strip(), platform, name)
        key, secret = create_ingest_key(app, key_name)
        self.stderr.write(
            f"Ingest key for {app.bundle_id} ({app.platform}), app id {app.pk}. "
            "It is shown only now; only its hash is stored:"
        )
        self.stdout.write(secret)
