"""A build compare page in a real browser: the chart is drawn, the table is there, and the diff
call tree opens the path of the largest change and expands on demand."""

from __future__ import annotations

import os

import pytest
from django.test import Client

from tests.compare.helpers import SNAPSHOT_A_ROWS, SNAPSHOT_B_ROWS, document, store
from tests.compare.test_diff_tree_options import store_builds

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
    # one snapshot against one: nothing is significant (p = 1), so the largest changes of the
    # median first: Cache and New +1000 (Cache +10 objects, New +1), Old -32, NoStack -16,
    # Cell 0 (was biggest growers first, and red "grown")
    assert rows.count() == 5
    assert [rows.nth(i).locator("td").nth(0).inner_text() for i in range(5)] == [
        "Cache", "New", "Old", "NoStack", "Cell",
    ]  # fmt: skip
    assert rows.nth(0).locator(".badge").inner_text() == "changed, not significant"
    assert page.locator("#snapshot-counts").inner_text() == "1 vs 1"
    assert "Passes" in page.locator("#gate").inner_text()  # past 5%, but not significant

    # the diff call tree: main opens by itself down the largest change (main > Feed > Cache)
    tree = page.locator("#difftree")
    page.wait_for_selector("#difftree li[data-node] li[data-node] li[data-node]")
    first = tree.locator(".row").first
    assert first.locator(".name").inner_text() == "main"
    # one build snapshot a side: grown as measured, but not significant, so not coloured
    assert "untested" in first.get_attribute("class") and "grown" not in first.get_attribute(
        "class"
    )
    leaves = tree.locator("li[data-node] li[data-node] li[data-node] > .row")
    assert [leaves.nth(i).locator(".name").inner_text() for i in range(2)] == [
        "-[Cache store]", "-[Cell init]",
    ]  # fmt: skip
    assert leaves.nth(0).locator(".delta").first.inner_text() == "+1000 Bytes"
    gone = tree.locator("li[data-node='n'] > .row")
    # what had no stack went away: "gone" in its tooltip; one snapshot a side, not coloured
    assert "untested" in gone.get_attribute("class")
    assert gone.locator(".delta").first.get_attribute("title").startswith("gone")

    # collapsing and expanding again does not fetch twice or duplicate children
    feed = tree.locator("li[data-node] li[data-node]").first
    feed.locator("> .row .toggle").click()
    assert feed.locator("> ul").is_hidden()
    feed.locator("> .row .toggle").click()
    assert feed.locator("> ul > li[data-node]").count() == 2


def _signed_in(live_server, open_browser, member, viewport=None):
    client = Client()
    client.force_login(member)
    page = open_browser(viewport=viewport) if viewport else open_browser()
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    return page


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_diff_tree_shows_libraries_and_colours_each_change(
    live_server, open_browser, upload, app, member
):
    store_builds(upload)  # the two builds of test_diff_tree_options
    page = _signed_in(live_server, open_browser, member, {"width": 1400, "height": 900})
    # Both sessions before the server answers anything: a session written while it answers the
    # tree's requests found SQLite's shared-cache table locked (seen once in a full run).
    phone = _signed_in(live_server, open_browser, member, {"width": 390, "height": 844})
    page.goto(f"{live_server.url}/apps/{app.pk}/compare/")
    page.wait_for_selector("#difftree li[data-node] li[data-node] li[data-node]")
    # -[Cell init]: 50 -> 60 bytes, 5 -> 1 objects; three snapshots a side, p = 0.1: not
    # significant, so neither change is coloured (issue 34: only significant changes are)
    cell = page.locator("#difftree .row", has=page.locator(".name", has_text="-[Cell init]"))
    assert cell.locator(".image").inner_text() == "Chat"  # its library
    deltas = cell.locator(".delta")
    assert deltas.nth(0).get_attribute("class") == "num delta"
    assert deltas.nth(1).get_attribute("class") == "num delta"
    assert deltas.nth(1).inner_text() == "-4"
    # the table fits a 1400 px window: nothing scrolls sideways, in the page or in its box
    fits = "(el) => el.scrollWidth <= el.clientWidth"
    assert page.locator(".table-scroll:has(#compare-table)").evaluate(fits)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    # Invert Call Tree, without JavaScript's help: a checkbox and the form's reload
    page.locator("#difftree-controls input[name=inverted]").check()
    page.locator("#difftree-controls button").click()
    page.wait_for_selector("#difftree[data-ready='1']")
    first = page.locator("#difftree .row").first
    assert first.locator(".name").inner_text() == "malloc"
    assert first.locator(".image").inner_text() == "libsystem_malloc.dylib"
    assert "inverted=1" in page.url

    # at 390 px the table scrolls in its own box, the page does not
    phone.goto(f"{live_server.url}/apps/{app.pk}/compare/")
    assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    box = phone.locator(".table-scroll:has(#compare-table)")
    assert box.evaluate("(el) => el.scrollWidth > el.clientWidth")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_snapshot_picker_filters_by_text(live_server, open_browser, upload, app, member):
    store(upload, document(SNAPSHOT_A_ROWS))
    store(upload, document(SNAPSHOT_B_ROWS, version="2.0", number="2", device="D-2",
                           model="iPhone15,2", generations=[]))  # fmt: skip
    page = _signed_in(live_server, open_browser, member)
    page.goto(f"{live_server.url}/apps/{app.pk}/snapshot-diff/")
    base = page.locator("select[name=base]")
    assert base.locator("optgroup").count() == 2
    page.locator(".picker-filter").first.fill("iphone15")
    # only 2.0's snapshot (on an iPhone15,2) is left, under its build
    assert base.locator("optgroup").count() == 1
    assert base.locator("optgroup").get_attribute("label") == "2.0 (2)"
    page.locator(".picker-filter").first.fill("")
    assert base.locator("option").count() == 2
