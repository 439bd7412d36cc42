"""The FOOM pages in a real browser: the charts are drawn, and two clicks lead from the app's FOOM
trend to the snapshot of a FOOM run."""

from __future__ import annotations

import os

import pytest
from django.test import Client

from memdash.allocations.models import Snapshot
from tests.foom.helpers import ago, ended, run, sessions_doc
from tests.foom.test_pages import snapshot_doc

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # the live server and Playwright share a thread


@pytest.fixture
def browser_page(browser):
    return browser.new_page()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_from_the_trend_to_what_filled_memory(live_server, browser_page, upload, app, member):
    t = ago(days=3)
    doc = sessions_doc(
        run("foom-1", t, end=ended(memory_warnings=5, footprint_bytes=2_936_012_800)),
        run("next-1", ago(days=2)),
    )
    assert upload(doc).status_code == 202
    assert upload(snapshot_doc("foom-1", t)).status_code == 202
    client = Client()
    client.force_login(member)
    page = browser_page
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )

    page.goto(f"{live_server.url}/apps/{app.pk}/foom/")
    for chart in ("#foom-build-trend", "#foom-class-breakdown", "#foom-day-trend"):
        page.wait_for_selector(f"{chart} .main-svg")  # plotly drew it
    page.click("table a:has-text('8.0.51 (2741)')")  # click 1: the build
    page.wait_for_selector("#foom-footprint-by-model .main-svg")
    assert "ChatImageCache" in page.inner_text("body")
    page.click("table a:has-text('foom ')")  # click 2: the FOOM run's snapshot
    snapshot = Snapshot.objects.get(session_id="foom-1")
    assert page.url == f"{live_server.url}/snapshots/{snapshot.pk}/"
    assert errors == []
