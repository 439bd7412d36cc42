"""The diff call tree of two builds: each node's median per snapshot (the mean beside it), under
the category, lifespan, Invert Call Tree and Hide System Libraries, with library names; worked
out by hand."""

from __future__ import annotations

import pytest

from tests.compare.helpers import document, store

pytestmark = pytest.mark.django_db

IMAGES = [{"name": "Chat"}, {"name": "libsystem_malloc.dylib", "system": True}]
FRAMES = [
    {"symbol": "main", "image": 0},  # 0
    {"symbol": "-[Feed load]", "image": 0},  # 1
    {"symbol": "-[Cache store]", "image": 0},  # 2
    {"symbol": "malloc", "image": 1},  # 3: a system library's
    {"symbol": "-[Cell init]", "image": 0},  # 4
]
# outermost first: main > Feed > Cache store > malloc; main > Feed > Cell init
STACKS = [[None, 0], [0, 1], [1, 2], [2, 3], [1, 4]]


def alloc(category: str, stack: int, count: int, size: int, freed: int = 0) -> dict:
    return {
        "category": category, "stack": stack, "generation": None, "persistent": count,
        "persistent_bytes": size, "transient": freed, "transient_bytes": 10 * freed,
    }  # fmt: skip


# Per snapshot: (Cache count, bytes), (Cell count, bytes). Cache is allocated by malloc under
# -[Cache store]; Cell by -[Cell init] itself. Cell's objects get fewer and larger: its bytes
# grow while its count falls.
BASE = [((1, 100), (5, 50)), ((1, 100), (5, 50)), ((7, 700), (5, 50))]
TARGET = [((2, 200), (1, 60)), ((3, 300), (1, 60)), ((2, 250), (1, 60))]


def store_builds(upload) -> None:
    """Build 1.0 (1) of BASE's three snapshots, 2.0 (2) of TARGET's."""
    for version, snapshots in (("1.0", BASE), ("2.0", TARGET)):
        for i, ((cache_n, cache_b), (cell_n, cell_b)) in enumerate(snapshots):
            doc = document(
                [alloc("Cache", 3, cache_n, cache_b, freed=1), alloc("Cell", 4, cell_n, cell_b)],
                version=version, number=version[0], device=f"{version}-{i}", generations=[],
            )  # fmt: skip
            doc.update(images=IMAGES, frames=FRAMES, stacks=STACKS)
            store(upload, doc)


@pytest.fixture
def builds(upload):
    store_builds(upload)


def level(api_client, app, node=None, **params) -> list[dict]:
    query = {"base": "build:1.0:1", "target": "build:2.0:2", "app": app.pk, **params}
    if node is not None:
        query["node"] = node
    response = api_client.get("/api/v1/diff/calltree", query)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["statistic"] == "median per snapshot"
    return body["nodes"]


def figures(node: dict) -> tuple:
    return (node["symbol"], node["base_bytes"], node["target_bytes"], node["delta_bytes"],
            node["delta_count"], node["status"])  # fmt: skip


def test_a_builds_node_is_its_median_per_snapshot(api_client, app, builds):
    (main,) = level(api_client, app)
    # main holds both: base 150, 150, 750 -> median 150 (mean 350); target 260, 360, 310 ->
    # median 310 (mean 310). The median grew by 160, the mean fell by 40; counts 6, 6, 12 ->
    # median 6, target 3, 4, 3 -> 3. Three snapshots a side cannot show much: the rank test on
    # the bytes (pooled ranks 1.5, 1.5, 3, 4, 5, 6; the base's sum 9) gives p = 0.6 (12 of 20
    # splits as far from the mean), so "changed", not grown (issue 34: only significant changes
    # are called grown or shrunk and coloured)
    assert figures(main) == ("main", 150, 310, 160, -3, "changed")
    assert (main["p_value"], main["significant"]) == (0.6, False)
    assert (main["base_mean_bytes"], main["target_mean_bytes"], main["delta_mean_bytes"]) == (
        350, 310, -40,
    )  # fmt: skip
    assert (main["image"], main["system"], main["base_present"]) == ("Chat", False, 3)
    (feed,) = level(api_client, app, main["id"])
    cache, cell = level(api_client, app, feed["id"])
    # Cache store: 100, 100, 700 -> 100; 200, 300, 250 -> 250: +150 first, then Cell +10
    assert figures(cache) == ("-[Cache store]", 100, 250, 150, 1, "changed")
    # Cell: the bytes grew (50 -> 60) and the count fell (5 -> 1): each delta its own sign.
    # 50 x3 against 60 x3, fully apart: 2 of the 20 splits as extreme, p = 0.1: changed
    assert figures(cell) == ("-[Cell init]", 50, 60, 10, -4, "changed")
    assert cell["p_value"] == 0.1
    (malloc,) = level(api_client, app, cache["id"])
    assert (malloc["symbol"], malloc["image"], malloc["system"]) == (
        "malloc", "libsystem_malloc.dylib", True,
    )  # fmt: skip


def test_the_category_and_lifespan_choose_the_allocations(api_client, app, builds):
    (main,) = level(api_client, app, category="Cell")
    # only Cell: 50 x3 -> 60 x3
    assert figures(main) == ("main", 50, 60, 10, -4, "changed")  # p = 0.1, as Cell's
    (freed,) = level(api_client, app, lifespan="transient")
    # only what was freed: one 10-byte Cache allocation a snapshot on both sides
    assert figures(freed) == ("main", 10, 10, 0, 0, "same")
    assert level(api_client, app, category="Nothing") == []


def test_invert_and_hide_system_libraries(api_client, app, builds):
    sites = level(api_client, app, inverted="1")
    # the allocation sites are the roots: malloc (Cache's) and -[Cell init]
    assert [figures(n) for n in sites] == [
        ("malloc", 100, 250, 150, 1, "changed"),  # p = 0.6 and 0.1, as in the plain tree
        ("-[Cell init]", 50, 60, 10, -4, "changed"),
    ]
    assert sites[0]["id"].startswith("p")  # a frame path, the same in both builds
    (caller,) = level(api_client, app, sites[0]["id"], inverted="1")
    assert caller["symbol"] == "-[Cache store]"
    # without system libraries, malloc's allocations count in its app caller
    hidden = level(api_client, app, inverted="1", hide_system="1")
    assert [(n["symbol"], n["image"]) for n in hidden] == [
        ("-[Cache store]", "Chat"), ("-[Cell init]", "Chat"),
    ]  # fmt: skip
    (main,) = level(api_client, app, hide_system="1")
    (feed,) = level(api_client, app, main["id"], hide_system="1")
    cache, _ = level(api_client, app, feed["id"], hide_system="1")
    assert cache["symbol"] == "-[Cache store]" and cache["has_children"] is False


def test_involves_symbol_and_flatten_recursion(api_client, app, builds):
    # only the stacks through a frame with "cell" in it: Cell's 50 x3 -> 60 x3, as category=Cell
    (main,) = level(api_client, app, search="CELL")
    assert figures(main) == ("main", 50, 60, 10, -4, "changed") and main["match"] is False
    (feed,) = level(api_client, app, main["id"], search="CELL")
    (cell,) = level(api_client, app, feed["id"], search="CELL")
    assert (cell["symbol"], cell["match"]) == ("-[Cell init]", True)
    assert level(api_client, app, search="nowhere") == []
    # no frame recurs here: flattened, the tree has the same figures
    (flat,) = level(api_client, app, flatten="1")
    assert figures(flat) == ("main", 150, 310, 160, -3, "changed")


def test_bad_options_are_400(api_client, app, builds):
    query = {"base": "build:1.0:1", "target": "build:2.0:2", "app": app.pk}
    bad_ones = ({"inverted": "maybe"}, {"hide_system": "2"}, {"flatten": "x"})
    for bad in bad_ones:
        response = api_client.get("/api/v1/diff/calltree", {**query, **bad})
        assert response.status_code == 400, bad
    # a node id no tree has (any text is one the schema allows): not there
    assert api_client.get("/api/v1/diff/calltree", {**query, "node": "p!"}).status_code == 404
    response = api_client.get("/api/v1/diff/calltree", {**query, "search": "x" * 201})
    assert response.status_code == 400 and "search" in response.json()["fields"]
