"""Open a snapshot, click a category, expand call-tree nodes, invert the tree: the right
children appear (the snapshot of tests/calltree/conftest.tree_doc; totals worked out there)."""

from __future__ import annotations

import pytest

from tests.calltree.conftest import tree_doc

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROOTS = "#calltree .ct-roots > .ct-node"


def children_of(page, node_id: str) -> str:
    """Selector of the symbols of a node's direct children."""
    return f'.ct-node[data-id="{node_id}"] > .ct-children > .ct-node > .ct-row .ct-symbol'


def node_id(page, parent: str, symbol: str) -> str:
    """Id of the child of `parent` (a selector of nodes) whose symbol is `symbol`."""
    row = page.locator(f"{parent} > .ct-row", has=page.locator(".ct-symbol", has_text=symbol))
    return row.first.locator("xpath=..").get_attribute("data-id")


def test_click_category_expand_and_invert(upload, member, logged_in_page):
    from playwright.sync_api import expect

    response = upload(tree_doc())
    assert response.json()["status"] == "done", response.json()
    snapshot_id = response.json()["snapshot"]["id"]

    page = logged_in_page(member)
    page.goto(f"/snapshots/{snapshot_id}/")
    page.locator("#statistics a.category", has_text="Malloc 48 Bytes").click()
    page.wait_for_url(f"**/snapshots/{snapshot_id}/calltree/?category_hash=*")  # links by hash
    expect(page.locator(".ct-category")).to_have_text("Malloc 48 Bytes")
    expect(page.locator("#calltree")).to_have_attribute("data-ready", "1")

    # Malloc 48 Bytes: r2+r3+r4 = 5616 bytes, all under main; the heaviest path is open:
    # main > UIApplicationMain > viewDidLoad > malloc.
    expect(page.locator(f"{ROOTS} > .ct-row .ct-symbol")).to_have_text(["main"])
    expect(page.locator(f"{ROOTS} > .ct-row .ct-bytes")).to_have_text(["5.48 KiB"])
    main = node_id(page, ROOTS, "main")
    expect(page.locator(children_of(page, main))).to_have_text(["UIApplicationMain"])
    uiapp = node_id(page, f'.ct-node[data-id="{main}"] > .ct-children > .ct-node',
                    "UIApplicationMain")  # fmt: skip
    expect(page.locator(children_of(page, uiapp))).to_have_text(
        ["-[ChatVC viewDidLoad]", "Chat + 0x1a2b"]
    )
    heavy = page.locator(".ct-node.ct-heavy > .ct-row .ct-symbol")
    expect(heavy).to_have_text(["main", "UIApplicationMain", "-[ChatVC viewDidLoad]", "malloc"])

    # Collapse UIApplicationMain, then expand it again from the toggle.
    uiapp_node = page.locator(f'.ct-node[data-id="{uiapp}"]')
    uiapp_node.locator(":scope > .ct-row .ct-toggle").click()
    expect(uiapp_node).to_have_attribute("aria-expanded", "false")
    expect(page.locator(children_of(page, uiapp)).first).to_be_hidden()
    uiapp_node.locator(":scope > .ct-row .ct-toggle").click()
    expect(uiapp_node).to_have_attribute("aria-expanded", "true")
    expect(page.locator(children_of(page, uiapp)).first).to_be_visible()

    # Invert Call Tree: the allocation sites become the roots.
    page.get_by_label("Invert Call Tree").check()
    expect(page.locator("#calltree")).to_have_attribute("data-ready", "1")
    assert "inverted=1" in page.url
    expect(page.locator(f"{ROOTS} > .ct-row .ct-symbol")).to_have_text(["malloc", "Chat + 0x1a2b"])
    expect(page.locator(f"{ROOTS} > .ct-row .ct-bytes")).to_have_text(
        ["5.39 KiB", "96 Bytes"]  # 5520 and 96 bytes
    )
    # Expand Chat + 0x1a2b by hand: its caller is UIApplicationMain, and that one's is main.
    chat = node_id(page, ROOTS, "Chat + 0x1a2b")
    chat_node = page.locator(f'.ct-node[data-id="{chat}"]')
    expect(chat_node).to_have_attribute("aria-expanded", "false")
    chat_node.locator(":scope > .ct-row .ct-toggle").click()
    expect(page.locator(children_of(page, chat))).to_have_text(["UIApplicationMain"])
    caller = node_id(page, f'.ct-node[data-id="{chat}"] > .ct-children > .ct-node',
                     "UIApplicationMain")  # fmt: skip
    page.locator(f'.ct-node[data-id="{caller}"] > .ct-row .ct-toggle').click()
    expect(page.locator(children_of(page, caller))).to_have_text(["main"])
    expect(
        page.locator(f'.ct-node[data-id="{caller}"] > .ct-children .ct-self-bytes')
    ).to_have_text(["0 Bytes"])
