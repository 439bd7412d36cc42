"""The diff call tree and its flame graph read each snapshot's call tree: those past the request's
budget of rows (MEMDASH_TREE_INLINE_ROWS, here 4) are built by tasks, all queued by the first
request, and the API answers 202 until a worker built them. The builds of
test_diff_tree_options: three snapshots a build, two allocation rows each; the figures expected
are those worked out by hand in test_diff_tree_options.test_invert_and_hide_system_libraries.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.core.management import call_command
from django_tasks_db.models import DBTaskResult

from tests.compare.test_diff_tree_options import figures, store_builds

pytestmark = pytest.mark.django_db(transaction=True)


def tree_tasks():
    return DBTaskResult.objects.filter(task_path="memdash.allocations.tasks.build_call_tree_job")


def test_the_trees_past_the_budget_are_built_by_a_worker(api_client, app, upload, settings):
    store_builds(upload)
    settings.MEMDASH_TREE_INLINE_ROWS = 4
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    query = {"base": "build:1.0:1", "target": "build:2.0:2", "app": app.pk, "inverted": "1"}
    first = api_client.get("/api/v1/diff/calltree", query)
    assert first.status_code == 202, first.content
    status = first.json()
    assert (
        status.pop("url")
        == first["Location"]
        == first.request["PATH_INFO"] + "?" + urlencode(query)
    )  # this request's own URL: asked again, it answers the tree once built
    assert status == {"state": "queued", "progress": 0.0, "retry_after": 1}
    # 6 trees of 2 rows: the first two (4 rows) were built in the request, 4 are queued
    assert tree_tasks().count() == 4
    flame = api_client.get("/api/v1/diff/flame", query)
    assert (flame.status_code, flame["Retry-After"]) == (202, "1")
    assert tree_tasks().count() == 4  # the same trees: nothing more to queue

    call_command("db_worker", batch=True, no_startup_delay=True, reload=False, verbosity=0)
    done = api_client.get("/api/v1/diff/calltree", query)
    assert done.status_code == 200, done.content
    assert [figures(n) for n in done.json()["nodes"]] == [
        ("malloc", 100, 250, 150, 1, "changed"),  # p = 0.6 and 0.1 (test_diff_tree_options)
        ("-[Cell init]", 50, 60, 10, -4, "changed"),
    ]
    assert api_client.get("/api/v1/diff/flame", query).status_code == 200
    assert tree_tasks().count() == 4
