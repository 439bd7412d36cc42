"""The test database as other processes (real workers) see it.

On PostgreSQL that is the test database itself: a transactional test's writes are committed, a
worker started with its URL reads them, and this process reads the worker's. SQLite's test
database lives in this process's memory, so `publish` copies it (schema and rows) to a file that
workers open; from then on the test reads that file and writes nothing more in its own database.
Either way `query` reads what the workers wrote.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class LiveDatabase:
    url: str
    file: Path | None  # SQLite: the copy the workers use
    env: dict[str, str]
    logs: Path

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """Rows of a SELECT written with `%s` placeholders, as the workers left the database."""
        if self.file is None:
            with connection.cursor() as cursor:
                cursor.execute(sql, params or None)
                return list(cursor.fetchall())
        with closing(sqlite3.connect(self.file)) as db:
            return list(db.execute(sql.replace("%s", "?"), params).fetchall())

    def count(self, table: str) -> int:
        return self.query(f'SELECT COUNT(*) FROM "{table}"')[0][0]  # noqa: S608

    def manage(self, *args: str, stdin: int | None = None) -> Managed:
        """`manage.py <args>` in another process on this database (its output in `logs`)."""
        name = self.logs / f"{args[0]}-{time.monotonic_ns()}"
        out, err = name.with_suffix(".out"), name.with_suffix(".err")
        with out.open("w") as stdout, err.open("w") as stderr:
            process = subprocess.Popen(
                [sys.executable, "manage.py", *args],
                cwd=ROOT, env=self.env, stdin=stdin, stdout=stdout, stderr=stderr, text=True,
            )  # fmt: skip
        return Managed(process, out, err)

    def run(self, *args: str, timeout: float = 60) -> str:
        """`manage.py <args>` to its end; its standard output."""
        managed = self.manage(*args)
        assert managed.process.wait(timeout) == 0, managed.err.read_text()
        return managed.out.read_text()


@dataclass
class Managed:
    process: subprocess.Popen[str]
    out: Path
    err: Path

    def kill(self) -> None:
        """SIGKILL: the worker gets no chance to clean up, as when a machine dies."""
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(10)


def publish(tmp_path: Path, **env: str) -> LiveDatabase:
    """The test database for other processes, with what this test stored so far; `env` adds
    settings (environment variables) for them."""
    logs = tmp_path / "logs"
    logs.mkdir(exist_ok=True)
    info = connection.settings_dict
    file = None
    if connection.vendor == "sqlite":
        file = tmp_path / "live.sqlite3"
        connection.ensure_connection()
        with closing(sqlite3.connect(file)) as target:
            connection.connection.backup(target)
            # WAL from the start, as `migrate` leaves a real database: workers opening it at
            # once would otherwise race to switch it (which takes a lock no timeout waits for).
            target.execute("PRAGMA journal_mode=WAL")
        url = f"sqlite:///{file}"
    else:
        password = f":{quote(info['PASSWORD'])}" if info.get("PASSWORD") else ""
        host = f"{info.get('HOST') or 'localhost'}:{info.get('PORT') or 5432}"
        url = f"postgres://{quote(info['USER'])}{password}@{host}/{info['NAME']}"
    worker_env = {
        **os.environ,
        "DATABASE_URL": url,
        "MEMDASH_TASKS": "database",
        "MEMDASH_UPLOAD_DIR": str(settings.MEDIA_ROOT),
        "MEMDASH_VAR_DIR": str(tmp_path / "var"),
        **env,
    }
    return LiveDatabase(url=url, file=file, env=worker_env, logs=logs)


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)
