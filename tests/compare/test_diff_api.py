"""GET /api/v1/diff and /api/v1/diff/calltree over uploaded snapshots, worked out by hand
(the documents are in helpers.py, with their per-generation tables)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.compare.helpers import SNAPSHOT_A_ROWS, SNAPSHOT_B_ROWS, document, store

pytestmark = pytest.mark.django_db


@pytest.fixture
def snapshot_a(upload):
    return store(upload, document(SNAPSHOT_A_ROWS))


@pytest.fixture
def snapshot_b(upload, snapshot_a):
    doc = document(SNAPSHOT_B_ROWS, version="2.0", number="2", device="D-2", generations=[])
    return store(upload, doc)


def diff(api_client, base, target, **params):
    response = api_client.get("/api/v1/diff", {"base": base, "target": target, **params})
    assert response.status_code == 200, response.content
    return response.json()


def short(rows):
    return [(r["category"], r["status"], r["base_bytes"], r["target_bytes"], r["delta_bytes"],
             r["base_count"], r["target_count"], r["delta_count"]) for r in rows]  # fmt: skip


def test_generation_diff(api_client, snapshot_a):
    body = diff(api_client, f"generation:{snapshot_a}:0", f"generation:{snapshot_a}:1")
    # gen 0: Cache 3/300, Cell 10/640, Old 1/32; gen 1: Cache 5/500, Cell 4/256, NoStack 1/16
    assert short(body["rows"]) == [
        ("Cache", "grown", 300, 500, 200, 3, 5, 2),
        ("NoStack", "new", 0, 16, 16, 0, 1, 1),  # only in the target
        ("Old", "gone", 32, 0, -32, 1, 0, -1),  # only in the base
        ("Cell", "shrunk", 640, 256, -384, 10, 4, -6),
    ]
    summary = body["summary"]
    # 300 + 640 + 32 = 972 -> 500 + 256 + 16 = 772; 14 -> 10 allocations
    assert (summary["base_bytes"], summary["target_bytes"], summary["delta_bytes"]) == (
        972,
        772,
        -200,
    )
    assert (summary["base_count"], summary["target_count"]) == (14, 10)
    assert summary["statuses"] == {"new": 1, "gone": 1, "grown": 1, "shrunk": 1, "same": 0}
    assert summary["top_grower"] == "Cache"
    assert summary["lifespan"] == "persistent"
    assert summary["base"]["label"] == f"snapshot #{snapshot_a}, Launch"


def test_generation_with_no_allocations(api_client, snapshot_a):
    # gen 2 "Idle" created nothing: valid and empty, so everything of gen 1 is gone
    body = diff(api_client, f"generation:{snapshot_a}:1", f"generation:{snapshot_a}:2")
    assert short(body["rows"]) == [
        ("NoStack", "gone", 16, 0, -16, 1, 0, -1),
        ("Cell", "gone", 256, 0, -256, 4, 0, -4),
        ("Cache", "gone", 500, 0, -500, 5, 0, -5),
    ]
    assert body["summary"]["target_bytes"] == 0
    empty = diff(api_client, f"generation:{snapshot_a}:2", f"generation:{snapshot_a}:2")
    assert empty["rows"] == [] and empty["summary"]["delta_percent"] is None


def test_baseline_and_lifespans(api_client, snapshot_a):
    # "baseline" (or an empty index) is what was created before the first mark: Cache 2/200
    body = diff(api_client, f"generation:{snapshot_a}:baseline", f"generation:{snapshot_a}:0")
    assert short(body["rows"]) == [
        ("Cell", "new", 0, 640, 640, 0, 10, 10),
        ("Cache", "grown", 200, 300, 100, 2, 3, 1),
        ("Old", "new", 0, 32, 32, 0, 1, 1),
    ]
    same = diff(api_client, f"generation:{snapshot_a}:", f"generation:{snapshot_a}:0")
    assert same["rows"] == body["rows"]
    # all allocations: gen 1 Cache 5 + 2 = 7, 500 + 200 = 700 against gen 0's 3 / 300
    body = diff(api_client, f"generation:{snapshot_a}:0", f"generation:{snapshot_a}:1",
                lifespan="all")  # fmt: skip
    cache = next(r for r in body["rows"] if r["category"] == "Cache")
    assert (cache["target_count"], cache["target_bytes"], cache["delta_bytes"]) == (7, 700, 400)
    # created & destroyed: only Cache had transients in gen 1 (2, 200)
    body = diff(api_client, f"generation:{snapshot_a}:0", f"generation:{snapshot_a}:1",
                lifespan="transient")  # fmt: skip
    assert short(body["rows"]) == [("Cache", "new", 0, 200, 200, 0, 2, 2)]


def test_snapshot_diff(api_client, snapshot_a, snapshot_b):
    # A over all generations: Cache 2+3+5 = 10 / 1000, Cell 14 / 896, Old 1/32, NoStack 1/16
    body = diff(api_client, f"snapshot:{snapshot_a}", f"snapshot:{snapshot_b}")
    assert short(body["rows"]) == [
        ("Cache", "grown", 1000, 2000, 1000, 10, 20, 10),  # ties New on bytes, more objects
        ("New", "new", 0, 1000, 1000, 0, 1, 1),
        ("Cell", "same", 896, 896, 0, 14, 14, 0),
        ("NoStack", "gone", 16, 0, -16, 1, 0, -1),
        ("Old", "gone", 32, 0, -32, 1, 0, -1),
    ]
    # 1944 -> 3896
    assert body["summary"]["delta_bytes"] == 3896 - 1944


def test_build_refs_are_per_snapshot_means(api_client, app, upload, snapshot_a, snapshot_b):
    # a second snapshot of build 2.0 with Cache 40 / 4000 only: build 2.0 per snapshot is
    # Cache (20 + 40) / 2 = 30 / 3000, Cell 14 / 2 = 7 / 448, New 1 / 2 = 0.5 -> 0 (rounded
    # half to even), 1000 / 2 = 500
    cache_only = [{"category": "Cache", "stack": 2, "persistent": 40, "persistent_bytes": 4000}]
    extra = document(cache_only, version="2.0", number="2", device="D-3", generations=[])
    store(upload, extra)
    body = diff(api_client, "build:1.0:1", "build:2.0:2", app=app.pk)
    rows = {r["category"]: r for r in body["rows"]}
    assert (rows["Cache"]["base_bytes"], rows["Cache"]["target_bytes"]) == (1000, 3000)
    assert (rows["Cell"]["target_count"], rows["Cell"]["target_bytes"]) == (7, 448)
    assert (rows["New"]["target_count"], rows["New"]["target_bytes"]) == (0, 500)
    assert body["summary"]["target"]["snapshots"] == 2
    # the version alone is enough when it names one build
    assert diff(api_client, "build:1.0", "build:2.0", app=app.pk)["rows"] == body["rows"]
    # without `app`: the one app of the user's that has the builds (the member has one)
    assert diff(api_client, "build:1.0:1", "build:2.0:2")["rows"] == body["rows"]
    # or the app of the other side, a snapshot of build 1.0 (A: Cache 10 / 1000)
    mixed = diff(api_client, f"snapshot:{snapshot_a}", "build:2.0:2")
    assert {r["category"]: r["target_bytes"] for r in mixed["rows"]}["Cache"] == 3000


def tree(api_client, base, target, node=None, **params):
    query = {"base": base, "target": target, **params}
    if node is not None:
        query["node"] = node
    response = api_client.get("/api/v1/diff/calltree", query)
    assert response.status_code == 200, response.content
    return response.json()


def brief(nodes):
    return [(n["symbol"], n["status"], n["base_bytes"], n["target_bytes"], n["delta_bytes"],
             n["has_children"]) for n in nodes]  # fmt: skip


def test_generation_diff_call_tree(api_client, snapshot_a):
    base, target = f"generation:{snapshot_a}:0", f"generation:{snapshot_a}:1"
    # gen 0 sites: Cache 300, Cell 640, Feed itself (Old) 32 -> main = Feed = 972
    # gen 1 sites: Cache 500, Cell 256 -> main = Feed = 756; NoStack 16 has no stack
    roots = tree(api_client, base, target)
    assert brief(roots["nodes"]) == [
        ("main", "shrunk", 972, 756, -216, True),
        ("(no stack)", "new", 0, 16, 16, False),
    ]
    feed = tree(api_client, base, target, roots["nodes"][0]["id"])["nodes"]
    assert brief(feed) == [("-[Feed load]", "shrunk", 972, 756, -216, True)]
    leaves = tree(api_client, base, target, feed[0]["id"])["nodes"]
    # sorted by the size of the change: Cell -384 before Cache +200
    assert brief(leaves) == [
        ("-[Cell init]", "shrunk", 640, 256, -384, False),
        ("-[Cache store]", "grown", 300, 500, 200, False),
    ]
    assert tree(api_client, base, target, leaves[0]["id"])["nodes"] == []
    # the empty generation: everything gone
    empty = tree(api_client, target, f"generation:{snapshot_a}:2")
    assert brief(empty["nodes"]) == [
        ("main", "gone", 756, 0, -756, True),
        ("(no stack)", "gone", 16, 0, -16, False),
    ]


def test_snapshot_diff_call_tree(api_client, snapshot_a, snapshot_b):
    base, target = f"snapshot:{snapshot_a}", f"snapshot:{snapshot_b}"
    # A: Cache 1000 + Cell 896 + Old 32 = 1928 under main, NoStack 16. B: 2000 + 1896 = 3896
    roots = tree(api_client, base, target)
    assert brief(roots["nodes"]) == [
        ("main", "grown", 1928, 3896, 1968, True),
        ("(no stack)", "gone", 16, 0, -16, False),
    ]
    feed = tree(api_client, base, target, roots["nodes"][0]["id"])["nodes"]
    leaves = tree(api_client, base, target, feed[0]["id"])
    # both +1000; Cache first (+10 objects against Cell's +1: Cell 896 + New 1000)
    assert brief(leaves["nodes"]) == [
        ("-[Cache store]", "grown", 1000, 2000, 1000, False),
        ("-[Cell init]", "grown", 896, 1896, 1000, False),
    ]
    assert leaves["total"] == 2
    page = tree(api_client, base, target, feed[0]["id"], offset=1, limit=1)
    assert [n["symbol"] for n in page["nodes"]] == ["-[Cell init]"] and page["total"] == 2


@pytest.mark.parametrize(
    "params, field",
    [
        ({"base": "snapshot:x", "target": "snapshot:1"}, "ref"),
        ({"base": "heap:1", "target": "snapshot:1"}, "ref"),
        ({"target": "snapshot:1"}, "base"),
        ({"base": "generation:{a}:one", "target": "generation:{a}:1"}, "ref"),
        ({"base": "snapshot:{a}", "target": "snapshot:{a}", "lifespan": "forever"}, "lifespan"),
    ],
)
def test_bad_refs_are_400(api_client, snapshot_a, params, field):
    query = {k: v.replace("{a}", str(snapshot_a)) for k, v in params.items()}
    response = api_client.get("/api/v1/diff", query)
    assert response.status_code == 400, response.content
    assert field in str(response.json())


def test_refs_well_formed_but_naming_nothing_there_are_404(api_client, app, snapshot_a):
    """What the schema allows but names nothing: a 404 saying what is not there, as any id not
    found (a generation the snapshot lacks, a build none of the user's apps has, or several do,
    a snapshot of another app than `app`, a node no tree has)."""
    a = f"snapshot:{snapshot_a}"
    cases = [
        ({"base": f"generation:{snapshot_a}:7", "target": f"generation:{snapshot_a}:1"},
         f"snapshot {snapshot_a} has no generation 7 (3 generations)"),  # helpers.GENERATIONS
        ({"base": "build:1.0:1", "target": "build:9.9:9"}, "No build 9.9:9 in this app"),
        ({"base": "build:9.9:9", "target": "build:1.0:1"},
         "No build 9.9:9 in a single app of yours (name it: app=<id>)"),
        ({"base": a, "target": a, "app": app.pk + 1000}, "No such app"),
    ]  # fmt: skip
    for query, error in cases:
        response = api_client.get("/api/v1/diff", query)
        assert (response.status_code, response.json()["error"]) == (404, error), query
    node = api_client.get("/api/v1/diff/calltree", {"base": a, "target": a, "node": "x"})
    assert node.status_code == 404
    assert node.json() == {"error": "node 'x' is not a call-tree node id", "path": "node"}


def test_outsider_gets_404(snapshot_a, snapshot_b, outsider, outsider_client, app):
    api = APIClient()
    api.force_authenticate(outsider)
    refs = {"base": f"snapshot:{snapshot_a}", "target": f"snapshot:{snapshot_b}"}
    assert api.get("/api/v1/diff", refs).status_code == 404
    assert api.get("/api/v1/diff/calltree", refs).status_code == 404
    builds = {"base": "build:1.0:1", "target": "build:2.0:2", "app": app.pk}
    assert api.get("/api/v1/diff", builds).status_code == 404
    assert (
        api.get(f"/api/v1/apps/{app.pk}/compare", {"base": "1.0:1", "target": "2.0:2"}).status_code
        == 404
    )
    for url in (
        f"/apps/{app.pk}/compare/",
        f"/apps/{app.pk}/trends/",
        f"/apps/{app.pk}/snapshot-diff/?base={snapshot_a}&target={snapshot_b}",
        f"/apps/{app.pk}/snapshots/{snapshot_a}/generation-diff/",
    ):
        assert outsider_client.get(url).status_code == 404, url


def test_anonymous_is_refused(client, snapshot_a, app):
    refs = {"base": f"snapshot:{snapshot_a}", "target": f"snapshot:{snapshot_a}"}
    assert client.get("/api/v1/diff", refs).status_code in (401, 403)
    assert client.get(f"/apps/{app.pk}/compare/").status_code == 302  # to the login page
