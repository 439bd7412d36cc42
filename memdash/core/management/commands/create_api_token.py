"""python manage.py create_api_token <username>: prints a new personal API token once."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from memdash.core.writes.apps import create_api_token


class Command(BaseCommand):
    help = (
        "Create a personal API token (`Authorization: Token <token>`) for a user; the token is "
        "shown once."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="a label for the token")

    def handle(self, *args: Any, username: str, name: str, **options: Any) -> None:
        users = get_user_model()
        user = users.objects.filter(**{users.USERNAME_FIELD: username}).first()
        if user is None or not user.is_active:
            raise CommandError(f"no active user {username!r}")
        _, secret = create_api_token(user, name[:100])
        self.stderr.write(
            f"API token for {username}. It is shown only now; only its hash is stored:"
        )
        self.stdout.write(secret)
