"""Data mining in the call tree page, on the snapshot of tests/calltree/conftest.tree_doc
(main 37872 > UIApplicationMain > -[ChatVC viewDidLoad] 37776 > -[MessageCell init] 32256 and
malloc 5520 (115 allocations); 54256 bytes in 160 allocations): a prune from the selected node's
menu, shown as a chip that takes it back, and the sandwich of a function."""

from __future__ import annotations

import pytest

from tests.browser.test_tree_investigation_browser import node, open_tree

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VDL = "-[ChatVC viewDidLoad]"


def test_prune_a_symbol_then_open_a_sandwich(upload, member, logged_in_page):
    from playwright.sync_api import expect

    page, _ = open_tree(upload, member, logged_in_page)
    expect(page.locator(".ct-status")).to_contain_text("52.98 KiB in 160 allocations")
    menu = page.locator(".ct-mine")
    expect(menu).to_be_disabled()  # nothing selected yet
    node(page, "malloc").locator(":scope > .ct-row .ct-symbol").click()
    expect(menu).to_be_enabled()
    menu.select_option(label="Prune malloc")
    # malloc's 5520 bytes in 115 allocations are gone from the tree and its total
    expect(page.locator(".ct-status")).to_contain_text("47.59 KiB in 45 allocations")
    chip = page.locator(".ct-focus .ct-chip")
    expect(chip).to_have_text("Pruned: malloc ×")
    assert "prune_symbol=malloc" in page.url
    expect(page.locator(".ct-symbol", has_text="malloc")).to_have_count(0)

    node(page, VDL).locator(":scope > .ct-row .ct-symbol").click()
    menu.select_option(label=f"Sandwich of {VDL}")
    view = page.locator(".ct-sandwich-view")
    expect(view).to_have_attribute("data-ready", "1")
    assert "sandwich=" in page.url and "prune_symbol=malloc" in page.url
    # under the prune: viewDidLoad holds MessageCell init's 32256 bytes alone
    expect(page.locator(".ct-sandwich-function")).to_contain_text("total 31.50 KiB in 42")
    expect(page.locator(".ct-sandwich-callers")).to_have_attribute("data-nodes", "3")
    expect(page.locator(".ct-sandwich-callees")).to_have_attribute("data-nodes", "2")
    # the callers drawn upward: the function on the bottom row, main on the top one
    rows = page.evaluate(
        "(vdl) => { const f = document.querySelector('.ct-sandwich-callers').memdashFlame;"
        " return [f.boxOf('main').depth, f.boxOf(vdl).depth]; }",
        VDL,
    )
    assert rows == [0, 2]
    # the same callers and callees as a CSV file, under the same rules
    csv = page.locator(".ct-sandwich-csv")
    expect(csv).to_be_visible()
    href = csv.get_attribute("href")
    assert "/calltree/sandwich.csv?" in href and "prune_symbol=malloc" in href
    text = page.evaluate("(url) => fetch(url).then((r) => r.text())", href)
    assert "callee,1,'-[MessageCell init]" in text and "malloc" not in text.split("\n", 2)[2]

    # the permalink opens the same view; the chip takes the prune back
    page.reload()
    expect(view).to_have_attribute("data-ready", "1")
    page.get_by_role("button", name="Tree", exact=True).click()
    page.locator(".ct-focus .ct-chip").click()
    expect(page.locator(".ct-status")).to_contain_text("52.98 KiB in 160 allocations")
    assert "prune_symbol" not in page.url
