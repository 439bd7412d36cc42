"""What management commands share: the app a command acts on, named by `--app` (a number or a
bundle id, with `--platform` when the bundle id names several) or by `--key` (an ingest key:
its app, and the key the command's uploads are recorded with)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError

from memdash.core.models import App, IngestKey
from memdash.core.reads.apps import resolve_app


def app_named(value: str, platform: str | None = None) -> App:
    """The one app `--app value` names, or the command stops saying so."""
    app = resolve_app(value, platform)
    if app is None:
        raise CommandError(f"no single app matches {value!r} (try --platform)")
    return app


def app_and_key(options: dict[str, Any]) -> tuple[App, IngestKey | None]:
    """The app of `--key` (with the key) or of `--app`."""
    if options.get("key"):
        key = IngestKey.objects.select_related("app").find(options["key"])
        if key is None:
            raise CommandError("unknown or revoked ingest key")
        return key.app, key
    return app_named(options["app"], options.get("platform")), None
