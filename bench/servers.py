"""memdash as production runs it, for the benchmark: gunicorn web processes and
`manage.py db_worker` task workers on one database, started and stopped by the harness.

    python bench/servers.py setup          # child: make the app and an ingest key, JSON out
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH, PYTHON, ROOT, emit, log, memdash_env, run_json  # noqa: E402

GUNICORN = str(Path(PYTHON).parent / "gunicorn")


def free_port() -> int:
    """A port for gunicorn: MEMDASH_BENCH_PORT when set (a shared machine gives each user its
    own range), else one the OS says is free."""
    if os.environ.get("MEMDASH_BENCH_PORT"):
        return int(os.environ["MEMDASH_BENCH_PORT"])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup_app(bundle_id: str, platform: str) -> dict[str, Any]:
    from common import setup_django

    setup_django()
    from memdash.core.writes import apps as core_services

    app = core_services.get_or_create_app(bundle_id, platform, "Chat")
    _, secret = core_services.create_ingest_key(app)
    return {"app_id": app.pk, "secret": secret}


def make_app(url: str, var_dir: Path, bundle_id: str = "com.example.chat") -> dict[str, Any]:
    return run_json(
        [PYTHON, str(BENCH / "servers.py"), "setup", "--app", bundle_id], memdash_env(url, var_dir)
    )


@dataclass
class Running:
    port: int
    web: subprocess.Popen
    workers: list[subprocess.Popen] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def web_worker_pids(self) -> list[int]:
        """gunicorn's worker processes (children of its master)."""
        path = Path(f"/proc/{self.web.pid}/task/{self.web.pid}/children")
        try:
            return [int(p) for p in path.read_text().split()]
        except OSError:
            return []


def wait_until_up(base_url: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(base_url + "/login/", timeout=2) as response:
                if response.status < 500:
                    return
        except Exception:
            time.sleep(0.3)
    raise RuntimeError(f"gunicorn did not answer at {base_url} within {timeout} s")


def stop(proc: subprocess.Popen, timeout: float = 30) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def serving(
    url: str,
    var_dir: Path,
    *,
    web_workers: int = 2,
    task_workers: int = 0,
    log_dir: Path | None = None,
    env: dict[str, str] | None = None,
):
    """gunicorn on a free port (tasks queued in the database), plus `task_workers`
    `manage.py db_worker` processes; all stopped on exit. `env`: more settings for them."""
    env = memdash_env(url, var_dir, MEMDASH_TASKS="database", **(env or {}))
    port = free_port()
    log_dir = log_dir or var_dir
    log_dir.mkdir(parents=True, exist_ok=True)
    logs = ExitStack()
    # The log files stay open while the processes run; the ExitStack closes them at the end.
    web_log = logs.enter_context(open(log_dir / "gunicorn.log", "ab"))  # noqa: SIM115
    web = subprocess.Popen(
        [
            GUNICORN,
            "memdash.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(web_workers),
            "--timeout",
            "600",
            "--graceful-timeout",
            "10",
        ],
        env=env,
        cwd=ROOT,
        stdout=web_log,
        stderr=subprocess.STDOUT,
    )
    running = Running(port=port, web=web)
    try:
        wait_until_up(running.base_url)
        for i in range(task_workers):
            worker_log = logs.enter_context(open(log_dir / f"db_worker-{i}.log", "ab"))  # noqa: SIM115
            running.workers.append(
                subprocess.Popen(
                    [
                        PYTHON,
                        str(ROOT / "manage.py"),
                        "db_worker",
                        "--no-reload",
                        "--interval",
                        "0.2",
                        "--worker-id",
                        f"bench-{os.getpid()}-{i}",
                    ],
                    env=env,
                    cwd=ROOT,
                    stdout=worker_log,
                    stderr=subprocess.STDOUT,
                )
            )
        log(f"serving on {running.base_url} with {web_workers} web and {task_workers} task workers")
        yield running
    finally:
        for proc in running.workers:
            stop(proc)
        stop(web)
        logs.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("setup")
    s.add_argument("--app", default="com.example.chat")
    s.add_argument("--platform", default="ios")
    args = parser.parse_args(argv)
    emit(setup_app(args.app, args.platform))
    return 0


if __name__ == "__main__":
    sys.exit(main())
