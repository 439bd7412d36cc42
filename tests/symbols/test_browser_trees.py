"""In a real browser, both trees show a named frame's `file:line` and an inlined call's mark by
its name, from the one helper of static/js/tree.js: the snapshot's call tree and build compare's
diff tree (names, files and lines: llvm-symbolizer's, tests/data/symbols/expected.json)."""

from __future__ import annotations

import pytest

from tests.symbols.documents import by_address, by_name
from tests.symbols.helpers import ELF
from tests.symbols.test_symbolication import post_debug_file, stored

MAIN_AT = "/src/chat_cache.cpp:38"  # main's one call site (0x11be)
SCALED_SIZE_AT = "/src/chat_cache.cpp:15"  # scaled_size, inlined into decode at 0x116d


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_call_tree_and_diff_tree_show_file_line_and_inlined(
    client, logged_in_page, member, app, ingest_secret, upload, django_capture_on_commit_callbacks
):
    stored(upload, by_name("1.0"))
    snapshot = stored(upload, by_address("2.0"))
    post_debug_file(client, app, ingest_secret, ELF, django_capture_on_commit_callbacks)
    page = logged_in_page(member)

    page.goto(f"/snapshots/{snapshot.pk}/calltree/")
    main = page.locator(".ct-node", has=page.locator(".ct-symbol", has_text="main")).first
    main.locator(".ct-file").first.wait_for()
    assert main.locator(".ct-row .ct-file").first.inner_text() == MAIN_AT

    # build compare (1.0 → 2.0) of the category with stacks opens its diff tree down the largest
    # change: main → store_image → decode → scaled_size (+640 bytes, inlined) → malloc
    page.goto(f"/apps/{app.pk}/compare/?category=Malloc+64+Bytes")
    page.wait_for_selector("#difftree li[data-node] li[data-node] li[data-node] li[data-node]")
    rows = page.locator("#difftree .row")
    named = {rows.nth(i).locator(".name").inner_text(): rows.nth(i) for i in range(rows.count())}
    assert named["main"].locator(".frame-note.file").inner_text() == MAIN_AT
    assert named["main"].locator(".frame-note.inlined").count() == 0
    scaled = named["scaled_size"]
    assert scaled.locator(".frame-note.inlined").inner_text() == "inlined"
    assert scaled.locator(".frame-note.file").inner_text() == SCALED_SIZE_AT
    assert scaled.locator(".image").inner_text() == "chat_cache.elf"
    assert SCALED_SIZE_AT in scaled.locator(".name").get_attribute("title")
