"""Durations as people read them (FOOM runs' active time): one formatter, and its filter."""

from __future__ import annotations

import pytest
from django.template import Context, Template

from memdash.core.logic.units import format_duration


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (None, ""),
        (0, "0 ms"),
        (780, "780 ms"),
        (999, "999 ms"),
        (1000, "1 s"),
        (1500, "1.5 s"),
        (9999, "9.9 s"),  # cut, not rounded up to "10 s"
        (41_000, "41 s"),
        (60_000, "1 min"),
        (1_061_000, "17 min 41 s"),  # the FOOM page's "active for 1,061,000 ms"
        (3_600_000, "1 h"),
        (7_500_000, "2 h 5 min"),  # 2 h = 7,200,000 ms, then 300,000 ms = 5 min
        (86_400_000 * 3 + 3_600_000 * 4 + 59_000, "3 d 4 h"),
        (-1_061_000, "-17 min 41 s"),
    ],
)
def test_format_duration(ms, text):
    assert format_duration(ms) == text


def test_duration_filter():
    template = Template("{% load memdash %}[{{ a|duration }}][{{ b|duration }}][{{ c|duration }}]")
    assert template.render(Context({"a": 1_061_000, "b": None, "c": ""})) == "[17 min 41 s][][]"
