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
