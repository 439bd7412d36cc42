"""Call trees built from more allocation rows than MEMDASH_TREE_INLINE_ROWS are built by a task:
the API answers 202 with the task's state until a worker has put the tree in the cache, then the
tree. Here the limit is 4 rows and the tasks go to the database queue, run by `db_worker`.

The snapshot of conftest.tree_doc has 5 allocation rows (r1..r5); the build of
test_calltree_pages has it and second_doc's 2 (7 rows). The trees expected are those worked out
by hand in test_calltree_api.test_inverted and test_calltree_pages.test_build_tree_adds_up_its_
snapshots; Top Functions of Malloc 48 Bytes from its rows r2, r3 (malloc: 4800 + 720 bytes,
100 + 15 allocations) and r4 (Chat + 0x1a2b: 96 bytes, 2).
"""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django_tasks_db.models import DBTaskResult

from memdash.allocations.logic.calltree.products import TreeProduct
from memdash.allocations.models import Snapshot
from memdash.allocations.reads.calltree.jobs import (
    InlineBudget,
    TreeDeferred,
    TreeJob,
    TreeState,
    write_state,
)
from memdash.allocations.reads.calltree.products import snapshot_product
from memdash.allocations.reads.calltree.query import CallTreeQuery
from memdash.allocations.reads.calltree.trees import snapshot_call_tree
from memdash.allocations.tasks import queue_trees
from memdash.core.models import Build
from tests.calltree.test_calltree_pages import second_doc

pytestmark = pytest.mark.django_db(transaction=True)

CELL = "-[MessageCell init]"
INVERTED = [  # test_calltree_api.test_inverted
    (CELL, 32256, 42),
    ("(no stack)", 16384, 1),
    ("malloc", 5520, 115),
    ("Chat + 0x1a2b", 96, 2),
]


def use_worker(settings) -> None:
    """From now on (the snapshots are stored), trees over 4 rows are queued for a worker."""
    settings.MEMDASH_TREE_INLINE_ROWS = 4
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}


def work() -> None:
    call_command("db_worker", batch=True, no_startup_delay=True, reload=False, verbosity=0)


def tree_tasks():
    return DBTaskResult.objects.filter(task_path="memdash.allocations.tasks.build_call_tree_job")


def summary(data: dict) -> list[tuple]:
    return [(c["symbol"], c["bytes"], c["count"]) for c in data["children"]]


def job_of(snapshot_id: int, query: CallTreeQuery) -> TreeJob:
    """The job a request for this tree queues (a budget of no rows defers any tree not built)."""
    with pytest.raises(TreeDeferred) as deferred:
        snapshot_call_tree(Snapshot.objects.get(pk=snapshot_id), query, budget=InlineBudget(0))
    (job,) = deferred.value.jobs
    return job


def test_a_large_tree_is_answered_202_until_a_worker_built_it(
    api_client, tree_snapshot_id, settings
):
    use_worker(settings)
    url = f"/api/v1/snapshots/{tree_snapshot_id}/calltree"
    first = api_client.get(url, {"inverted": "1"})
    assert first.status_code == 202, first.content
    status_url = f"{url}?inverted=1"  # this request's own, answering the tree once it is built
    assert first.json() == {"state": "queued", "progress": 0.0, "retry_after": 1, "url": status_url}
    assert (first["Retry-After"], first["Location"]) == ("1", status_url)
    # asked again (the page polling, another tab): still the one task for this tree
    again = api_client.get(url, {"inverted": "1", "expand": "heaviest"})
    assert (again.status_code, again.json()["state"]) == (202, "queued")
    assert tree_tasks().count() == 1
    # the stored tree (all categories, not inverted) is read from its stored nodes, at once
    assert api_client.get(url).status_code == 200

    work()
    assert tree_tasks().get().status == "SUCCESSFUL"
    done = api_client.get(url, {"inverted": "1"})
    assert done.status_code == 200, done.content
    assert summary(done.json()) == INVERTED
    assert tree_tasks().count() == 1


def test_flame_graph_top_functions_and_csv_are_made_by_tasks(
    api_client, member_client, tree_snapshot_id, settings
):
    use_worker(settings)
    sid = tree_snapshot_id
    params = {"category": "Malloc 48 Bytes"}
    base = f"/api/v1/snapshots/{sid}/calltree"
    for path in (base + "/flame", base + "/functions", base):
        for _ in range(2):  # asked twice (the page polling, another tab): one job each
            response = api_client.get(path, params)
            assert (response.status_code, response.json()["state"]) == (202, "queued"), path
    csv = member_client.get(f"/snapshots/{sid}/calltree/functions.csv", params)
    assert (csv.status_code, csv["Retry-After"], csv["Content-Type"]) == (202, "1", "text/plain")
    assert csv.content.decode() == "The call tree is being built (0%); download again in a moment."
    # the tree, its flame graph and its Top Functions (the CSV's rows are the same product)
    assert tree_tasks().count() == 3
    assert {tuple(sorted(t.args_kwargs["args"][0]["product"])) for t in tree_tasks()} == {
        (),
        ("focus", "function", "kind", "limit", "order", "search"),
    }

    work()
    assert set(tree_tasks().values_list("status", flat=True)) == {"SUCCESSFUL"}
    functions = api_client.get(base + "/functions", params)
    assert functions.status_code == 200, functions.content
    top = [(f["symbol"], f["self_bytes"], f["self_count"]) for f in functions.json()["functions"]]
    assert top[:2] == [("malloc", 5520, 115), ("Chat + 0x1a2b", 96, 2)]
    assert api_client.get(base + "/flame", params).status_code == 200
    csv = member_client.get(f"/snapshots/{sid}/calltree/functions.csv", params)
    assert csv.status_code == 200
    assert b"malloc,libsystem_malloc.dylib,5520,115" in b"".join(csv.streaming_content)
    assert tree_tasks().count() == 3


def product_job(snapshot_id: int, query: CallTreeQuery, product: TreeProduct) -> TreeJob:
    """The job a request for this product queues (a budget of no rows defers any product)."""
    with pytest.raises(TreeDeferred) as deferred:
        snapshot_product(
            Snapshot.objects.get(pk=snapshot_id), query, product, budget=InlineBudget(0)
        )
    (job,) = deferred.value.jobs
    return job


def test_the_request_reads_the_product_only(api_client, tree_snapshot_id, settings):
    """Once made, a flame graph and Top Functions are answered from their own cache entries:
    the tree may be gone from the cache (the request builds nothing); while they are not made,
    a cached tree is not walked in the request either (a job makes them)."""
    use_worker(settings)
    query = CallTreeQuery(category="Malloc 48 Bytes")
    tree = job_of(tree_snapshot_id, query)
    flame = product_job(tree_snapshot_id, query, TreeProduct("flame"))
    functions = product_job(tree_snapshot_id, query, TreeProduct("functions", order="total"))
    assert len({tree.key, flame.key, functions.key}) == 3
    url = f"/api/v1/snapshots/{tree_snapshot_id}/calltree"
    params = {"category": "Malloc 48 Bytes"}
    assert api_client.get(url, params).status_code == 202
    work()  # the tree is in the cache; its products are not
    assert cache.get(tree.key) is not None
    assert api_client.get(url + "/flame", params).status_code == 202
    assert api_client.get(url + "/functions", {**params, "order": "total"}).status_code == 202
    work()
    cache.delete(tree.key)
    flame_answer = api_client.get(url + "/flame", params)
    assert flame_answer.status_code == 200, flame_answer.content
    # the flame graph of Malloc 48 Bytes: its rows r2, r3, r4 (5520 + 96 bytes) under one top
    assert (flame_answer.json()["ids"][0], flame_answer.json()["values"][0]) == ("~all", 5616)
    by_total = api_client.get(url + "/functions", {**params, "order": "total"}).json()
    assert by_total["functions"][0]["bytes"] == 5616  # main: on every stack of the category
    assert cache.get(tree.key) is None  # neither answer built the tree again
    assert tree_tasks().count() == 3


def test_a_product_of_a_node_the_tree_lacks_is_a_404(api_client, tree_snapshot_id, settings):
    use_worker(settings)
    url = f"/api/v1/snapshots/{tree_snapshot_id}/calltree/functions"
    params = {"category": "Malloc 48 Bytes", "focus": "424242"}
    assert api_client.get(url, params).status_code == 202
    work()
    answer = api_client.get(url, params)
    assert answer.status_code == 404, answer.content
    assert answer.json() == {"error": "no such node to focus on in this call tree"}


def test_a_build_tree_over_its_snapshots_rows(api_client, upload, tree_snapshot_id, settings):
    assert upload(second_doc()).json()["status"] == "done"
    build = Build.objects.get(version="8.1.0", number="300")
    use_worker(settings)
    url = f"/api/v1/apps/{build.app_id}/builds/{build.pk}/calltree"
    # 5 + 2 rows: even the default tree of a build is built from its rows, so queued
    assert api_client.get(url).status_code == 202
    work()
    data = api_client.get(url).json()
    # per snapshot by default (test_calltree_pages works the medians out)
    assert (data["total_bytes"], data["total_count"]) == (51448, 102)
    assert summary(data) == [("main", 35064, 101), ("(no stack)", 16384, 1)]
    # the sum is another tree: queued and built by its own task
    assert api_client.get(url, {"aggregate": "sum"}).status_code == 202
    work()
    data = api_client.get(url, {"aggregate": "sum"}).json()
    assert (data["total_bytes"], data["total_count"]) == (102896, 203)
    assert summary(data) == [("main", 37872 + 32256, 159 + 42), ("(no stack)", 32768, 2)]


def test_with_the_embedded_default_the_task_runs_in_the_request(
    api_client, tree_snapshot_id, settings
):
    settings.MEMDASH_TREE_INLINE_ROWS = 4  # tasks stay "immediate"
    job = job_of(tree_snapshot_id, CallTreeQuery(inverted=True))
    response = api_client.get(f"/api/v1/snapshots/{tree_snapshot_id}/calltree", {"inverted": "1"})
    assert response.status_code == 200, response.content
    assert summary(response.json()) == INVERTED
    assert cache.get(job.key) is not None
    assert queue_trees([job]) == TreeState("done", 1.0)


def test_a_tree_dropped_by_the_cache_is_queued_again(api_client, tree_snapshot_id, settings):
    use_worker(settings)
    url = f"/api/v1/snapshots/{tree_snapshot_id}/calltree"
    job = job_of(tree_snapshot_id, CallTreeQuery(inverted=True))
    assert api_client.get(url, {"inverted": "1"}).status_code == 202
    work()
    assert api_client.get(url, {"inverted": "1"}).status_code == 200
    # the tree's entry expires or is pushed out while its job's state still says done
    cache.delete(job.key)
    assert api_client.get(url, {"inverted": "1"}).status_code == 202
    assert tree_tasks().count() == 2


def test_a_failed_task_is_answered_500_and_not_queued_again_at_once(
    api_client, tree_snapshot_id, settings
):
    use_worker(settings)
    url = f"/api/v1/snapshots/{tree_snapshot_id}/calltree"
    job = job_of(tree_snapshot_id, CallTreeQuery(inverted=True))
    assert api_client.get(url, {"inverted": "1"}).status_code == 202
    Snapshot.objects.filter(pk=tree_snapshot_id).delete()  # gone before a worker got to it
    work()
    state = queue_trees([job])
    assert state == TreeState("failed", 0.0, "the snapshot was deleted")
    assert (state.http_status, state.headers()) == (500, {})
    assert state.as_json() == {
        "state": "failed",
        "progress": 0.0,
        "error": "the call tree could not be built: the snapshot was deleted",
    }
    assert tree_tasks().count() == 1


def test_the_budget_of_a_request():
    budget = InlineBudget(10)
    assert budget.take(6)  # 4 left
    assert not budget.take(5)  # past it: this one is a task's
    assert budget.take(4)
    assert not budget.take(1)


def test_a_running_task_says_how_far_it_is(api_client, tree_snapshot_id, settings):
    use_worker(settings)
    query = CallTreeQuery(inverted=True)
    job = job_of(tree_snapshot_id, query)
    url = f"/api/v1/snapshots/{tree_snapshot_id}/calltree"
    assert api_client.get(url, {"inverted": "1"}).json()["state"] == "queued"
    # the steps a build of the tree goes through, as the task writes them
    steps: list[float] = []
    cache.clear()
    snapshot_call_tree(Snapshot.objects.get(pk=tree_snapshot_id), query, progress=steps.append)
    assert steps == [0.05, 0.5, 0.65, 0.75, 0.95]
    cache.delete(job.key)
    write_state(job.key, "running", 0.65)  # a worker half-way, between two of them
    response = api_client.get(url, {"inverted": "1"})
    assert response.status_code == 202
    assert response.json() == {
        "state": "running",
        "progress": 0.65,
        "retry_after": 1,
        "url": f"{url}?inverted=1",
    }
