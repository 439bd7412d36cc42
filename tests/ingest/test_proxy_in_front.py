"""Slow clients never hold a worker, in the layout docs/scaling.md describes: nginx in front
(`deploy/nginx.conf`, run as it is), gunicorn behind it with memdash's settings, here one
process of two threads. Sixteen clients trickle upload bodies a byte at a time through nginx,
which holds them; meanwhile the login page is answered, and so is a GET for each of gunicorn's
threads many times over, while every trickle is still coming in. Then the trickles finish and
all sixteen uploads are received.

Directly against that gunicorn, two trickles would take both threads and the login page would
wait for one to end (tests/ingest/test_slow_clients.py shows the threads' side of it).
Needs nginx (Debian's `nginx-light`; CI installs it): skipped without it, unless
MEMDASH_REQUIRE_NGINX=1.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from memdash.core.writes import apps as core_services
from tests.ingest.live_database import ROOT, publish, wait_for
from tests.samples import spec_example

sys.path.insert(0, str(ROOT / "bench"))
from slow_clients import CONFIG, Trickle, free_port, get, serve  # noqa: E402

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else "")
if not NGINX and os.environ.get("MEMDASH_REQUIRE_NGINX"):
    pytest.fail("nginx is not installed (apt-get install nginx-light)")
pytestmark = [
    pytest.mark.slow,  # nginx and gunicorn processes
    pytest.mark.skipif(not NGINX, reason="nginx is not installed"),
    pytest.mark.django_db(transaction=True),
]
CLIENTS = 16


def nginx_config(tmp_path: Path, listen: int, upstream: int) -> Path:
    temp = tmp_path / "nginx"
    temp.mkdir()
    text = (ROOT / "deploy/nginx.conf").read_text()
    for word, value in {"@LISTEN@": f"127.0.0.1:{listen}", "@UPSTREAM@": f"127.0.0.1:{upstream}",
                        "@TEMP@": str(temp), "@PID@": str(temp / "nginx.pid")}.items():  # fmt: skip
        text = text.replace(word, value)
    config = temp / "nginx.conf"
    config.write_text(text)
    return config


def test_sixteen_slow_uploads_through_nginx_hold_no_thread(app, tmp_path):
    secret = core_services.create_ingest_key(app)[1]
    live = publish(tmp_path)
    env = {**live.env, "MEMDASH_WEB_WORKERS": "1", "MEMDASH_WEB_THREADS": "2"}
    bodies = [
        orjson.dumps(spec_example(device={"id": f"SLOW-{n}", "model": "iPhone14,5"})).ljust(900)
        for n in range(CLIENTS)
    ]
    with serve(env, ["-c", CONFIG], tmp_path / "gunicorn.log") as upstream:
        port = free_port()
        proxy = subprocess.Popen(
            [NGINX, "-c", str(nginx_config(tmp_path, port, upstream)), "-e", "stderr"],
            stdout=subprocess.DEVNULL, stderr=(tmp_path / "nginx.err").open("w"),
        )  # fmt: skip
        try:
            wait_for(lambda: _answers(port), 30, "nginx")
            trickles = [Trickle(port, secret, body) for body in bodies]
            wait_for(lambda: all(t.sent >= 20 for t in trickles), 60, "the trickles to start")

            answered = [get(port, "/login/") for _ in range(10)]
            assert answered == [200] * 10
            # All while every body was still coming in, and none reached memdash yet.
            assert not any(trickle.ended.is_set() for trickle in trickles)
            assert live.count("ingest_upload") == 0

            assert [trickle.finish() for trickle in trickles] == [202] * CLIENTS
        finally:
            os.kill(proxy.pid, signal.SIGTERM)
            proxy.wait(30)
    assert live.count("ingest_upload") == CLIENTS


def _answers(port: int) -> bool:
    try:
        return get(port, "/login/", timeout=5) == 200
    except OSError:
        time.sleep(0.1)
        return False
