"""Slow clients against gunicorn: two clients trickle an upload's body while a third asks for the
login page. With sync workers each trickling client holds a worker until its body is in; with
memdash's gunicorn settings (`memdash/gunicorn_conf.py`: threaded workers) it holds a thread.

    python bench/slow_clients.py            # sync (2 workers) against gthread (1 worker), JSON out

`tests/ingest/test_slow_clients.py` drives the same pieces (`serve`, `Trickle`, `get`).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, collect_static, fresh_memdash_database, log, memdash_env  # noqa: E402

CONFIG = "memdash/gunicorn_conf.py"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def get(port: int, path: str, timeout: float = 120) -> int:
    """The status of a GET (redirects are not followed)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310 (local)
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@contextmanager
def serve(env: dict[str, str], args: Sequence[str], log_file: Path) -> Iterator[int]:
    """gunicorn serving memdash.wsgi with `args` on a free local port, until the block ends;
    yields the port once the login page answers."""
    port = free_port()
    command = [sys.executable, "-m", "gunicorn", *args, "--bind", f"127.0.0.1:{port}"]
    with log_file.open("w") as errors:
        server = subprocess.Popen(
            [*command, "memdash.wsgi"], cwd=ROOT, env=env, stdout=errors, stderr=errors
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, log_file.read_text()
            try:
                if get(port, "/login/", timeout=5) == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, f"gunicorn did not answer: {log_file.read_text()}"
            time.sleep(0.2)
        yield port
    finally:
        os.kill(server.pid, signal.SIGTERM)
        server.wait(30)


class Trickle:
    """An upload whose body comes a byte every `interval` seconds, on a thread of its own: it
    ends by itself once all of it is sent (`ended`), or sooner with `finish`."""

    def __init__(self, port: int, secret: str, body: bytes, interval: float = 0.1):
        self.body = body
        self.sent = 0
        self.interval = interval
        self.ended = threading.Event()
        self.hurry = threading.Event()
        self.status: int | None = None
        self.sock = socket.create_connection(("127.0.0.1", port))
        head = (
            f"POST /api/v1/uploads HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {secret}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        self.sock.sendall(head.encode())
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while self.sent < len(self.body):
            if self.hurry.is_set():
                self.sock.sendall(self.body[self.sent :])
                self.sent = len(self.body)
                break
            self.sock.sendall(self.body[self.sent : self.sent + 1])
            self.sent += 1
            self.hurry.wait(self.interval)
        self.ended.set()
        answer = b""
        while chunk := self.sock.recv(65536):
            answer += chunk
        self.sock.close()
        self.status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else None

    def finish(self, timeout: float = 120) -> int | None:
        """Send the rest at once; the upload's answer (its HTTP status)."""
        self.hurry.set()
        self.thread.join(timeout)
        return self.status


def login_while_trickling(port: int, secrets: Sequence[str], size: int) -> dict[str, object]:
    """Two uploads of `size` bytes trickling (two JSON objects, padded), then a GET of the login
    page: how long it took, and whether it came before the trickles ended."""
    bodies = [f'{{"trickle": {n}, "at": {time.time()}}}'.encode().ljust(size) for n in (1, 2)]
    trickles = [Trickle(port, secret, body) for secret, body in zip(secrets, bodies, strict=True)]
    time.sleep(1.0)  # both requests are inside their views, reading their bodies
    started = time.perf_counter()
    status = get(port, "/login/")
    seconds = time.perf_counter() - started
    before_trickles_ended = not any(t.ended.is_set() for t in trickles)
    uploads = [t.finish() for t in trickles]
    return {"login": status, "login_seconds": round(seconds, 3),
            "before_trickles_ended": before_trickles_ended, "uploads": uploads,
            "trickle_seconds": round(size * trickles[0].interval, 1)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--var-dir", type=Path, default=ROOT / "var/bench/slow_clients")
    parser.add_argument("--body-bytes", type=int, default=200)
    args = parser.parse_args(argv)
    args.var_dir.mkdir(parents=True, exist_ok=True)
    collect_static(args.var_dir)  # DEBUG is off: pages want the hashed static files
    url = fresh_memdash_database("sqlite", "slow_clients", args.var_dir, "")
    env = memdash_env(url, args.var_dir, MEMDASH_TASKS="database")
    make_keys = (
        "from memdash.core import services as s; app = s.get_or_create_app('com.example.chat', "
        "'ios'); print(' '.join(s.create_ingest_key(app)[1] for _ in range(2)))"
    )
    secrets = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", make_keys],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    ).stdout.splitlines()[-1].split()  # fmt: skip
    results = {}
    for name, server_args in (
        ("sync, 2 workers", ["--workers", "2", "--timeout", "300"]),
        ("gthread (memdash/gunicorn_conf.py), 1 worker × 8 threads", ["-c", CONFIG]),
    ):
        server_env = {**env, "MEMDASH_WEB_WORKERS": "1"}
        with serve(server_env, server_args, args.var_dir / "gunicorn.log") as port:
            results[name] = login_while_trickling(port, secrets, args.body_bytes)
        log(f"{name}: {results[name]}")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
