"""Every row of a small snapshot's statistics, as the API answers them and as the table gives
them to the pages, against rows written out by hand: each key, its order and each value's
JSON type (true, not 1), for a category named with markup, quotes and non-ASCII text, callers
in the app's image with and without a symbol or a source line, and categories without one."""

from __future__ import annotations

import orjson
import pytest

from memdash.allocations.models import Snapshot
from memdash.allocations.reads import snapshots as selectors
from tests.samples import spec_example

pytestmark = pytest.mark.django_db

ODD = "<b>\"Quoted\" & 'apos'</b> — Ωmega ✓ 😀 \\back\tslash"
COMPOSER = '-[Composer <send:"now">]'


def doc() -> dict:
    return spec_example(
        images=[
            {"name": "Chat", "uuid": "6A1F", "load_address": "0x100000000"},
            {"name": "UIKitCore", "system": True},
        ],
        frames=[
            "main",
            {"symbol": "UIApplicationMain", "image": 1},
            {"symbol": COMPOSER, "image": 0, "file": "Composer.m", "line": 42},
            {"image": 0, "address": "0x100001a2c"},  # no symbol: Chat + 0x1a2c
        ],
        # 0 main; 1 main > UIApplicationMain; 2 … > Composer; 3 … > 0x100001a2c;
        # 4 UIApplicationMain alone (only a system frame: no responsible caller)
        stacks=[[None, 0], [0, 1], [1, 2], [1, 3], [None, 1]],
        generations=[{"name": "Open", "at_ms": 0}],
        allocations=[
            {"category": ODD, "stack": 2, "generation": 0, "persistent": 3,
             "persistent_bytes": 300, "transient": 1, "transient_bytes": 100},
            {"category": "Malloc 64 Bytes", "stack": 3, "persistent": 10,
             "persistent_bytes": 640},
            {"category": "VM: IOSurface", "stack": 1, "generation": 0, "persistent": 1,
             "persistent_bytes": 16384, "transient": 2, "transient_bytes": 32768},
            {"category": "CFString", "stack": 4, "persistent": 2, "persistent_bytes": 64},
            {"category": "NSObject", "transient": 5, "transient_bytes": 80},
        ],
    )  # fmt: skip


def row(category, kind, p, pb, t, tb, caller="", frame=None) -> dict:
    return {
        "category": category, "kind": kind, "persistent": p, "persistent_bytes": pb,
        "transient": t, "transient_bytes": tb, "total": p + t, "total_bytes": pb + tb,
        "responsible_caller": caller, "responsible_frame": frame,
    }  # fmt: skip


def frame(image: str, symbolicated: bool, file: str = "", line: int | None = None) -> dict:
    return {"image": image, "system": False, "symbolicated": symbolicated, "file": file,
            "line": line, "inlined": False}  # fmt: skip


# Largest total bytes first: 49152, 640, 400, 80, 64. The VM category's caller skips the system
# UIApplicationMain for main, a string frame (named, in no image).
ROWS = [
    row("VM: IOSurface", "vm", 1, 16384, 2, 32768, "main", frame("", True)),
    row("Malloc 64 Bytes", "heap", 10, 640, 0, 0, "Chat + 0x1a2c", frame("Chat", False)),
    row(ODD, "heap", 3, 300, 1, 100, COMPOSER, frame("Chat", True, "Composer.m", 42)),
    row("NSObject", "heap", 0, 0, 5, 80),
    row("CFString", "heap", 2, 64, 0, 0),
]
# heap: 3+10+2+0 = 15 persistent, 300+640+64 = 1004 bytes; 1+5 = 6 transient, 100+80 = 180.
HEAP = row("All Heap Allocations", "summary", 15, 1004, 6, 180)
VM = row("All Anonymous VM", "summary", 1, 16384, 2, 32768)
BOTH = row("All Heap & Anonymous VM", "summary", 16, 17388, 8, 32948)


def as_json(value) -> bytes:
    """JSON text keeps what == does not: key order, and true apart from 1."""
    return orjson.dumps(value)


@pytest.fixture
def snapshot_id(upload) -> int:
    response = upload(doc())
    assert response.json()["status"] == "done", response.json()
    return response.json()["snapshot"]["id"]


def get(api_client, snapshot_id: int, **params) -> dict:
    response = api_client.get(f"/api/v1/snapshots/{snapshot_id}/statistics", params)
    assert response.status_code == 200, response.content
    return response.json()


def test_every_category_row_by_row(api_client, snapshot_id):
    answer = get(api_client, snapshot_id, limit=10000)
    expected = {
        "summary": [BOTH, HEAP, VM], "count": 5, "offset": 0, "limit": 10000, "next": None,
        "rows": ROWS,
    }  # fmt: skip
    for got, want in zip(answer["rows"], ROWS, strict=True):
        assert as_json(got) == as_json(want)
    assert as_json(answer) == as_json(expected)


def test_the_pages_table_gives_the_same_rows(snapshot_id):
    table = selectors.snapshot_statistics(Snapshot.objects.get(pk=snapshot_id))
    assert as_json(table[0:10]) == as_json(ROWS)
    assert as_json(table[1:3]) == as_json(ROWS[1:3])
    assert table[5:5] == []  # an empty window (the only page of an empty table is one)


def test_a_window_of_rows(api_client, snapshot_id):
    answer = get(api_client, snapshot_id, offset=1, limit=2)
    assert as_json(answer["rows"]) == as_json(ROWS[1:3])
    assert answer["next"].endswith("offset=3")
    assert get(api_client, snapshot_id, offset=9)["rows"] == []


def test_search_by_the_odd_name(api_client, snapshot_id):
    answer = get(api_client, snapshot_id, q="Ωmega ✓ 😀")
    assert as_json(answer["rows"]) == as_json([ROWS[2]])
    assert get(api_client, snapshot_id, q="no such category")["rows"] == []


def test_lifespan_transient_rows(api_client, snapshot_id):
    # persistent counts out: 32768, 100 and 80 transient bytes; Malloc 64 and CFString drop out
    answer = get(api_client, snapshot_id, lifespan="transient")
    assert as_json(answer["rows"]) == as_json(
        [
            row("VM: IOSurface", "vm", 0, 0, 2, 32768, "main", frame("", True)),
            row(ODD, "heap", 0, 0, 1, 100, COMPOSER, frame("Chat", True, "Composer.m", 42)),
            row("NSObject", "heap", 0, 0, 5, 80),
        ]
    )


def test_generation_rows_have_no_callers(api_client, snapshot_id):
    # Responsible callers are found over the whole snapshot only.
    mark = get(api_client, snapshot_id, generation=0)
    assert as_json(mark["rows"]) == as_json(
        [row("VM: IOSurface", "vm", 1, 16384, 2, 32768), row(ODD, "heap", 3, 300, 1, 100)]
    )
    baseline = get(api_client, snapshot_id, generation="baseline")
    assert as_json(baseline["rows"]) == as_json(
        [
            row("Malloc 64 Bytes", "heap", 10, 640, 0, 0),
            row("NSObject", "heap", 0, 0, 5, 80),
            row("CFString", "heap", 2, 64, 0, 0),
        ]
    )
