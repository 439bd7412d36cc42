"""The report page of a valgrind run killed by SIGSEGV (tests/corpus/record_valgrind.sh's
crash.c), at 1400 and 390 px: the signal, where, and whether a leak check ran, inside the page's
width."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdash.leaks.models import LeakReport

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "leaks"


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("valgrind-3.19_crash_no_leak_check.txt", "No leak check ran"),
        ("valgrind-3.19_crash.txt", "valgrind ran its leak check as the process died"),
    ],
)
def test_a_killed_run_says_so_at_both_widths(upload, app, member, logged_in_page, tmp_path,
                                             name, words):  # fmt: skip
    from playwright.sync_api import expect

    body = (SAMPLES / name).read_bytes()
    response = upload(body, content_type="text/plain", query="build_version=1.0")
    assert response.json()["status"] == "done", response.json()
    report = LeakReport.objects.get(app=app)
    page = logged_in_page(member)
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(report.get_absolute_url())
    notice = page.locator("#fatal-signal")
    expect(notice).to_contain_text("The process died of signal 11 (SIGSEGV)")
    expect(notice).to_contain_text(words)
    expect(notice.locator("li").first).to_have_text("write_through crash.c:27")
    page.screenshot(path=str(tmp_path / f"{name}-desktop.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    box = notice.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(tmp_path / f"{name}-phone.png"), full_page=True)
