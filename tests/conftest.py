"""Shared fixtures: an app with a member, an outsider, an ingest key, an upload helper, the
demo's builds and devices, and the whole demo loaded once for a module (`loaded_demo`).

Markers (pyproject.toml) that follow from what a test uses are set here: `browser` for a test
that uses the `browser` fixture, `demo` and `slow` for one that uses `loaded_demo`.
`scripts/test.sh --fast` leaves out `browser` and `slow`."""

from __future__ import annotations

import os
import random
from pathlib import Path

import orjson
import pytest
from django.conf import settings
from django.core.cache import caches
from django.db import connections, transaction
from django.test import Client
from django.test.utils import override_settings
from rest_framework.test import APIClient

from memdash.core.demo import BUILDS, DEVICES, DemoContext
from memdash.core.logic import pacing
from memdash.core.models import Membership
from memdash.core.writes import apps as core_services
from memdash.site import demo as site_demo
from tests.citus import cluster as citus_cluster
from tests.migrations import latest, migrate

# Browser tests drive a live server from the test thread.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

# On a Citus coordinator the test databases are made on every node (tests/citus/cluster.py).
citus_cluster.install()


DATABASE_FIXTURES = {"db", "transactional_db", "live_server"}


def pytest_collection_modifyitems(config, items):
    """Markers from the fixtures a test uses; then the slow tests that use no database first
    (pytest-django has put the database's tests first, in the order they need): the workers
    start on the long ones (the small benchmark) rather than end on them, one alone."""
    for item in items:
        uses = set(getattr(item, "fixturenames", ()))
        if "browser" in uses:
            item.add_marker(pytest.mark.browser)
        if "loaded_demo" in uses:
            item.add_marker(pytest.mark.demo)
            item.add_marker(pytest.mark.slow)

    def long_and_apart(item) -> bool:
        uses_database = item.get_closest_marker("django_db") or DATABASE_FIXTURES & set(
            getattr(item, "fixturenames", ())
        )
        return bool(item.get_closest_marker("slow")) and not uses_database

    items.sort(key=lambda item: not long_and_apart(item))  # stable: the rest keep their order


@pytest.fixture(autouse=True, scope="session")
def _one_round_password_hashes():
    """Users' passwords hashed with PBKDF2 at one round (tests/hashers.py): a test's users cost
    nothing to make or to log in."""
    with override_settings(PASSWORD_HASHERS=["tests.hashers.OneRoundPBKDF2PasswordHasher"]):
        yield


@pytest.fixture(autouse=True)
def _media_root(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "uploads"


@pytest.fixture(autouse=True)
def _paced_work_not_done_yet():
    """Each test starts as a new process would: work a process does at most every few seconds
    (the look for dead workers' uploads, BRIN summaries) not done yet."""
    pacing.forget()


@pytest.fixture
def back_to_latest():
    """Whatever a migration's test migrated to, the next tests find the latest schema."""
    yield
    migrate(latest())


@pytest.fixture
def database_tasks(settings):
    """Tasks queued in the database for workers, as production runs them (Django resets its
    task backends on this setting's change), with nothing of an earlier test's pacing cached."""
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    caches["default"].clear()
    yield
    caches["default"].clear()


@pytest.fixture
def app(db):
    return core_services.get_or_create_app("com.example.chat", "ios", "Chat")


@pytest.fixture
def member(db, app, django_user_model):
    user = django_user_model.objects.create_user("member", password="member-pass-123")
    core_services.add_member(app, user, Membership.ADMIN)
    return user


@pytest.fixture
def outsider(db, django_user_model):
    return django_user_model.objects.create_user("outsider", password="outsider-pass-123")


@pytest.fixture
def member_client(member):
    client = Client()
    client.force_login(member)
    return client


@pytest.fixture
def outsider_client(outsider):
    client = Client()
    client.force_login(outsider)
    return client


@pytest.fixture
def api_client(member):
    client = APIClient()
    client.force_authenticate(member)
    return client


@pytest.fixture
def ingest_secret(app):
    return core_services.create_ingest_key(app)[1]


@pytest.fixture
def upload(client, ingest_secret):
    """POST /api/v1/uploads: a dict or list is sent as JSON, bytes as they are."""

    def send(body, secret=None, content_type="application/json", query="", **extra):
        data = body if isinstance(body, bytes) else orjson.dumps(body)
        return client.post(
            "/api/v1/uploads" + (f"?{query}" if query else ""),
            data=data,
            content_type=content_type,
            HTTP_AUTHORIZATION=f"Bearer {secret or ingest_secret}",
            **extra,
        )

    return send


@pytest.fixture
def demo_context(app, member):
    """The demo's builds and devices in the test app, the member as its user: a domain's demo test
    loads its own demo into it."""
    builds = [core_services.get_or_create_build(app, version, number) for version, number in BUILDS]
    devices = [core_services.get_or_create_device(app, *device) for device in DEVICES]
    return DemoContext(app=app, builds=builds, devices=devices, user=member, rng=random.Random(4))


@pytest.fixture(scope="module")
def loaded_demo(django_db_setup, django_db_blocker):
    """The whole demo (`manage.py load_demo`: every app's part), loaded once for the tests of a
    module that asks for it and rolled back after the last of them. Each test runs in a
    savepoint inside the transaction that holds it (what a test writes is undone after it), so
    such a test uses `db`, not `transactional_db` (whose flush would end that transaction)."""
    with django_db_blocker.unblock(), transaction.atomic():
        ctx = site_demo.load_demo(verbosity=0)
        assert ctx is not None, "the demo was in the test database already"
        yield ctx
        transaction.set_rollback(True)


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


@pytest.fixture
def browser():
    """Debian's Chromium driven by Playwright, one per test (Playwright's sync API cannot run
    two at once in a thread). Skipped when Chromium is missing, unless CI requires it."""
    if not CHROMIUM.exists():
        message = f"Debian's Chromium is not installed at {CHROMIUM} (apt-get install chromium)"
        if os.environ.get("MEMDASH_REQUIRE_BROWSER"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright import sync_api

    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield chromium
        finally:
            # Queries made while Playwright's loop runs use a connection of another async
            # context, which the test database teardown would not see: close them here.
            connections.close_all()
            chromium.close()


@pytest.fixture
def logged_in_page(browser, live_server):
    """`logged_in_page(user)` -> a Playwright page whose session is that user's."""

    def open_page(user):
        client = Client()
        client.force_login(user)
        context = browser.new_context(base_url=live_server.url)
        context.add_cookies(
            [
                {
                    "name": settings.SESSION_COOKIE_NAME,
                    "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                    "url": live_server.url,
                }
            ]
        )
        context.set_default_timeout(15_000)
        return context.new_page()

    return open_page


@pytest.fixture(autouse=True)
def _fresh_throttle_counts():
    """Every test starts with no failed authentication and no upload counted (memdash.core.throttle
    keeps them in a cache of the process, which outlives a test's database)."""
    caches["throttle"].clear()
