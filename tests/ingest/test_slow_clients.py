"""A slow client holds a thread of gunicorn, not a worker: served with memdash's gunicorn settings
(`memdash/gunicorn_conf.py`: threaded workers), a single worker answers the login page while two
clients trickle upload bodies into it, and then receives both uploads. (With gunicorn's default
sync workers the login page waited for a trickle to end: `bench/slow_clients.py`.)

gunicorn runs as a real process on the test run's database (tests/ingest/live_database.py)."""

from __future__ import annotations

import sys

import orjson
import pytest

from memdash.core.writes import apps as core_services
from tests.ingest.live_database import ROOT, publish, wait_for
from tests.samples import spec_example

sys.path.insert(0, str(ROOT / "bench"))
from slow_clients import CONFIG, Trickle, get, serve  # noqa: E402

pytestmark = pytest.mark.slow  # a gunicorn process

# Two captures (two devices), a byte every 0.1 s: the trickles would take 80 s to end by
# themselves.
BODIES = [
    orjson.dumps(spec_example(device={"id": name, "model": "iPhone14,5"})).ljust(800)
    for name in ("SLOW-1", "SLOW-2")
]


def keys_in_use(live) -> int:
    """Ingest keys whose first use is recorded: their upload has reached its view, which then
    reads the body."""
    sql = 'SELECT COUNT(*) FROM "core_ingestkey" WHERE last_used_at IS NOT NULL'
    return live.query(sql)[0][0]


@pytest.mark.django_db(transaction=True)
def test_the_login_page_answers_while_two_uploads_trickle_in(app, tmp_path):
    secrets = [core_services.create_ingest_key(app)[1] for _ in range(2)]
    live = publish(tmp_path)
    env = {**live.env, "MEMDASH_WEB_WORKERS": "1", "MEMDASH_WEB_THREADS": "3"}
    with serve(env, ["-c", CONFIG], tmp_path / "gunicorn.log") as port:
        trickles = [
            Trickle(port, secret, body) for secret, body in zip(secrets, BODIES, strict=True)
        ]
        wait_for(lambda: keys_in_use(live) == 2, 60, "both uploads to reach their view")

        assert get(port, "/login/") == 200
        # Answered while both bodies were still coming in, on the one worker they were held by.
        assert not any(trickle.ended.is_set() for trickle in trickles)
        assert all(0 < trickle.sent < len(trickle.body) for trickle in trickles)

        assert [trickle.finish() for trickle in trickles] == [202, 202]  # both received, queued
    assert live.count("ingest_upload") == 2
