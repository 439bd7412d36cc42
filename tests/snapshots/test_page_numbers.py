"""The build and generations pages print counts with thousands separators, as the statistics
table does, and offer OS versions in natural order."""

from __future__ import annotations

import re

import pytest

from memdash.core.models import Build
from tests.compare.helpers import document, row, store

pytestmark = pytest.mark.django_db

# Per snapshot: 1,200 Cache before the first mark, 2,345 Cell in Launch (at 0 ms), 7 Old in
# Open (at 1,000 ms): 1,200 + 2,345 + 7 = 3,552 persistent allocations.
ROWS = [
    row("Cache", 2, None, 1_200, 120_000),
    row("Cell", 3, 0, 2_345, 150_080),
    row("Old", 1, 1, 7, 224),
]


@pytest.fixture
def snapshot_ids(upload):
    return [
        store(upload, document(ROWS, device=f"D-{i}", os=os, captured_at=f"2026-11-2{i}T10:00:00Z"))
        for i, os in enumerate(["16.7.10", "17.0", "16.7.2"])
    ]


def cells(html: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", html)]


def test_build_page_counts_and_os_order(member_client, app, snapshot_ids):
    build = Build.objects.get(app=app)
    response = member_client.get(f"/apps/{app.pk}/builds/{build.pk}/")
    assert response.context["oses"] == ["16.7.2", "16.7.10", "17.0"]  # not 16.7.10 first
    html = response.content.decode()
    # each snapshot's # Persistent, and the median per snapshot on its card (3,552 in each of
    # the three), its mean beside it: 3 × 3,552 / 3
    assert cells(html).count("3,552") == 3
    assert re.search(r"# Persistent per snapshot</div><div class=\"value\">3,552<", html)
    assert "median; mean 3,552" in html
    assert "3552" not in html


def test_generations_page_counts(member_client, snapshot_ids):
    html = member_client.get(f"/snapshots/{snapshot_ids[0]}/generations/").content.decode()
    rows = re.findall(r'<summary class="gen-row">(.*?)</summary>', html, re.S)
    spans = [re.findall(r"<span[^>]*>(.*?)</span>", r) for r in rows]
    # name, time since launch, growth (120,000 B = 117.19 KiB; 150,080 B = 146.56 KiB), count
    assert spans == [
        ["Before first mark", "", "117.19 KiB", "1,200"],
        ["Launch", "00:00.000", "146.56 KiB", "2,345"],
        ["Open", "00:01.000", "224 Bytes", "7"],
        ["Idle", "00:02.000", "0 Bytes", "0"],
    ]
    # and in the statistics of each generation: Launch's Cell, 2,345 persistent of 2,345 in all
    launch = html[html.index('data-generation="0"') :]
    assert cells(launch)[:6] == ["All Heap &amp; Anonymous VM", "146.56 KiB", "2,345", "0",
                                 "146.56 KiB", "2,345"]  # fmt: skip
