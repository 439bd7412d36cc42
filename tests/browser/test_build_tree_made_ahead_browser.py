"""A build's call tree page read from the tree made ahead (the build of
tests/snapshots/test_build_trees_made_ahead): it says so, draws the medians per snapshot
(main 5036 B = 4.92 KiB over the three snapshots), its flame graph and Top Functions, at 1400 px
and at 390 px without scrolling sideways. With MEMDASH_SCREENSHOTS=<dir> it saves what it saw."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from memdash.allocations.writes.build_trees import refresh_build_trees
from memdash.core.models import Build
from tests.compare.helpers import document, store
from tests.snapshots.test_build_tree_filters import SNAPSHOTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROOTS = "#calltree .ct-roots > .ct-node"


def shot(page, name: str) -> None:
    folder = os.environ.get("MEMDASH_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


@pytest.mark.parametrize("width", [1400, 390])
def test_build_tree_made_ahead_page(settings, upload, app, member, logged_in_page, width):
    from playwright.sync_api import expect

    settings.MEMDASH_TREE_INLINE_ROWS = 0  # a large build: its trees are made ahead
    for i, (trigger, model, os_name, rows) in enumerate(SNAPSHOTS):
        doc = document(rows, device=f"D-{i}", model=model, os=os_name, trigger=trigger,
                       generations=[], captured_at=f"2026-11-2{i}T10:00:00Z")  # fmt: skip
        store(upload, doc)
    build = Build.objects.get(version="1.0")
    refresh_build_trees(build)

    page = logged_in_page(member)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"/apps/{app.pk}/builds/{build.pk}/calltree/")
    expect(page.locator("#tree-made-ahead")).to_contain_text(
        "from the allocation rows of 3 of 3 snapshots"
    )
    expect(page.locator("#calltree")).to_have_attribute("data-ready", "1")
    expect(page.locator(f"{ROOTS} > .ct-row .ct-symbol")).to_have_text(["main"])
    expect(page.locator(f"{ROOTS} > .ct-row .ct-bytes")).to_have_text(["4.92 KiB"])
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    shot(page, f"build-tree-made-ahead-{width}")

    page.locator('button[data-view="flame"]').click()
    flame = page.locator(".ct-flame")
    expect(flame).to_be_visible()
    # All allocations, main, -[Feed load], -[Cache store], -[Cell init]: the medians
    expect(flame).to_have_attribute("aria-label", re.compile("All allocations: 5 nodes"))
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    shot(page, f"build-flame-made-ahead-{width}")

    page.locator('button[data-view="functions"]').click()
    expect(page.locator(".ct-functions")).to_contain_text("-[Cell init]")
    shot(page, f"build-functions-made-ahead-{width}")
