"""The Allocations List in the browser: selecting a row opens the Extended Detail pane with its
whole stack, and its link opens the call tree along that stack's path, the row's node selected.
The spec example (tests/samples.py); its stacks and callers are worked out in
tests/snapshots/test_allocation_list.py."""

from __future__ import annotations

import pytest

from tests.samples import spec_example

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_select_a_row_see_its_stack_and_open_it_in_the_tree(upload, member, logged_in_page):
    from playwright.sync_api import expect

    response = upload(spec_example())
    assert response.json()["status"] == "done", response.json()
    snapshot_id = response.json()["snapshot"]["id"]

    page = logged_in_page(member)
    page.goto(f"/snapshots/{snapshot_id}/")
    page.locator("#allocations-link").click()
    page.wait_for_url(f"**/snapshots/{snapshot_id}/allocations/")
    rows = page.locator("#allocations tbody tr")
    expect(rows).to_have_count(5)
    pane = page.locator("#extended-detail")
    expect(pane.locator(".ed-empty")).to_have_text("Select a row to see its whole stack.")

    # by size: the third row is MessageCell's freed allocations (30, 22.50 KiB), stack 3
    third = rows.nth(2)
    expect(third.locator("td").first).to_have_text("MessageCell")
    third.click()
    expect(third).to_have_attribute("aria-selected", "true")
    frames = pane.locator(".ed-frames li .ed-symbol")
    expect(frames).to_have_text([
        "-[MessageCell initWithStyle:]", "-[ChatViewController viewDidLoad]",
        "UIApplicationMain", "main",
    ])  # fmt: skip
    expect(pane.locator(".ed-frames li.responsible .ed-symbol")).to_have_text(
        "-[MessageCell initWithStyle:]"
    )
    expect(pane.locator(".ed-frames li").nth(2).locator(".ed-image")).to_have_text("UIKitCore")
    assert page.url.endswith("#sel=2")

    # the arrow key selects the next row: by size MessageCell's live ones, the same stack
    page.keyboard.press("ArrowDown")
    expect(rows.nth(3)).to_have_attribute("aria-selected", "true")
    expect(frames.first).to_have_text("-[MessageCell initWithStyle:]")
    page.keyboard.press("ArrowDown")  # Malloc 48 Bytes: stack 2
    expect(frames).to_have_text(["-[ChatViewController viewDidLoad]", "UIApplicationMain", "main"])

    # open the call tree along the path: its node selected, the path open from the root
    pane.locator(".ed-tree").click()
    page.wait_for_url(f"**/snapshots/{snapshot_id}/calltree/?category_hash=*#open=*")
    expect(page.locator("#calltree")).to_have_attribute("data-ready", "1")
    selected = page.locator('#calltree [role=treeitem][aria-selected="true"] > .ct-row .ct-symbol')
    expect(selected).to_have_text("-[ChatViewController viewDidLoad]")
    expect(page.locator(".ct-category")).to_have_text("Malloc 48 Bytes")
