"""The cluster's nodes changing under load (issue 37, item 4), with real worker processes:

- a third worker added while uploads are stored (`scripts/citus.sh add-worker`:
  `citus_add_node`), and the rebalancer moving shards onto it meanwhile: every upload stored
  once, whole, and the apps' pages answering throughout;
- a worker node restarted while uploads of the apps it holds are being stored: the uploads
  whose transactions it cut are not marked failed; their leases run out, they are queued again
  and stored once.

They change the cluster itself, so they need `scripts/citus.sh`'s settings of the running
cluster (MEMDASH_CITUS_VAR, MEMDASH_CITUS_PORT, as CI exports them) and run alone (`-n 0`):
another test database on the cluster would see the third worker come and go. Skipped without
a cluster, failed under MEMDASH_REQUIRE_CITUS=1."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client

from memdash.core.models import App, Membership
from memdash.core.writes import apps as core_services
from memdash.ingest import tasks
from memdash.ingest.models import Upload
from memdash.ingest.writes import uploads as services
from tests.citus.cluster import require_citus
from tests.ingest.live_database import ROOT, LiveDatabase, Managed, publish, wait_for

sys.path.insert(0, str(ROOT / "bench"))
from generate import Sizes, encode_gzip, snapshot_document  # noqa: E402

pytestmark = pytest.mark.slow  # worker processes, nodes started and stopped

CITUS = ROOT / "scripts" / "citus.sh"
LEASE = 4  # seconds
ROWS = 20_000


@pytest.fixture
def cluster(database_tasks, transactional_db, settings):
    require_citus()
    if not (os.environ.get("MEMDASH_CITUS_VAR") and os.environ.get("MEMDASH_CITUS_PORT")):
        message = "needs MEMDASH_CITUS_VAR and MEMDASH_CITUS_PORT of the running cluster"
        if os.environ.get("MEMDASH_REQUIRE_CITUS"):
            pytest.fail(message)
        pytest.skip(message)
    # the nodes' ports as this database knows them (scripts/citus.sh: worker N on PORT+N)
    return int(os.environ["MEMDASH_CITUS_PORT"])


def citus_sh(*args: str) -> str:
    done = subprocess.run(
        [str(CITUS), *args], env=dict(os.environ), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def fetch(sql: str, *params: object) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or None)
        return cursor.fetchall()


def worker_port_of(app: App) -> int:
    ((port,),) = fetch(
        "SELECT nodeport FROM citus_shards WHERE shardid = "
        "get_shard_id_for_distribution_column('snapshots_snapshot', %s)",
        app.pk,
    )
    return int(port)


def apps_with_a_member(count: int, wanted: Callable[[App], bool]) -> tuple[list[App], Client]:
    """`count` apps that `wanted` accepts (made one after another until there are enough), and a
    client logged in as a member of each."""
    member = get_user_model().objects.create_user("nodes-member", password="nodes-pass-123")
    apps: list[App] = []
    n = 0
    while len(apps) < count:
        n += 1
        app = core_services.get_or_create_app(f"com.example.nodes{n}", "ios", f"Nodes {n}")
        if wanted(app):
            core_services.add_member(app, member, Membership.VIEWER)
            apps.append(app)
        assert n < 200, "no app of the shards wanted"
    client = Client()
    client.force_login(member)
    return apps, client


def queue_uploads(apps: list[App], per_app: int) -> list[int]:
    """`per_app` distinct snapshots of each app received and queued for the workers."""
    ids = []
    for i in range(per_app):
        for app in apps:
            sizes = Sizes(
                rows=ROWS, nodes=2_000, categories=200, seed=100 + i,
                bundle_id=app.bundle_id, device_id=f"NODES-{app.pk}-{i}",
            )  # fmt: skip
            upload, created = services.receive_upload(
                app, [encode_gzip(snapshot_document(sizes))], run=False
            )
            assert created
            tasks.process_upload_task.enqueue(upload.pk)
            ids.append(upload.pk)
    return ids


def workers(live: LiveDatabase, count: int = 2) -> list[Managed]:
    return [
        live.manage("db_worker", "--no-reload", "--no-startup-delay", "--interval", "0.1")
        for _ in range(count)
    ]


def all_done(live: LiveDatabase, ids: list[int]) -> bool:
    """Every upload finished; on the way, those of workers taken for dead queued again (as an
    operator's `requeue_uploads` by cron does, once the queue has nothing left to pass it)."""
    statuses = dict(live.query('SELECT id, status FROM "ingest_upload" WHERE id = ANY(%s)', ids))
    if all(statuses[i] in (Upload.DONE, Upload.FAILED, Upload.REJECTED) for i in ids):
        return True
    stale = live.query(
        'SELECT count(*) FROM "ingest_upload" WHERE id = ANY(%s) AND status = %s '
        "AND lease_until < now()",
        ids, Upload.PROCESSING,
    )  # fmt: skip
    if stale[0][0]:
        live.run("requeue_uploads")
    return False


def assert_stored_once(live: LiveDatabase, ids: list[int]) -> list[int]:
    """Each upload done, with one snapshot of all its rows; no snapshot of any upload twice.
    Answers each upload's claims (attempts)."""
    rows = live.query(
        'SELECT u.id, u.status, u.attempts, count(s.id), min(s.row_count) FROM "ingest_upload" u '
        'LEFT JOIN "snapshots_snapshot" s ON s.upload_id = u.id AND s.app_id = u.app_id '
        "WHERE u.id = ANY(%s) GROUP BY u.id, u.status, u.attempts ORDER BY u.id",
        ids,
    )
    assert [(r[0], r[1], r[3], r[4]) for r in rows] == [(i, "done", 1, ROWS) for i in ids]
    # the rows themselves, counted where they are: each snapshot's ROWS, none more
    stored = live.query(
        "SELECT s.upload_id, count(r.id) FROM snapshots_snapshot s JOIN snapshots_allocationrow r "
        "ON r.snapshot_id = s.id AND r.app_id = s.app_id WHERE s.upload_id = ANY(%s) "
        "GROUP BY s.upload_id ORDER BY s.upload_id",
        ids,
    )
    assert stored == [(i, ROWS) for i in ids]
    return [r[2] for r in rows]


def test_a_third_worker_added_while_uploads_run_loses_and_doubles_nothing(cluster, tmp_path):
    port = cluster
    apps, client = apps_with_a_member(4, lambda app: True)
    pages = [f"/apps/{app.pk}/" for app in apps]
    ids = queue_uploads(apps, per_app=4)
    live = publish(tmp_path, MEMDASH_UPLOAD_LEASE_SECONDS="600")
    running = workers(live)
    added = False
    try:
        wait_for(lambda: all_done(live, ids[:2]), 300, "the first uploads")
        citus_sh("add-worker")
        added = True
        fetch("SELECT citus_rebalance_start(shard_transfer_mode := 'block_writes')")
        answered = 0
        while fetch("SELECT state FROM citus_rebalance_status() ORDER BY job_id DESC LIMIT 1")[0][
            0
        ] not in ("finished", "failed", "cancelled"):
            for page in pages:  # read while shards move: every page answers
                assert client.get(page).status_code == 200, page
                answered += 1
            time.sleep(0.2)
        assert fetch("SELECT state FROM citus_rebalance_status() ORDER BY job_id DESC LIMIT 1") == [
            ("finished",)
        ]
        # the shards of the distributed tables spread over the three workers
        ((on_third,),) = fetch(
            "SELECT count(*) FROM citus_shards WHERE nodeport = %s AND citus_table_type = "
            "'distributed'",
            port + 3,
        )
        wait_for(lambda: all_done(live, ids), 600, "every upload")
    finally:
        for worker in running:
            worker.kill()
        if added:  # the cluster as it was, for the tests after: its shards back on the others
            citus_sh("remove-worker")
    assert answered >= len(pages)
    assert on_third > 0
    assert_stored_once(live, ids)
    for page in pages:
        assert client.get(page).status_code == 200, page


def test_a_worker_restarted_mid_load_leaves_its_uploads_to_their_leases(cluster, tmp_path):
    port = cluster
    # Apps whose shards are on worker 1: every upload's transaction writes there.
    apps, _client = apps_with_a_member(2, lambda app: worker_port_of(app) == port + 1)
    ids = queue_uploads(apps, per_app=4)
    live = publish(tmp_path, MEMDASH_UPLOAD_LEASE_SECONDS=str(LEASE))
    running = workers(live)
    try:
        copying = (
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND query LIKE 'COPY %%'"
        )
        wait_for(lambda: live.query(copying)[0][0] > 0, 300, "a worker to write rows")
        citus_sh("restart-worker", "1", "2")
        wait_for(lambda: all_done(live, ids), 600, "every upload")
    finally:
        for worker in running:
            worker.kill()
    attempts = assert_stored_once(live, ids)
    # what the restart cut was claimed again once its lease ran out, not failed
    assert max(attempts) >= 2
    logs = "".join(p.read_text() for p in live.logs.glob("db_worker-*.err"))
    assert "the database failed under it; queued again after its lease" in logs
