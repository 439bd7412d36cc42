"""How many SQL queries the call trees cost, on the snapshot of `conftest.tree_doc` and on deeper
ones: a level of the stored tree (the children of one node, with their frames and whether they
have children) is one query, the heaviest path below the roots one more whatever its depth, and a
tree built on demand three (rows, stack paths, frames) before it is cached.

Requests go through a signed-in browser session as the page's script sends them, so every budget
is SESSION (the session and its user) plus what the view itself reads, written out each time.
"""

from __future__ import annotations

import pytest

from memdash.allocations.models import Snapshot
from memdash.allocations.reads.calltree.trees import (
    CallTreeQuery,
    build_call_tree_for,
    snapshot_call_tree,
)
from memdash.core.models import Build
from tests.calltree.conftest import tree_doc

pytestmark = pytest.mark.django_db

SESSION = 2  # django_session and auth_user, for every request of a signed-in browser
SNAPSHOT = 1  # the snapshot, its app and build in one query (snapshot_for_user)
COMPUTE = 3  # a tree built on demand: allocation rows, stack paths, frames
DEPTH = 40


def get(client, url: str, params: dict | None = None) -> dict:
    response = client.get(url, params or {})
    assert response.status_code == 200, response.content
    return response.json()


def deep_doc() -> dict:
    """A chain of DEPTH frames f0 > f1 > … (an app's deepest stacks are this deep and more),
    with a side branch `g<i>` at every level so each level has two children: 10 bytes allocated
    in each f<i> but the innermost (100), 1 byte in each g<i>; the heaviest path is the whole
    chain, and inverted, the innermost frame's callers."""
    doc = tree_doc()
    doc["build"] = {"version": "9.0.0", "number": "1"}
    doc["frames"] = [f"f{i}" for i in range(DEPTH)] + [f"g{i}" for i in range(DEPTH)]
    chain = [[None if i == 0 else i - 1, i] for i in range(DEPTH)]
    side = [[i - 1, DEPTH + i] for i in range(1, DEPTH)]
    doc["stacks"] = chain + side
    doc["generations"] = []
    doc["allocations"] = [
        {
            "category": "Chain",
            "stack": i,
            "persistent": 1,
            "persistent_bytes": 100 if i == DEPTH - 1 else 10,
        }
        for i in range(DEPTH)
    ] + [
        {"category": "Side", "stack": DEPTH + i - 1, "persistent": 1, "persistent_bytes": 1}
        for i in range(1, DEPTH)
    ]
    return doc


@pytest.fixture
def deep_snapshot_id(upload) -> int:
    response = upload(deep_doc())
    assert response.json()["status"] == "done", response.json()
    return response.json()["snapshot"]["id"]


# --- the stored (default) tree ------------------------------------------------------------------


def test_page_reads_the_snapshot_and_its_generations(
    member_client, tree_snapshot_id, django_assert_max_num_queries
):
    url = f"/snapshots/{tree_snapshot_id}/calltree/"
    with django_assert_max_num_queries(SESSION + SNAPSHOT + 2):  # + baseline sums, generations
        assert member_client.get(url).status_code == 200
    # A generation given is checked against the snapshot's (one more query).
    with django_assert_max_num_queries(SESSION + SNAPSHOT + 1 + 2):
        assert member_client.get(url, {"generation": "1"}).status_code == 200


def test_roots_with_the_heaviest_path_opened(
    member_client, tree_snapshot_id, django_assert_max_num_queries
):
    url = f"/api/v1/snapshots/{tree_snapshot_id}/calltree"
    # The roots (one query), then main > UIApplicationMain > viewDidLoad > MessageCell (one).
    with django_assert_max_num_queries(SESSION + SNAPSHOT + 2):
        data = get(member_client, url, {"expand": "heaviest", "limit": "100"})
    assert len(data["heaviest"]) == 3  # 4 levels opened in all, with the roots


def test_the_depth_of_the_heaviest_path_costs_nothing(
    member_client, deep_snapshot_id, django_assert_max_num_queries
):
    url = f"/api/v1/snapshots/{deep_snapshot_id}/calltree"
    with django_assert_max_num_queries(SESSION + SNAPSHOT + 2):
        data = get(member_client, url, {"expand": "heaviest"})
    levels = data["heaviest"]
    assert [lvl["children"][0]["symbol"] for lvl in levels] == [f"f{i}" for i in range(1, DEPTH)]
    # f1 holds f1..f38 (10 bytes each), f39 (100) and g2..g39 (1 each)
    assert levels[0]["children"][0]["bytes"] == 10 * (DEPTH - 2) + 100 + (DEPTH - 2)
    assert [c["symbol"] for c in levels[0]["children"]] == ["f1", "g1"]
    assert levels[0]["total"] == 2 and not levels[-1]["children"][0]["has_children"]


def test_one_level_is_one_query(member_client, tree_snapshot_id, django_assert_max_num_queries):
    url = f"/api/v1/snapshots/{tree_snapshot_id}/calltree"
    main = get(member_client, url)["children"][0]["id"]
    with django_assert_max_num_queries(SESSION + SNAPSHOT + 1):
        data = get(member_client, url, {"node": main})
    assert [c["symbol"] for c in data["children"]] == ["UIApplicationMain"]
    assert data["children"][0]["has_children"]
    with django_assert_max_num_queries(SESSION + SNAPSHOT + 1):
        assert get(member_client, url, {"offset": "1", "limit": "1"})["total"] == 2


def test_a_leaf_and_a_page_past_the_end_cost_at_most_three(
    member_client, tree_snapshot_id, django_assert_max_num_queries
):
    url = f"/api/v1/snapshots/{tree_snapshot_id}/calltree"
    data = get(member_client, url, {"expand": "heaviest"})
    leaf = data["heaviest"][-1]["children"][0]["id"]  # -[MessageCell init]
    main = data["children"][0]["id"]
    with django_assert_max_num_queries(SESSION + SNAPSHOT + 2):  # an empty level: is it a node?
        assert get(member_client, url, {"node": leaf})["children"] == []
    with django_assert_max_num_queries(SESSION + SNAPSHOT + 3):  # empty page, count, node
        past = get(member_client, url, {"node": main, "offset": "5"})
    assert (past["children"], past["total"]) == ([], 1)
    with django_assert_max_num_queries(SESSION + SNAPSHOT + 2):  # empty page, sums of the roots
        past = get(member_client, url, {"offset": "9"})
    assert (past["children"], past["total"]) == ([], 2)


# --- trees built on demand ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [{"inverted": "1"}, {"generation": "1"}, {"category": "Malloc 48 Bytes"}, {"thread": "1"}],
    ids=["inverted", "generation", "category", "thread"],
)
def test_on_demand_trees_cost_three_queries_then_none(
    member_client, tree_snapshot_id, params, django_assert_max_num_queries
):
    url = f"/api/v1/snapshots/{tree_snapshot_id}/calltree"
    check = 1 if "generation" in params else 0  # the generation is one of the snapshot's
    with django_assert_max_num_queries(SESSION + SNAPSHOT + check + COMPUTE):
        data = get(member_client, url, {**params, "expand": "heaviest"})
    assert data["heaviest"]
    node = data["children"][0]["id"]
    with django_assert_max_num_queries(SESSION + SNAPSHOT + check):  # cached from now on
        get(member_client, url, {**params, "node": node})


def test_deep_stacks_are_read_in_one_query(
    member_client, deep_snapshot_id, django_assert_max_num_queries
):
    url = f"/api/v1/snapshots/{deep_snapshot_id}/calltree"
    with django_assert_max_num_queries(SESSION + SNAPSHOT + COMPUTE):  # not one per level
        data = get(member_client, url, {"inverted": "1", "expand": "heaviest"})
    # the heaviest site f39 (100 bytes), then its callers f38 … f0
    assert data["children"][0]["symbol"] == f"f{DEPTH - 1}"
    assert len(data["heaviest"]) == DEPTH - 1


def test_build_tree(member_client, tree_snapshot_id, django_assert_max_num_queries):
    build = Build.objects.get(version="8.1.0", number="300")
    page = f"/apps/{build.app_id}/builds/{build.pk}/calltree/"
    url = f"/api/v1/apps/{build.app_id}/builds/{build.pk}/calltree"
    # app, build, how many snapshots, whether a tree was made ahead (none: a small build)
    with django_assert_max_num_queries(SESSION + 4):
        assert member_client.get(page).status_code == 200
    # app, build, made ahead (none), its snapshots (one query for the cache key and the rows'
    # snapshots), compute; made ahead again (the answer's `made_ahead`)
    with django_assert_max_num_queries(SESSION + 5 + COMPUTE):
        data = get(member_client, url, {"expand": "heaviest"})
    assert len(data["heaviest"]) == 3
    with django_assert_max_num_queries(SESSION + 5):
        get(member_client, url, {"node": data["children"][0]["id"]})


# --- the stored tree reads what the tree built from the rows has --------------------------------


def forest_doc() -> dict:
    """Roots a, b, c, d and allocations without a stack that fall among them differently by
    lifespan (bytes/count; no ties, so both trees order them alike):

        all:        d 2100/21, a 1550/16, b 800/8, (no stack) 600/6, c 300/3
        persistent: a 1550/16, b 800/8, (no stack) 600/6, c 300/3, d 100/1
        transient:  d 2000/20 only
    """
    doc = tree_doc()
    doc["build"] = {"version": "9.1.0", "number": "1"}  # its own build: a tree of one snapshot
    doc["frames"] = ["a", "b", "c", "d", "work", "leaf1", "leaf2"]
    doc["stacks"] = [[None, 0], [None, 1], [None, 2], [None, 3], [0, 4], [4, 5], [4, 6], [1, 5]]
    doc["generations"] = []
    rows = [(5, 10, 1000), (6, 5, 500), (7, 8, 800), (2, 3, 300), (3, 1, 100), (None, 6, 600),
            (4, 1, 50)]  # fmt: skip
    doc["allocations"] = [
        {"category": "X", "persistent": n, "persistent_bytes": b}
        | ({} if stack is None else {"stack": stack})
        for stack, n, b in rows
    ]
    doc["allocations"].append(
        {"category": "Y", "stack": 3, "transient": 20, "transient_bytes": 2000}
    )
    return doc


@pytest.fixture
def forest(upload) -> tuple[Snapshot, Build]:
    response = upload(forest_doc())
    assert response.json()["status"] == "done", response.json()
    snapshot = Snapshot.objects.get(pk=response.json()["snapshot"]["id"])
    return snapshot, snapshot.build


@pytest.mark.parametrize("lifespan", ["all", "persistent", "transient"])
def test_every_page_of_the_roots_places_the_no_stack_node(
    forest, lifespan, django_assert_max_num_queries
):
    snapshot, _ = forest
    full, total = snapshot_call_tree(snapshot, CallTreeQuery(lifespan=lifespan)).children(None)
    expected = {
        "all": ["d", "a", "b", "(no stack)", "c"],
        "persistent": ["a", "b", "(no stack)", "c", "d"],
        "transient": ["d"],
    }[lifespan]
    assert [v.symbol for v in full] == expected and total == len(expected)
    for offset in range(len(full) + 2):
        for limit in range(1, len(full) + 2):
            tree = snapshot_call_tree(snapshot, CallTreeQuery(lifespan=lifespan))
            with django_assert_max_num_queries(2):  # one, and the roots' sums past the end
                page, count = tree.children(None, offset, limit)
            assert (page, count) == (full[offset : offset + limit], total), (offset, limit)


@pytest.mark.parametrize("lifespan", ["all", "persistent", "transient"])
def test_stored_tree_equals_the_tree_built_from_the_rows(forest, lifespan):
    snapshot, build = forest
    stored = snapshot_call_tree(snapshot, CallTreeQuery(lifespan=lifespan))
    built = build_call_tree_for(build, CallTreeQuery(lifespan=lifespan))
    assert (stored.total_bytes, stored.total_count) == (built.total_bytes, built.total_count)
    pending: list[str | None] = [None]
    while pending:
        node = pending.pop()
        assert stored.children(node) == built.children(node), node
        if node is not None:
            assert stored.node(node) == built.node(node), node
        pending += [v.id for v in stored.children(node)[0] if v.has_children]
    for limit in (1, 2, 100):
        assert stored.heaviest_pages(limit) == built.heaviest_pages(limit)
    assert stored.heaviest_path() == built.heaviest_path()
    for unknown in ("12345", "garbage", str(2**64), str(-(2**63) - 1)):
        assert stored.children(unknown) is None and stored.node(unknown) is None, unknown
