"""The browser prints bytes as the server does: static/js/units.js (used by both trees) against
memdash.core.logic.units.format_bytes, ties of two decimals included (1152 bytes = 1.125 KiB, which
JavaScript's toFixed alone would round up to 1.13 and Python rounds to even, 1.12)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdash.core.logic.units import format_bytes

pytestmark = pytest.mark.browser

UNITS_JS = Path(__file__).resolve().parents[2] / "static" / "js" / "units.js"
SIZES = [0, 48, 1023, 1023.7, 1024, 1152, 1180, 1536, 1024**2 - 1, 1024**2, 1024**3, -1152, 1323.9]


def test_format_bytes_in_the_browser_is_the_servers(browser):
    page = browser.new_page()
    page.add_script_tag(path=str(UNITS_JS))
    printed = page.evaluate("sizes => sizes.map(window.memdashUnits.formatBytes)", SIZES)
    assert printed == [format_bytes(size) for size in SIZES]
    assert printed[5] == "1.12 KiB" and printed[6] == "1.15 KiB"  # 1180 / 1024 = 1.1523…
    assert page.evaluate("window.memdashUnits.formatCount(-1323.94)") == "-1,323.9"
