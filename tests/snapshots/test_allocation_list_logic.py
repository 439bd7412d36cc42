"""The Allocations List's cursors and keyset conditions (allocations.logic.listing), pure."""

from __future__ import annotations

import pytest

from memdash.allocations.logic.callers import callers_of_nodes
from memdash.allocations.logic.listing import (
    Cursor,
    decode_cursor,
    encode_cursor,
    fits,
    keyset_condition,
    order_clause,
)


@pytest.mark.parametrize(
    ("cursor", "text"),
    [
        (Cursor(4194304, 17, 1), "4194304.17.1"),
        (Cursor(-1, 0, 0), "-1.0.0"),
        (Cursor("messagecell", 3, 0), "tbWVzc2FnZWNlbGw.3.0"),  # base64url of the UTF-8
        (Cursor("", 9, 1), "t.9.1"),
        (Cursor("ünïcode/+?", 2**63 - 1, 1), "tw7xuw69jb2RlLys_." + str(2**63 - 1) + ".1"),
    ],
)
def test_a_cursor_reads_back_as_written(cursor, text):
    assert encode_cursor(cursor) == text
    assert decode_cursor(text) == cursor


@pytest.mark.parametrize(
    "text", ["", "1.2", "1.2.2", "a.1.1", "1.-2.1", f"{2**63}.1.1", f"1.{2**63}.0", "t!.1.1"]
)
def test_what_is_no_cursor(text):
    assert decode_cursor(text) is None


def test_any_base64url_is_a_text_key():
    # not valid base64 (one character too many), bytes that are not UTF-8, a NUL: still a
    # place in the order, never an error
    assert decode_cursor("tQ.1.1") == Cursor("", 1, 1)
    assert decode_cursor("t_w.1.1") == Cursor("\ufffd", 1, 1)
    assert decode_cursor("tAGE.1.0") == Cursor("a", 1, 0)


def test_a_cursor_fits_its_sort():
    assert fits(Cursor(5, 1, 1), "size") and fits(Cursor("x", 1, 1), "caller")
    assert not fits(Cursor("x", 1, 1), "size") and not fits(Cursor(5, 1, 1), "category")


def test_keyset_after_a_cursor():
    sql, params = keyset_condition("e.size", Cursor(100, 7, 1), descending=True)
    assert sql == ("(e.size < %s OR (e.size = %s AND (e.id < %s OR (e.id = %s AND e.live < %s))))")
    assert params == [100, 100, 7, 7, 1]
    assert order_clause("e.size", False) == "e.size ASC, e.id ASC, e.live ASC"


def test_every_nodes_responsible_caller_in_one_pass():
    """Node 1 (frame 10, app) → 2 (frame 20, system) → 3 (frame 30, system): 2 and 3 are
    charged to 1's frame. Node 4 (frame 20, system, a root) → 5 (frame 40, app) → 6 (frame 30,
    system): 4 has no app frame out to its root, 5 and 6 are 5's frame's."""
    parents = {1: None, 2: 1, 3: 2, 4: None, 5: 4, 6: 5}
    frames = {1: 10, 2: 20, 3: 30, 4: 20, 5: 40, 6: 30}
    assert callers_of_nodes(parents, frames, {20, 30}) == {1: 10, 2: 10, 3: 10, 5: 40, 6: 40}
