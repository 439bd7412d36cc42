"""A delta in a table or a card shows its direction, and a change that rounds to nothing shows
none: `0`, never `-0` or `+0` (a generation diff's category that went from 48 bytes of 1 GiB
to nothing is -0.000004%)."""

from __future__ import annotations

from memdash.compare.templatetags.compare_tags import signed


def test_signed_numbers():
    assert signed(12.34) == "+12.3"
    assert signed(-1234.5) == "-1,234.5"
    assert signed(3) == "+3"
    assert signed(0) == "0"
    assert signed(None) == "–"


def test_a_change_that_rounds_to_nothing_has_no_sign():
    assert signed(-0.04) == "0"  # "-0.0" before
    assert signed(0.04) == "0"  # "+0.0" before
    assert signed(-0.05 - 1e-9) == "-0.1"
