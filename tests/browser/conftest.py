"""Browser tests: Debian's Chromium driven by Playwright against pytest-django's live server.

Tests here are marked `browser`; they are skipped (with the reason) when /usr/bin/chromium or
Playwright is missing. Log a user in with `logged_in_page(user)`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

# The live server runs in a thread of this process; Playwright's sync API runs an event loop in
# the test thread, which Django would otherwise refuse to touch the database from.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(f"Debian's Chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        yield browser
        browser.close()


@pytest.fixture
def logged_in_page(browser, live_server):
    """`logged_in_page(user)` -> a Playwright page whose session is that user's."""
    contexts = []

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
        contexts.append(context)
        return context.new_page()

    yield open_page
    for context in contexts:
        context.close()
