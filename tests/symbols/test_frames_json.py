"""The JSON of trees and tables says of each frame whether it is named, its file and line, and
whether it is an inlined call: the stored tree, the trees built on demand (inverted, by
generation, a build's), and the statistics table's responsible caller. Expected names and lines
are llvm-symbolizer's (tests/data/symbols/expected.json)."""

from __future__ import annotations

import pytest

from tests.symbols.documents import DECODE, by_address, by_name
from tests.symbols.helpers import ELF, symbolizer_frames
from tests.symbols.test_symbolication import post_debug_file, stored

FIELDS = ("symbol", "image", "symbolicated", "file", "line", "inlined")


def frame(view: dict) -> tuple:
    return tuple(view[k] for k in FIELDS)


def path(api_client, url: str, **params: str) -> list[tuple]:
    """From the heaviest root with a frame (the snapshot's stackless VM row is heavier), down
    the heaviest child, as (symbol, image, symbolicated, file, line, inlined)."""
    roots = api_client.get(url, params).json()["children"]
    view = next(v for v in roots if v["kind"] == "frame")
    views = [view]
    while view["has_children"]:
        view = api_client.get(url, {**params, "node": view["id"], "limit": 1}).json()["children"][0]
        views.append(view)
    return [frame(v) for v in views]


def located(offset: int, depth: int = 0) -> tuple[str, str, int | None]:
    """(function, file, line) llvm-symbolizer gives at an offset of chat_cache.elf, outermost
    first; `depth` 1 is the call inlined there."""
    return symbolizer_frames("chat_cache.elf", offset)[depth]


@pytest.mark.django_db
def test_tree_and_table_frames_before_and_after_naming(
    client, api_client, app, ingest_secret, upload, django_capture_on_commit_callbacks
):
    snapshot = stored(upload, by_address())
    tree_url = f"/api/v1/snapshots/{snapshot.pk}/calltree"
    before = path(api_client, tree_url)
    # Unnamed frames keep `image + 0xoffset`, without a location.
    assert before[0] == ("chat_cache.elf + 0x11be", "chat_cache.elf", False, "", None, False)
    stats = api_client.get(f"/api/v1/snapshots/{snapshot.pk}/statistics").json()
    caller = {r["category"]: r for r in stats["rows"]}["Malloc 64 Bytes"]
    assert caller["responsible_caller"] == "chat_cache.elf + 0x116d"
    assert caller["responsible_frame"] == {
        "image": "chat_cache.elf", "system": False, "symbolicated": False, "file": "",
        "line": None, "inlined": False,
    }  # fmt: skip

    post_debug_file(client, app, ingest_secret, ELF, django_capture_on_commit_callbacks)
    main, store_image, decode = located(0x11BE), located(0x119C), located(0x116D)
    scaled_size = located(0x116D, 1)
    assert decode[0] == DECODE and scaled_size[0] == "scaled_size"
    expected = [
        (main[0], "chat_cache.elf", True, main[1], main[2], False),
        (store_image[0], "chat_cache.elf", True, store_image[1], store_image[2], False),
        # decode is one frame for both of its call sites, lines 22 (0x116d) and 24 (0x117d):
        # its file, and no line, as the two disagree.
        (decode[0], "chat_cache.elf", True, decode[1], None, False),
        (scaled_size[0], "chat_cache.elf", True, scaled_size[1], scaled_size[2], True),
        ("malloc", "libc.so.6", True, "", None, False),
    ]
    assert (main[1], main[2], scaled_size[2]) == ("/src/chat_cache.cpp", 38, 15)
    assert (decode[2], located(0x117D)[2]) == (22, 24)
    assert path(api_client, tree_url) == expected  # the stored tree
    # Trees built on demand: by generation (all rows are before the first mark) and a build's.
    assert path(api_client, tree_url, generation="baseline") == expected
    build_url = f"/api/v1/apps/{app.pk}/builds/{snapshot.build_id}/calltree"
    assert path(api_client, build_url) == expected
    # The inverted tree starts at the allocation site and walks out to main.
    inverted = path(api_client, tree_url, inverted="1")
    assert inverted == list(reversed(expected))

    stats = api_client.get(f"/api/v1/snapshots/{snapshot.pk}/statistics").json()
    caller = {r["category"]: r for r in stats["rows"]}["Malloc 64 Bytes"]
    assert caller["responsible_caller"] == "scaled_size"
    assert caller["responsible_frame"] == {
        "image": "chat_cache.elf", "system": False, "symbolicated": True,
        "file": scaled_size[1], "line": scaled_size[2], "inlined": True,
    }  # fmt: skip
    # A category without a stack has no caller, and no frame.
    assert {r["category"]: r for r in stats["rows"]}["VM: Stack"]["responsible_frame"] is None


@pytest.mark.django_db
def test_diff_tree_top_functions_and_flame_columns_say_it_too(
    client, api_client, app, ingest_secret, upload, django_capture_on_commit_callbacks
):
    """Base: the path named on the device (no lines); target: by address, named by the debug
    file. The diff tree (stored and built), Top Functions and both flame graphs show the frames'
    names, files, lines and the inlined call, as the call tree does (llvm-symbolizer's)."""
    base = stored(upload, by_name())
    target = stored(upload, by_address())
    post_debug_file(client, app, ingest_secret, ELF, django_capture_on_commit_callbacks)
    main, store_image = located(0x11BE), located(0x119C)
    decode, scaled_size = located(0x116D), located(0x116D, 1)
    # (symbolicated, file, line, inlined) by symbol; decode's two call sites disagree on the line
    expected = {
        "main": (True, main[1], main[2], False),
        "store_image": (True, store_image[1], store_image[2], False),
        DECODE: (True, decode[1], None, False),
        "scaled_size": (True, scaled_size[1], scaled_size[2], True),
        "malloc": (True, "", None, False),
    }

    def fields(view: dict) -> tuple:
        return (view["symbolicated"], view["file"], view["line"], view["inlined"])

    refs = {"base": f"snapshot:{base.pk}", "target": f"snapshot:{target.pk}", "app": app.pk}
    for extra in ({}, {"category": "Malloc 64 Bytes"}):  # stored totals, and a built tree
        seen = {}
        node = None
        while True:
            params = {**refs, **extra, **({"node": node} if node else {})}
            nodes = api_client.get("/api/v1/diff/calltree", params).json()["nodes"]
            frames = [n for n in nodes if n["symbol"] != "(no stack)"]
            if not frames:
                break
            seen.update({n["symbol"]: fields(n) for n in frames})
            # down the path through scaled_size: main, store_image, decode, scaled_size, malloc
            node = next(n for n in frames if n["symbol"] != "memcpy")["id"]
        # memcpy: decode's other child in the target (libc's, named by the upload itself)
        assert seen == {**expected, "memcpy": (True, "", None, False)}, extra
    no_stack = api_client.get("/api/v1/diff/calltree", refs).json()["nodes"]
    assert fields(next(n for n in no_stack if n["symbol"] == "(no stack)")) == (
        False, "", None, False,
    )  # fmt: skip

    functions = api_client.get(f"/api/v1/snapshots/{target.pk}/calltree/functions").json()
    rows = {f["symbol"]: fields(f) for f in functions["functions"]}
    assert {k: rows[k] for k in expected} == expected
    assert rows["(no stack)"] == (False, "", None, False)

    for url, params in (
        (f"/api/v1/snapshots/{target.pk}/calltree/flame", {}),
        ("/api/v1/diff/flame", refs),
    ):
        data = api_client.get(url, params).json()
        columns = {
            label: (data["symbolicated"][i], data["file"][i], data["line"][i], data["inlined"][i])
            for i, label in enumerate(data["labels"])
        }
        assert {k: columns[k] for k in expected} == expected, url
        assert columns["All allocations"] == (False, "", None, False)
