"""The demo's leak found from a build page in at most five clicks: on 8.0.4 (com.example.chat),
"Compare with the previous build" opens build compare 8.0.3 → 8.0.4, whose first row is the one
significant grower; its name opens that category's diff call tree, down the path of the change."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memdash.core.demo import LEAKING_CATEGORY
from memdash.site import demo as site_demo

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_leak_of_804_in_at_most_five_clicks(logged_in_page):
    from playwright.sync_api import expect

    ctx = site_demo.load_demo(verbosity=0)
    assert ctx is not None
    build = ctx.leaking_build
    assert (ctx.app.bundle_id, build.version) == ("com.example.chat", "8.0.4")
    page = logged_in_page(ctx.user)
    page.goto(reverse("snapshots:build_detail", args=[ctx.app.pk, build.pk]))
    clicks = 0

    def click(locator) -> None:
        nonlocal clicks
        clicks += 1
        locator.click()
        page.wait_for_load_state()

    click(page.get_by_role("link", name="Compare with the previous build (8.0.3 (103))"))
    expect(page.locator("h1")).to_contain_text("8.0.3 (103) → 8.0.4 (104)")
    first = page.locator("#compare-table tbody tr").first
    expect(first.locator("td.category")).to_have_text(LEAKING_CATEGORY)
    expect(first.locator(".badge")).to_have_text("grown")  # the one significant change
    click(first.locator("td.category a"))

    # the diff call tree of that category alone, opened down the path of its growth
    expect(page.locator("#difftree-title")).to_contain_text(f"of {LEAKING_CATEGORY}")
    expect(page.locator("#compare-table tr.current td.category")).to_have_text(LEAKING_CATEGORY)
    found = page.locator("#difftree .row .name", has_text="-[ChatImageCache storeImage:forKey:]")
    expect(found.first).to_be_visible()
    assert clicks <= 5
