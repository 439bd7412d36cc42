"""Re-classify an app's whole session history under the current rules (after a rules change)."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memdash.core.logic.numbers import whole_number
from memdash.core.models import App
from memdash.foom.logic.classify import RULES_VERSION
from memdash.foom.writes.sessions import reclassify_app


class Command(BaseCommand):
    help = (
        "Re-classify every session of an app under the current FOOM rules "
        f"({RULES_VERSION}) and recompute its per-build counts."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--app", required=True, help="app id (or bundle id)")

    def handle(self, *args: Any, **options: Any) -> None:
        app = self._app(options["app"])
        outcome = reclassify_app(app)
        self.stdout.write(
            f"{app.bundle_id} ({app.platform}): {outcome.sessions} sessions under rules "
            f"{RULES_VERSION}, {outcome.changed} results rewritten"
        )
        for (old, new), n in sorted(outcome.transitions.items()):
            self.stdout.write(f"  {old} -> {new}: {n}")

    def _app(self, ref: str) -> App:
        number = whole_number(ref)
        lookup = {"pk": number} if number is not None else {"bundle_id": ref}
        apps = App.objects.filter(**lookup)
        found = list(apps[:2])
        if len(found) != 1:
            raise CommandError(
                f"no app {ref!r}" if not found else f"{ref!r} names several apps; use the app id"
            )
        return found[0]
