"""The diff tree is the same tree widget: the keyboard, a permalink of the opened path, and its
flame graph coloured by change (snapshots of tests/compare/helpers, persistent bytes):

    A: main 1928 > -[Feed load] 1928 > -[Cache store] 1000, -[Cell init] 896; (no stack) 16
    B: main 3896 > -[Feed load] 3896 > -[Cache store] 2000, -[Cell init] 1896
"""

from __future__ import annotations

import pytest

from tests.compare.helpers import SNAPSHOT_A_ROWS, SNAPSHOT_B_ROWS, document, store

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FEED = "-[Feed load]"


def open_diff(upload, app, member, logged_in_page):
    a = store(upload, document(SNAPSHOT_A_ROWS))
    b = store(upload, document(SNAPSHOT_B_ROWS, version="2.0", number="2", device="D-2",
                               generations=[]))  # fmt: skip
    page = logged_in_page(member)
    page.goto(f"/apps/{app.pk}/snapshot-diff/?base={a}&target={b}")
    page.wait_for_selector("#difftree li[data-node] li[data-node] li[data-node]")
    return page


def item(page, symbol):
    row = page.locator(
        "#difftree li[role=treeitem] > .row", has=page.locator(".name", has_text=symbol)
    )
    return row.first.locator("xpath=..")


def focused(page):
    return page.evaluate(
        "() => document.activeElement.querySelector(':scope > .row .name').textContent"
    )


def test_diff_tree_keyboard_and_permalink(upload, app, member, logged_in_page):
    from playwright.sync_api import expect

    page = open_diff(upload, app, member, logged_in_page)
    item(page, "main").locator(":scope > .row .name").click()
    assert focused(page) == "main"
    page.keyboard.press("ArrowDown")
    assert focused(page) == FEED
    expect(item(page, FEED)).to_have_attribute("aria-level", "2")
    page.keyboard.press("ArrowLeft")  # open: closes
    expect(item(page, FEED)).to_have_attribute("aria-expanded", "false")
    page.keyboard.press("ArrowLeft")  # closed: to the parent
    assert focused(page) == "main"
    page.wait_for_function("() => location.hash.includes('sel=')")
    page.reload()
    page.wait_for_selector("#difftree[data-ready='1']")
    # the largest change would open -[Feed load] again: the permalink keeps it closed
    expect(item(page, "main")).to_have_attribute("aria-expanded", "true")
    expect(item(page, FEED)).to_have_attribute("aria-expanded", "false")
    expect(item(page, "main")).to_have_attribute("aria-selected", "true")


def test_diff_flame_graph(upload, app, member, logged_in_page):
    from playwright.sync_api import expect

    page = open_diff(upload, app, member, logged_in_page)
    page.locator(".difftree-bar").get_by_role("button", name="Flame graph").click()
    flame = page.locator(".difftree-flame")
    expect(flame).to_have_attribute("data-ready", "1")
    expect(flame).to_have_attribute("data-nodes", "6")

    def box(label):
        return page.evaluate(
            "(l) => document.querySelector('.difftree-flame').memdashFlame.boxOf(l)", label
        )

    width = flame.bounding_box()["width"]
    main = box("main")
    # main is 3896 wide (B), (no stack) 16 (A): the top is drawn 3912 wide
    assert main["depth"] == 1 and abs(main["width"] / width - 3896 / 3912) < 0.001
    feed = box(FEED)
    canvas = flame.locator("canvas").bounding_box()
    page.mouse.move(canvas["x"] + feed["x"] + 20, canvas["y"] + feed["y"] + 10)
    expect(page.locator(".flame-tip")).to_contain_text("Δ +1.92 KiB")  # 3896 - 1928 = 1968
    page.mouse.click(canvas["x"] + feed["x"] + 20, canvas["y"] + feed["y"] + 10)
    # Feed, Cache, Cell below the path from the root (All allocations, main), Feed as wide as
    # the graph
    expect(flame).to_have_attribute("data-nodes", "5")
    assert box(FEED)["depth"] == 2 and abs(box(FEED)["width"] / width - 1) < 0.001
    assert box("main")["depth"] == 1
    expect(page.locator(".difftree-focus")).to_contain_text("Focused on -[Feed load]")
    top = box("All allocations")
    page.mouse.click(canvas["x"] + top["x"] + 20, canvas["y"] + top["y"] + 10)  # the whole
    expect(flame).to_have_attribute("data-nodes", "6")
    expect(page.locator(".difftree-focus")).to_have_text("")


def test_diff_tree_search(upload, app, member, logged_in_page):
    """Involves symbol: only the stacks through -[Cell init] — A's Cell rows (640 + 256 = 896
    bytes), B's Cell and New rows on that stack (896 + 1000 = 1896): main +1000 Bytes, no
    -[Cache store] and no (no stack); the match is marked, the search goes in the address."""
    from playwright.sync_api import expect

    page = open_diff(upload, app, member, logged_in_page)
    search = page.locator(".difftree-bar .difftree-search")
    expect(search).to_be_visible()
    search.fill("cell i")
    expect(page.locator("#difftree .row.match .name")).to_have_text(["-[Cell init]"])
    expect(item(page, "main").locator(":scope > .row .delta").first).to_have_text("+1000 Bytes")
    expect(page.locator("#difftree .name", has_text="-[Cache store]")).to_have_count(0)
    expect(page.locator("#difftree .name", has_text="(no stack)")).to_have_count(0)
    assert "search=cell+i" in page.url
    page.reload()  # a permalink searches again
    expect(search).to_have_value("cell i")
    expect(page.locator("#difftree .row.match .name")).to_have_text(["-[Cell init]"])
    search.fill("")
    expect(page.locator("#difftree .name", has_text="-[Cache store]")).to_have_count(1)
    assert "search=" not in page.url
