"""A build compare page in a real browser: the chart is drawn, the table is there, and the diff
call tree opens the path of the largest change and expands on demand."""

from __future__ import annotations

import os

import pytest
from django.test import Client

from tests.compare.helpers import SNAPSHOT_A_ROWS, SNAPSHOT_B_ROWS, document, store

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # the live server and Playwright share a thread


@pytest.fixture
def open_browser(browser):
    """A function opening a Chromium page (the shared `browser` fixture)."""
    return browser.new_page


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_build_compare_page_in_a_browser(live_server, open_browser, upload, app, member):
    store(upload, document(SNAPSHOT_A_ROWS))
    store(upload, document(SNAPSHOT_B_ROWS, version="2.0", number="2", device="D-2",
                           generations=[]))  # fmt: skip
    client = Client()
    client.force_login(member)
    page = open_browser()
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )

    page.goto(f"{live_server.url}/apps/{app.pk}/compare/?max_growth=5%25")
    page.wait_for_selector("#compare-chart .main-svg")  # plotly drew the chart
    assert page.locator("#compare-chart .bars .point").count() >= 2
    rows = page.locator("#compare-table tbody tr")
    assert rows.count() == 5  # Cache, New, Cell, NoStack, Old
    assert rows.nth(0).locator("td").nth(0).inner_text() == "Cache"
    assert rows.nth(0).locator(".badge").inner_text() == "grown"
    assert page.locator("#snapshot-counts").inner_text() == "1 vs 1"
    assert "Fails" in page.locator("#gate").inner_text()

    # the diff call tree: main opens by itself down the largest change (main > Feed > Cache)
    tree = page.locator("#difftree")
    page.wait_for_selector("#difftree li[data-node] li[data-node] li[data-node]")
    first = tree.locator(".row").first
    assert first.locator(".name").inner_text() == "main"
    assert "grown" in first.get_attribute("class")
    leaves = tree.locator("li[data-node] li[data-node] li[data-node] > .row")
    assert [leaves.nth(i).locator(".name").inner_text() for i in range(2)] == [
        "-[Cache store]", "-[Cell init]",
    ]  # fmt: skip
    assert leaves.nth(0).locator(".delta").first.inner_text() == "+1000 Bytes"
    gone = tree.locator("li[data-node='n'] > .row")
    assert "gone" in gone.get_attribute("class")  # what had no stack went away

    # collapsing and expanding again does not fetch twice or duplicate children
    feed = tree.locator("li[data-node] li[data-node]").first
    feed.locator("> .row .toggle").click()
    assert feed.locator("> ul").is_hidden()
    feed.locator("> .row .toggle").click()
    assert feed.locator("> ul > li[data-node]").count() == 2
