"""Drag a range across a snapshot's timeline: the page opens for that range (in its URL) and the
statistics table lists only the allocations made in it (tests/snapshots/test_timeline.py's
events upload: A 200 B made at 400 ms and B 80 B at 600 ms; the others at 0, 5 and 1000 ms)."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest

from tests.samples import timeline_example

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_dragging_a_range_filters_the_table(upload, member, logged_in_page):
    from playwright.sync_api import expect

    response = upload(timeline_example())
    assert response.json()["status"] == "done", response.json()
    sid = response.json()["snapshot"]["id"]
    page = logged_in_page(member)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"/snapshots/{sid}/")
    # plotly (4.6 MiB) is read after the page: on a busy machine it takes a while
    drawn = expect(page.locator("#timeline-chart"))
    drawn.to_have_attribute("data-range-listening", "1", timeout=30_000)
    assert errors == []
    # the plot area spans the run, 0 to 1 s: drag from 0.35 s to 0.65 s
    box = page.locator("#timeline-chart .nsewdrag").first.bounding_box()
    assert box is not None
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + 0.35 * box["width"], y)
    page.mouse.down()
    page.mouse.move(box["x"] + 0.65 * box["width"], y, steps=12)
    page.mouse.up()
    page.wait_for_url(re.compile(r".*from_ms=.*to_ms=.*"))
    query = parse_qs(urlparse(page.url).query)
    # whole buckets of 10 ms around the drag (a pixel is about 1 ms here)
    assert 330 <= float(query["from_ms"][0]) <= 370, page.url
    assert 630 <= float(query["to_ms"][0]) <= 670, page.url
    rows = page.locator("#statistics tbody tr:not(.summary) td:first-child")
    expect(rows).to_have_text(["A", "B"])  # 200 B, then 80 B
    expect(page.locator("#timeline-range")).to_contain_text("Inspecting the allocations made")
    # the call tree keeps the range: main 200 B, (no stack) 80 B
    page.locator("#calltree-link").click()
    expect(page.locator("#calltree-range")).to_be_visible()
    expect(page.locator("#calltree")).to_have_attribute("data-ready", "1")
    roots = page.locator("#calltree .ct-roots > .ct-node > .ct-row .ct-bytes")
    expect(roots).to_have_text(["200 Bytes", "80 Bytes"])
    # and clearing it shows the whole run again
    page.go_back()
    page.locator("#clear-range").click()
    expect(rows).to_have_text(["A", "B", "C"])
