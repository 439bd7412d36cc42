"""A heaptrack file's Allocations List in the browser: each allocation a row with when it was
made (Created) and no Address column (the file has none), sorted by time; a row selected opens
its whole stack. The file is tests/data/heaptrack/heaptrack.grow.zst (grow.c's 2219 allocations,
heaptrack_print's count); the list is read from its blocks before it is made."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client

from tests.importers.test_heaptrack import BUILD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GROW = Path(__file__).resolve().parents[1] / "data" / "heaptrack" / "heaptrack.grow.zst"


def test_created_not_address_and_a_rows_stack(upload, member, logged_in_page):
    from playwright.sync_api import expect

    response = upload(GROW.read_bytes(), content_type="application/zstd", query=BUILD)
    assert response.status_code == 202, response.json()
    snapshot_id = response.json()["snapshot"]["id"]

    page = logged_in_page(member)
    page.goto(f"/snapshots/{snapshot_id}/allocations/?sort=time&dir=asc")
    headers = page.locator("#allocations thead th")
    expect(headers.first).to_have_text("Category")
    expect(headers.nth(1)).to_have_text("Created ▴")
    expect(page.locator("#allocations thead")).not_to_contain_text("Address")
    rows = page.locator("#allocations tbody tr")
    expect(rows).to_have_count(100)  # a page of the 2219
    expect(rows.first.locator("td").nth(1)).to_contain_text(" ms")
    # the first allocation's stack, as the API gives it (the dynamic loader's, at 0 ms)
    client = Client()
    client.force_login(member)
    api = f"/api/v1/snapshots/{snapshot_id}"
    (first,) = client.get(f"{api}/allocations?sort=time&dir=asc&limit=1").json()["rows"]
    stack = client.get(f"{api}/stack?id={first['stack']}").json()["frames"]
    rows.first.click()
    frames = page.locator("#extended-detail .ed-frames li .ed-symbol")
    unnamed = re.compile(r"^0x[0-9a-f]+ in ")  # a frame without a function: its address
    expect(frames).to_have_text([f["symbol"] or unnamed for f in stack])
