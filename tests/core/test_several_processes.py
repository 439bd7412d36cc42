"""Throttles and quotas with REDIS_URL, as production runs them: several gunicorn processes
(memdash/gunicorn_conf.py, three workers) on the test run's database, every request on a
connection of its own so that the kernel hands them to any of the processes. One key's quota
holds across the processes, its refusals are counted on the key (no upload row each), and a
client address locked out by failed tokens in one process is locked out in all of them.

Needs the Redis of REDIS_URL (CI runs these tests with it; without it they are skipped, or fail
with MEMDASH_REQUIRE_REDIS=1): without Redis each process counts alone, as docs/scaling.md says.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request

import pytest

from memdash.core.models import Membership
from memdash.core.writes import apps as core_services
from tests.ingest.live_database import ROOT, publish

sys.path.insert(0, str(ROOT / "bench"))
from slow_clients import CONFIG, serve  # noqa: E402

REDIS_URL = os.environ.get("REDIS_URL", "")
if not REDIS_URL and os.environ.get("MEMDASH_REQUIRE_REDIS"):
    pytest.fail("REDIS_URL is not set, and MEMDASH_REQUIRE_REDIS asks for these tests")
pytestmark = [
    pytest.mark.slow,  # gunicorn processes
    pytest.mark.skipif(not REDIS_URL, reason="REDIS_URL is not set"),
    pytest.mark.django_db(transaction=True),
]
PROCESSES = 3
# gunicorn's access log: the process that answered, and the status.
ACCESS = ["--access-logfile", "-", "--access-logformat", "%(p)s %(s)s %(U)s"]


def request(port: int, path: str, headers: dict[str, str], body: bytes | None = None) -> int:
    """The status of one request on a connection of its own."""
    call = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=body,
        headers={**headers, "Connection": "close", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(call, timeout=60) as answer:  # noqa: S310 (local)
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def answering_processes(log: str, path: str) -> set[str]:
    return {line.split()[0] for line in log.splitlines() if line.endswith(f" {path}")}


@pytest.fixture
def server(tmp_path):
    def start(**env: str):
        live = publish(tmp_path, REDIS_URL=REDIS_URL, **env)
        server_env = {**live.env, "MEMDASH_WEB_WORKERS": str(PROCESSES)}
        return live, serve(server_env, ["-c", CONFIG, *ACCESS], tmp_path / "gunicorn.log")

    return start


def test_one_keys_quota_holds_across_processes_and_refusals_make_no_rows(app, tmp_path, server):
    quota, sent = 5, 40
    key, secret = core_services.create_ingest_key(app)
    live, serving = server(MEMDASH_UPLOADS_PER_KEY_PER_MINUTE=str(quota))
    with serving as port:
        statuses = [
            request(port, "/api/v1/uploads", {"Authorization": f"Bearer {secret}"},
                    b'{"n": %d}' % n)  # each its own body (queued: 202; no worker runs)
            for n in range(sent)
        ]  # fmt: skip
    assert statuses == [202] * quota + [429] * (sent - quota)
    log = (tmp_path / "gunicorn.log").read_text()
    assert len(answering_processes(log, "/api/v1/uploads")) >= 2, log  # the quota was shared
    assert live.count("ingest_upload") == quota  # the refused ones are not uploads
    over, last = live.query(
        'SELECT over_quota, last_over_quota_at FROM "core_ingestkey" WHERE id = %s', key.pk
    )[0]
    assert over == sent - quota and last is not None


def test_a_lockout_by_failed_tokens_holds_in_every_process(app, member, tmp_path, server):
    core_services.add_member(app, member, Membership.ADMIN)
    _, right = core_services.create_api_token(member)
    _, serving = server(MEMDASH_AUTH_FAILURE_LIMIT="3", MEMDASH_AUTH_LOCKOUT_SECONDS="900")
    with serving as port:
        wrong = [request(port, "/api/v1/apps", {"Authorization": "Token mdt_wrong"})
                 for _ in range(30)]  # fmt: skip
        # The right token from the locked-out address, asked of every process in turn.
        right_answers = [
            request(port, "/api/v1/apps", {"Authorization": f"Token {right}"}) for _ in range(12)
        ]
    assert wrong == [401] * 3 + [429] * 27
    assert right_answers == [429] * 12
    log = (tmp_path / "gunicorn.log").read_text()
    assert len(answering_processes(log, "/api/v1/apps")) >= 2, log
