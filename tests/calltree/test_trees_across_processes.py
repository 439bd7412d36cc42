"""A tree too large for a request is built by a worker process and answered by the web processes,
as production runs them: gunicorn (memdash/gunicorn_conf.py, two processes) and `db_worker` on
the test run's database, with database tasks. The tree reaches the web processes through the
shared cache: the database (`memdash_cache`) without Redis, Redis with REDIS_URL (when set).
The same request twice, to either process, queues one task; once the worker built the tree
(and made its Top Functions), both processes answer it.

The expected tree is the inverted one of tests/calltree/conftest.tree_doc, worked out by hand
in test_calltree_tasks (INVERTED).
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request

import orjson
import pytest

from memdash.core.writes import apps as core_services
from tests.calltree.test_calltree_tasks import INVERTED, summary
from tests.ingest.live_database import ROOT, publish

sys.path.insert(0, str(ROOT / "bench"))
from slow_clients import CONFIG, serve  # noqa: E402

pytestmark = pytest.mark.slow  # gunicorn and db_worker processes

CACHES = ["database"] + (["redis"] if os.environ.get("REDIS_URL") else [])


def api(port: int, path: str, token: str) -> tuple[int, dict]:
    call = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        headers={"Authorization": f"Token {token}", "Connection": "close"},
    )
    try:
        with urllib.request.urlopen(call, timeout=60) as answer:  # noqa: S310 (local)
            return int(answer.status), orjson.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), orjson.loads(exc.read())


@pytest.mark.parametrize("shared", CACHES)
@pytest.mark.django_db(transaction=True)
def test_a_workers_tree_is_answered_by_every_web_process(
    shared, member, tree_snapshot_id, tmp_path
):
    _, token = core_services.create_api_token(member)
    env = {"MEMDASH_TREE_INLINE_ROWS": "4", "REDIS_URL": ""}
    if shared == "redis":
        env["REDIS_URL"] = os.environ["REDIS_URL"]
    live = publish(tmp_path, **env)
    path = f"/api/v1/snapshots/{tree_snapshot_id}/calltree?inverted=1"
    top = f"/api/v1/snapshots/{tree_snapshot_id}/calltree/functions?category=Malloc+48+Bytes"
    with serve(
        {**live.env, "MEMDASH_WEB_WORKERS": "2"}, ["-c", CONFIG], tmp_path / "g.log"
    ) as port:
        asked = [api(port, p, token) for p in (path, top) for _ in range(6)]  # own connections
        assert {status for status, _ in asked} == {202}
        assert asked[0][1]["url"] == path
        tasks = 'SELECT COUNT(*) FROM "django_tasks_database_dbtaskresult" WHERE task_path = %s'
        # one for the tree, one for the Top Functions (which builds the tree they are made of)
        assert live.query(tasks, "memdash.allocations.tasks.build_call_tree_job")[0][0] == 2

        live.run("db_worker", "--batch", "--no-reload", "--no-startup-delay")
        answers = [api(port, path, token) for _ in range(6)]
        tops = [api(port, top, token) for _ in range(6)]
    assert {status for status, _ in answers + tops} == {200}
    assert all(summary(body) == INVERTED for _, body in answers)
    # Malloc 48 Bytes' functions by self bytes: its rows r2, r3 (malloc) and r4 (Chat + 0x1a2b)
    assert all(
        [(f["symbol"], f["self_bytes"]) for f in body["functions"][:2]]
        == [("malloc", 5520), ("Chat + 0x1a2b", 96)]
        for _, body in tops
    )
