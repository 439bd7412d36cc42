"""The browser prints bytes as the server does: static/js/units.js (used by both trees, a module
imported here as the pages import it) against memdash.core.logic.units.format_bytes, ties of two
decimals included (1152 bytes = 1.125 KiB, which JavaScript's toFixed alone would round up to 1.13
and Python rounds to even, 1.12)."""

from __future__ import annotations

import pytest

from memdash.core.logic.units import format_bytes

pytestmark = pytest.mark.browser

SIZES = [0, 48, 1023, 1023.7, 1024, 1152, 1180, 1536, 1024**2 - 1, 1024**2, 1024**3, -1152, 1323.9]


# the module's exports, applied to the arguments in the page
APPLY = "async ([name, args]) => (await import('/static/js/units.js'))[name](...args)"


def test_format_bytes_in_the_browser_is_the_servers(browser, live_server):
    page = browser.new_page()
    page.goto(live_server.url + "/static/js/units.js")  # the server's origin: it may import it
    printed = [page.evaluate(APPLY, ["formatBytes", [size]]) for size in SIZES]
    assert printed == [format_bytes(size) for size in SIZES]
    assert printed[5] == "1.12 KiB" and printed[6] == "1.15 KiB"  # 1180 / 1024 = 1.1523…
    assert page.evaluate(APPLY, ["formatCount", [-1323.94]]) == "-1,323.9"
