"""gunicorn's settings for memdash's web processes (docs/scaling.md, "Serving"):

    gunicorn -c memdash/gunicorn_conf.py memdash.wsgi

Threaded workers (`gthread`): a request is served by one of a worker's threads, so a client that
trickles its body (a phone uploading over a poor link) holds one thread, and the worker's other
threads go on answering pages. With gunicorn's default sync workers each such client held a whole
worker: two slow uploads left two workers' login page unanswered until they ended. A reverse proxy
that buffers request bodies (nginx's default, `proxy_request_buffering on`) keeps slow clients
away from the workers altogether; the threads are what holds when there is no such proxy, or when
more clients are slow at once than the proxy's buffers absorb.

Each thread keeps its own database connection: workers × threads connections per machine.

Read from the environment:
- `MEMDASH_WEB_BIND` (0.0.0.0:8000): the address to listen on;
- `MEMDASH_WEB_WORKERS` (the number of cores): processes, each with its own memory;
- `MEMDASH_WEB_THREADS` (8): threads per process, the requests a process serves at once;
- `MEMDASH_WEB_TIMEOUT` (300): seconds a worker may go silent before it is restarted (a threaded
  worker's main loop reports for it whatever its requests take, so this catches a stuck process,
  not a long upload).
"""

from __future__ import annotations

import os


def _int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    return int(value) if value.strip() else default


bind = os.environ.get("MEMDASH_WEB_BIND", "0.0.0.0:8000")
worker_class = "gthread"
workers = _int("MEMDASH_WEB_WORKERS", os.cpu_count() or 1)
threads = _int("MEMDASH_WEB_THREADS", 8)
timeout = _int("MEMDASH_WEB_TIMEOUT", 300)
graceful_timeout = 30
keepalive = 5  # behind a load balancer that keeps connections open
