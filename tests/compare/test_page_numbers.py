"""The diff pages print counts with thousands separators and times since launch as the
generations page does (00:01.000, not 1000 ms)."""

from __future__ import annotations

import re

import pytest

from tests.compare.helpers import document, row, store

pytestmark = pytest.mark.django_db

# 1,200 Cache before the first mark, 2,345 Cell in Launch (at 0 ms), 7 Old in Open (1,000 ms)
ROWS = [
    row("Cache", 2, None, 1_200, 120_000),
    row("Cell", 3, 0, 2_345, 150_080),
    row("Old", 1, 1, 7, 224),
]


def cells(html: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", html)]


def test_generation_diff_prints_times_and_counts(member_client, app, upload):
    sid = store(upload, document(ROWS))
    # Launch against the baseline before it
    response = member_client.get(f"/apps/{app.pk}/snapshots/{sid}/generation-diff/?target=0")
    html = response.content.decode()
    generations = html[html.index('<table class="generations">') : html.index("</table>")]
    assert [c for c in cells(generations) if c != "diff with the previous"] == [
        "Launch", "00:00.000", "146.56 KiB", "2,345",
        "Open", "00:01.000", "224 Bytes", "7",
        "Idle", "00:02.000", "0 Bytes", "0",
    ]  # fmt: skip
    assert " ms<" not in html
    # the cards: 1,200 allocations before the first mark, 2,345 in Launch
    assert "1,200 allocations" in html and "2,345 allocations" in html
    table = html[html.index('id="diff-table"') :]
    counts = {c[0]: c[6:8] for c in _rows(table)}
    assert counts == {"Cell": ["0", "2,345"], "Cache": ["1,200", "0"]}
    # the category that went to nothing is a row of its own, -100 %; a new one has no %
    percent = {c[0]: (c[1], c[5]) for c in _rows(table)}
    assert percent == {"Cell": ("new", "–"), "Cache": ("gone", "-100%")}
    # one snapshot a side: nothing tested, nothing coloured as growth or shrinkage
    assert 'class="num grow"' not in table and 'class="num shrink"' not in table
    assert 'badge untested">gone' in table


def _rows(html: str) -> list[list[str]]:
    body = html[: html.index("</table>")]
    return [cells(r) for r in re.findall(r"<tr class=\"status-.*?</tr>", body, re.S)]
