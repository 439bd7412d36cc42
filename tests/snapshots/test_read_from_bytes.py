"""A snapshot document read straight from its bytes (memdash.allocations.logic.document.raw) is the
snapshot `parse_snapshot` makes of its JSON tree; whatever it does not take (bad values, the
events shape, rows it cannot split) it leaves to that generic way, which names the error."""

from __future__ import annotations

import numpy as np
import orjson
import pytest

from memdash.allocations.logic.document import raw as document_raw
from memdash.allocations.logic.document.parse import parse_snapshot
from memdash.allocations.logic.document.raw import read_snapshot
from memdash.core.logic.errors import InvalidUpload
from tests.samples import events_example, spec_example


def assert_same(raw: bytes) -> None:
    fast = read_snapshot(raw)
    slow = parse_snapshot(orjson.loads(raw))
    assert fast is not None
    for name in ("app_id", "platform", "build_version", "captured_at", "session", "trigger"):
        assert getattr(fast, name) == getattr(slow, name), name
    assert (fast.images, fast.frames, fast.threads) == (slow.images, slow.frames, slow.threads)
    assert (fast.stack_parents, fast.stack_frames) == (slow.stack_parents, slow.stack_frames)
    assert fast.generations == slow.generations
    a, b = fast.columns, slow.columns
    assert a.names == b.names
    for name in ("category", "stack", "thread", "generation", "counts"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def many_rows(n: int = 300) -> dict:
    doc = spec_example()
    stacks = len(doc["stacks"])
    doc["allocations"] = [
        {"category": f"C{i % 7}", "stack": i % stacks, "thread": None, "persistent": i,
         "persistent_bytes": 16 * i, **({"generation": 0} if i % 3 else {})}
        for i in range(n)
    ] + [{"category": "C1", "stack": 0, "persistent": 1}] * 3  # fmt: skip
    return doc


def test_the_spec_example_reads_the_same(monkeypatch):
    assert_same(orjson.dumps(spec_example()))
    assert_same(orjson.dumps(many_rows()))
    # Rows decoded a few hundred bytes at a time, and with blanks between them.
    monkeypatch.setattr(document_raw, "CHUNK_BYTES", 200)
    assert_same(orjson.dumps(many_rows()))
    assert_same(orjson.dumps(many_rows(), option=orjson.OPT_INDENT_2))


def test_a_split_inside_a_string_leaves_the_document_to_the_generic_way(monkeypatch):
    doc = many_rows(20)
    doc["allocations"][0]["category"] = "x" * 40 + '},{"category":"y'
    raw = orjson.dumps(doc)
    assert_same(raw)  # whole, it reads
    monkeypatch.setattr(document_raw, "CHUNK_BYTES", 20)  # the first split falls in the name
    assert read_snapshot(raw) is None
    slow = parse_snapshot(orjson.loads(raw))  # the generic way reads it all the same
    assert slow.columns is not None and slow.columns.names[0] == doc["allocations"][0]["category"]


@pytest.mark.parametrize(
    "change",
    [
        {"persistent": "12"},
        {"persistent": 1.0},
        {"persistent": True},
        {"transient_bytes": -1},
        {"stack": 99},
        {"stack": 4},  # the spec example has 4 stack nodes
        {"stack": -1},
        {"stack": -(2**63)},
        {"generation": 2},  # and 2 generations
        {"thread": 5},
        {"generation": -1},
        {"category": ""},
        {"category": None},
        {"category": "A\x00B"},
    ],
)
def test_bad_rows_are_left_to_the_generic_way(change):
    doc = spec_example()
    doc["allocations"].append({"category": "X", **change})
    assert read_snapshot(orjson.dumps(doc)) is None
    with pytest.raises(InvalidUpload) as error:
        parse_snapshot(doc)
    assert error.value.path.startswith("allocations[4]")


def test_other_documents_are_not_read():
    assert read_snapshot(orjson.dumps(events_example())) is None  # replayed one by one
    assert read_snapshot(b"[1, 2]") is None
    assert read_snapshot(b'{"format": "memdash.snapshot", "version": 1') is None  # cut short
    assert read_snapshot(orjson.dumps(spec_example(format="memdash.sessions"))) is None
    assert read_snapshot(orjson.dumps(spec_example(stacks=[[None, 0], [2, 1], [1, 2]]))) is None
    assert read_snapshot(orjson.dumps(spec_example(version=2))) is None
    for value in (b"1e999", b"18446744073709551616", b"9223372036854775808"):
        big = orjson.dumps(spec_example()).replace(b'"persistent":12', b'"persistent":' + value, 1)
        assert read_snapshot(big) is None


def test_a_key_named_twice_leaves_the_document_to_the_generic_way(monkeypatch):
    """msgspec keeps the last of two values silently: the reader looks for keys named twice
    (the rows a chunk at a time, the rest without them) and leaves such a document to the
    generic way, which refuses it with the key's path (tests/ingest/test_duplicate_keys)."""
    monkeypatch.setattr(document_raw, "CHUNK_BYTES", 200)  # several chunks of rows
    raw = orjson.dumps(many_rows(40))
    assert read_snapshot(raw) is not None
    last = b'"persistent_bytes":624}'  # row 39's, in the last chunk
    assert raw.count(last) == 1
    assert read_snapshot(raw.replace(last, last[:-1] + b',"persistent_bytes":1}')) is None
    in_app = raw.replace(b'"app":{', b'"app":{"platform":"ios",', 1)  # the app's, twice
    assert read_snapshot(in_app) is None
    rows = b'"allocations":[{"category":"C1","persistent":1}],"allocations":'  # the key twice
    assert read_snapshot(raw.replace(b'"allocations":', rows, 1)) is None


def test_rows_are_checked_for_keys_named_twice_however_they_are_written(monkeypatch):
    monkeypatch.setattr(document_raw, "CHUNK_BYTES", 200)
    doc = many_rows(40)
    doc["allocations"][5]["category"] = 'a "quoted" name'  # escapes in its chunk
    raw = orjson.dumps(doc)
    assert_same(raw)
    assert_same(raw.replace(b'"stack":', b'"stack" :'))  # blanks before the colons
    twice = raw.replace(b'"category":"a', b'"thread":null,"thread":1,"category":"a', 1)
    assert read_snapshot(twice) is None
    other_key = raw.replace(b'"category":"C1"', b'"note":1,"category":"C1"', 1)
    assert read_snapshot(other_key) is None  # a key it does not read: the generic way
