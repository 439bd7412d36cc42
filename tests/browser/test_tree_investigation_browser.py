"""The investigation path on a call tree (the snapshot of tests/calltree/conftest.tree_doc:
main 37872 > UIApplicationMain > -[ChatVC viewDidLoad] 37776 > -[MessageCell init] 32256 and
malloc 5520; UIApplicationMain > Chat + 0x1a2b 96; (no stack) 16384): search, the keyboard, a
permalink of the opened path, the flame graph."""

from __future__ import annotations

import pytest

from tests.calltree.conftest import tree_doc

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VDL, UIAPP = "-[ChatVC viewDidLoad]", "UIApplicationMain"


def open_tree(upload, member, logged_in_page, query=""):
    response = upload(tree_doc())
    assert response.json()["status"] == "done", response.json()
    snapshot_id = response.json()["snapshot"]["id"]
    page = logged_in_page(member)
    page.goto(f"/snapshots/{snapshot_id}/calltree/{query}")
    page.wait_for_selector("#calltree[data-ready='1']")
    return page, snapshot_id


def node(page, symbol):
    """The tree node whose own row shows `symbol`."""
    row = page.locator(".ct-node > .ct-row", has=page.locator(".ct-symbol", has_text=symbol))
    return row.first.locator("xpath=..")


def focused_symbol(page):
    return page.evaluate(
        "() => { const n = document.activeElement;"
        " return n && n.getAttribute('role') === 'treeitem'"
        " ? n.querySelector(':scope > .ct-row .ct-symbol').textContent : null; }"
    )


def test_search_opens_and_highlights_the_matching_path(upload, member, logged_in_page):
    from playwright.sync_api import expect

    page, _ = open_tree(upload, member, logged_in_page)
    page.get_by_label("Involves symbol").fill("0x1a2b")
    page.get_by_label("Involves symbol").press("Enter")
    expect(page.locator(".ct-status")).to_contain_text("through “0x1a2b”")
    # only r4's stack goes through Chat + 0x1a2b: main > UIApplicationMain > Chat + 0x1a2b, 96 B
    match = node(page, "Chat + 0x1a2b")
    expect(match).to_be_visible()
    expect(match).to_have_class("ct-node ct-frame ct-match")
    expect(match).to_have_attribute("aria-selected", "true")
    expect(node(page, "main")).to_have_attribute("aria-expanded", "true")
    expect(node(page, UIAPP)).to_have_attribute("aria-expanded", "true")
    expect(page.locator(".ct-node.ct-match")).to_have_count(1)
    expect(page.locator(".ct-roots > .ct-node > .ct-row .ct-bytes")).to_have_text(["96 Bytes"])
    expect(page.locator(".ct-symbol", has_text=VDL)).to_have_count(0)  # not through a match
    assert "search=0x1a2b" in page.url


def test_keyboard_moves_opens_and_closes(upload, member, logged_in_page):
    from playwright.sync_api import expect

    page, _ = open_tree(upload, member, logged_in_page)
    # the heaviest path is open: main > UIApplicationMain > viewDidLoad > (MessageCell, malloc)
    expect(page.locator("[role=treeitem][tabindex='0']")).to_have_count(1)  # one tab stop
    node(page, "main").locator(":scope > .ct-row .ct-symbol").click()
    assert focused_symbol(page) == "main"
    expect(node(page, "main")).to_have_attribute("aria-level", "1")
    page.keyboard.press("ArrowDown")
    assert focused_symbol(page) == UIAPP
    uiapp = node(page, UIAPP)
    expect(uiapp).to_have_attribute("aria-selected", "true")
    expect(uiapp).to_have_attribute("aria-level", "2")
    expect(uiapp).to_have_attribute("tabindex", "0")
    expect(node(page, "main")).to_have_attribute("tabindex", "-1")
    page.keyboard.press("ArrowLeft")  # open: closes
    expect(uiapp).to_have_attribute("aria-expanded", "false")
    page.keyboard.press("ArrowDown")  # its children are hidden: the next is (no stack)
    assert focused_symbol(page) == "(no stack)"
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowRight")  # closed: opens
    expect(uiapp).to_have_attribute("aria-expanded", "true")
    assert focused_symbol(page) == UIAPP
    page.keyboard.press("ArrowRight")  # open: to its first child
    assert focused_symbol(page) == VDL
    page.keyboard.press("Enter")  # activates: closes it
    expect(node(page, VDL)).to_have_attribute("aria-expanded", "false")
    page.keyboard.press("Enter")
    expect(node(page, VDL)).to_have_attribute("aria-expanded", "true")
    page.keyboard.press("ArrowDown")
    assert focused_symbol(page) == "-[MessageCell init]"
    page.keyboard.press("ArrowLeft")  # a leaf: to its parent
    assert focused_symbol(page) == VDL
    page.keyboard.press("End")
    assert focused_symbol(page) == "(no stack)"
    page.keyboard.press("Home")
    assert focused_symbol(page) == "main"
    expect(page.locator("[role=treeitem][aria-selected=true]")).to_have_count(1)


def test_permalink_restores_the_opened_path_and_the_selection(upload, member, logged_in_page):
    from playwright.sync_api import expect

    page, _ = open_tree(upload, member, logged_in_page)
    vdl = node(page, VDL)
    vdl.locator(":scope > .ct-row .ct-toggle").click()  # close viewDidLoad
    expect(vdl).to_have_attribute("aria-expanded", "false")
    node(page, "Chat + 0x1a2b").locator(":scope > .ct-row .ct-symbol").click()
    chat_id = node(page, "Chat + 0x1a2b").get_attribute("data-id")
    page.wait_for_function(f"() => location.hash.includes('sel={chat_id}')")
    assert "open=" in page.url
    page.reload()
    page.wait_for_selector("#calltree[data-ready='1']")
    # without the permalink the heaviest path would open viewDidLoad again
    expect(node(page, UIAPP)).to_have_attribute("aria-expanded", "true")
    expect(node(page, VDL)).to_have_attribute("aria-expanded", "false")
    expect(page.locator(".ct-symbol", has_text="-[MessageCell init]")).to_be_hidden()
    expect(node(page, "Chat + 0x1a2b")).to_have_attribute("aria-selected", "true")
    expect(node(page, "Chat + 0x1a2b")).to_have_attribute("tabindex", "0")


def box(page, label):
    """Where flame.js drew the node of this label (CSS pixels in its element), or None."""
    return page.evaluate(
        "(label) => document.querySelector('.ct-flame').memdashFlame.boxOf(label)", label
    )


def test_flame_graph_shows_the_tree_and_focuses_on_a_click(upload, member, logged_in_page):
    from playwright.sync_api import expect

    page, snapshot_id = open_tree(upload, member, logged_in_page)
    page.get_by_role("button", name="Flame graph").click()
    flame = page.locator(".ct-flame")
    expect(flame).to_have_attribute("data-ready", "1")
    assert "view=flame" in page.url
    # every node drawn: the top, main, UIApplicationMain, viewDidLoad, MessageCell, malloc,
    # Chat + 0x1a2b, (no stack)
    expect(flame).to_have_attribute("data-nodes", "8")
    expect(flame.locator("canvas")).to_be_visible()
    top, main, nostack = box(page, "All allocations"), box(page, "main"), box(page, "(no stack)")
    width = flame.bounding_box()["width"]
    assert (top["depth"], top["x"], round(top["width"])) == (0, 0, round(width))
    # main, the heaviest child: 37872 of 54256 bytes, at the left under the top
    assert (main["depth"], main["x"]) == (1, 0)
    assert abs(main["width"] / width - 37872 / 54256) < 0.001
    assert abs(nostack["width"] / width - 16384 / 54256) < 0.001 and nostack["x"] > main["x"]

    vdl = box(page, VDL)
    assert vdl["depth"] == 3
    frame = flame.locator("canvas").bounding_box()
    page.mouse.move(frame["x"] + vdl["x"] + vdl["width"] / 2, frame["y"] + vdl["y"] + 10)
    expect(page.locator(".ct-flame .flame-tip")).to_contain_text(VDL)
    page.mouse.click(frame["x"] + vdl["x"] + vdl["width"] / 2, frame["y"] + vdl["y"] + 10)
    page.wait_for_url("**focus=*")
    # the path from the root stays above it: All allocations, main, UIApplicationMain, then
    # viewDidLoad, MessageCell init, malloc
    expect(flame).to_have_attribute("data-nodes", "6")
    focused = box(page, VDL)
    assert (focused["depth"], round(focused["width"])) == (3, round(width))
    caller = box(page, UIAPP)
    assert (caller["depth"], round(caller["width"])) == (2, round(width))
    page.mouse.move(frame["x"] + caller["x"] + 20, frame["y"] + caller["y"] + 10)
    expect(page.locator(".ct-flame .flame-tip")).to_contain_text("36.98 KiB")  # its own 37872 bytes
    expect(page.locator(".ct-focus")).to_contain_text("Focused on")
    # the tree is focused as well
    page.get_by_role("button", name="Tree", exact=True).click()
    expect(page.locator(".ct-roots > .ct-node > .ct-row .ct-symbol")).to_have_text([VDL])
