"""Plumbing shared by the benchmark scripts: where files go, how a script becomes a Django
process on a chosen database, how databases are created, how child processes report, and the
statistics used for the figures.

The benchmark runs memdash in child processes (one per measurement) so that each peak-memory
figure belongs to one ingest alone, exactly as the reference scripts' do.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
PYTHON = sys.executable
DEFAULT_PG_SERVER = "postgres://postgres@127.0.0.1:5432"


# ---------------------------------------------------------------------------------------------
# Environment of a memdash child process


def memdash_env(database_url: str, var_dir: Path, **extra: str) -> dict[str, str]:
    """Production-like settings (DEBUG off: no query log growing in memory) on `database_url`,
    with files under `var_dir`."""
    env = dict(os.environ)
    # An installed site has its modules compiled (pip and the first run write them): a process
    # told not to write them compiles memdash at every start, which no user waits for.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(
        {
            "DATABASE_URL": database_url,
            "MEMDASH_VAR_DIR": str(var_dir),
            "MEMDASH_UPLOAD_DIR": str(var_dir / "uploads"),
            "DEBUG": "0",
            "SECRET_KEY": "memdash-bench-only-secret-key-0123456789abcdefghijklmnopqrstuvwxyz",
            "ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
            "SECURE_SSL_REDIRECT": "0",
            "DJANGO_SETTINGS_MODULE": "memdash.settings",
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(BENCH)]),
            "MEMDASH_TASKS": extra.pop("MEMDASH_TASKS", "immediate"),
            # The load runs send thousands of uploads a minute with one key: no quota.
            "MEMDASH_UPLOADS_PER_KEY_PER_MINUTE": "0",
        }
    )
    env.update(extra)
    return env


def compile_memdash() -> None:
    """memdash's modules compiled once, as an installed site has them (see `memdash_env`)."""
    import compileall

    compileall.compile_dir(ROOT / "memdash", quiet=1)


def setup_django() -> None:
    """Called at the top of a child process whose environment `memdash_env` made."""
    for path in (str(ROOT), str(BENCH)):
        if path not in sys.path:
            sys.path.insert(0, path)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memdash.settings")
    import django

    django.setup()


def warm_worker() -> None:
    """What a worker that has run before has done once, so that a timed ingest does not pay it:
    the URL resolver is built (a stored snapshot's link needs it; a tenth of a second)."""
    from django.urls import get_resolver

    assert get_resolver().reverse_dict


# ---------------------------------------------------------------------------------------------
# Databases


@dataclass(frozen=True)
class Database:
    vendor: str  # "sqlite" or "postgresql"
    url: str  # DATABASE_URL for memdash
    floor: str  # DSN (postgresql) or file path (sqlite) of the bare floor's table (floor.py)

    @property
    def label(self) -> str:
        return "PostgreSQL" if self.vendor == "postgresql" else "SQLite"


def pg_url(server: str, name: str) -> str:
    parts = urlsplit(server)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", "", ""))


def pg_dsn(url: str) -> str:
    """psycopg wants postgresql:// (it accepts postgres:// too, but be explicit)."""
    return "postgresql://" + url.split("://", 1)[1]


def pg_available(server: str) -> bool:
    try:
        import psycopg

        with psycopg.connect(pg_dsn(pg_url(server, "postgres")), connect_timeout=3):
            return True
    except Exception:
        return False


def recreate_pg_database(server: str, name: str) -> str:
    """Drop and create database `name` on the server; returns its URL."""
    import psycopg

    with psycopg.connect(pg_dsn(pg_url(server, "postgres")), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return pg_url(server, name)


def migrate(env: dict[str, str]) -> None:
    run_checked([PYTHON, str(ROOT / "manage.py"), "migrate", "--noinput", "-v", "0"], env)


def collect_static(var_dir: Path) -> None:
    """DEBUG is off in the benchmark, so pages need the hashed static files collected."""
    if not (var_dir / "static" / "staticfiles.json").exists():
        env = memdash_env(f"sqlite:///{var_dir / 'unused.sqlite3'}", var_dir)
        run_checked([PYTHON, str(ROOT / "manage.py"), "collectstatic", "--noinput", "-v", "0"], env)


def fresh_memdash_database(vendor: str, name: str, var_dir: Path, pg_server: str) -> str:
    """A new, migrated memdash database; returns its DATABASE_URL."""
    if vendor == "postgresql":
        url = recreate_pg_database(pg_server, name)
    else:
        path = var_dir / f"{name}.sqlite3"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        url = f"sqlite:///{path}"
    migrate(memdash_env(url, var_dir))
    return url


def clone_database(template_url: str, name: str, var_dir: Path, pg_server: str) -> str:
    """A new database holding what the (migrated, idle) template holds: a file copy for SQLite,
    CREATE DATABASE … TEMPLATE for PostgreSQL. Much faster than migrating again."""
    if template_url.startswith("sqlite"):
        return copy_sqlite(template_url, var_dir / f"{name}.sqlite3")
    import psycopg

    template = urlsplit(template_url).path.lstrip("/")
    with psycopg.connect(pg_dsn(pg_url(pg_server, "postgres")), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    return pg_url(pg_server, name)


def drop_database(url: str, pg_server: str) -> None:
    if url.startswith("sqlite"):
        path = url.removeprefix("sqlite:///")
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        return
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(pg_dsn(pg_url(pg_server, "postgres")), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def copy_sqlite(url: str, target: Path) -> str:
    """A copy of a (checkpointed) SQLite database file, as a new URL."""
    source = Path(url.removeprefix("sqlite:///"))
    for suffix in ("", "-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(source, target)
    return f"sqlite:///{target}"


# ---------------------------------------------------------------------------------------------
# Child processes


def run_checked(
    cmd: Sequence[str], env: dict[str, str] | None = None, timeout: float = 3600
) -> str:
    proc = subprocess.run(
        list(cmd), env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} failed ({proc.returncode}):\n"
            f"{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
        )
    return proc.stdout


def run_json(cmd: Sequence[str], env: dict[str, str] | None = None, timeout: float = 3600) -> dict:
    """Run a child that prints one JSON object as its last stdout line."""
    out = run_checked(cmd, env, timeout)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"{' '.join(cmd)} printed no JSON result:\n{out[-2000:]}")
    return json.loads(lines[-1])


def emit(result: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(result, default=str) + "\n")
    sys.stdout.flush()


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Memory


def peak_rss_bytes() -> int:
    """This process's peak RSS (VmHWM), its own only: getrusage's ru_maxrss is not, since Linux
    keeps across exec the peak of the process image it replaced, so a child forked from a
    harness that had grown to 560 MB reported at least that (the ingest's peak read 556 MiB
    where its own was 352 MiB)."""
    return proc_status(os.getpid())["VmHWM"]


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak RSS) of a process, in bytes (Linux /proc)."""
    values: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) * 1024
    return values


def current_rss_bytes() -> int:
    return proc_status(os.getpid())["VmRSS"]


# ---------------------------------------------------------------------------------------------
# Statistics and formatting


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile (p95 of 50 samples is the 48th smallest)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), round(fraction * len(ordered) + 0.4999)))
    return ordered[rank - 1]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def secs(seconds: float) -> str:
    return f"{seconds:.2f} s"


def mib(n: float) -> str:
    return f"{n / (1024 * 1024):.0f} MiB"


def x(value: float) -> str:
    return f"{value:.2f}×"


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table (and the blank line after it)."""
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out + [""]


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×" if b else "n/a"


def cpu_description() -> str:
    """The processor's name with its family and model: a shared machine's "AMD EPYC" has been
    two generations, one half as fast again as the other, under the same name."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            name, _, value = line.partition(":")
            fields.setdefault(name.strip(), value.strip())
    except OSError:
        return ""
    cpu = fields.get("model name", "")
    if "cpu family" in fields and "model" in fields:
        cpu += f" (family {fields['cpu family']}, model {fields['model']})"
    return cpu


def machine_description() -> dict[str, str]:
    cpu = cpu_description()
    mem = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    pg_version = ""
    try:
        import psycopg

        with psycopg.connect(pg_dsn(pg_url(DEFAULT_PG_SERVER, "postgres")), connect_timeout=3) as c:
            pg_version = c.execute("SHOW server_version").fetchone()[0]
    except Exception:
        pg_version = "not reachable"
    import sqlite3

    import django
    import orjson
    import psycopg

    return {
        "cpu": f"{os.cpu_count()} × {cpu}" if cpu else f"{os.cpu_count()} CPUs",
        "memory": mem,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "django": django.get_version(),
        "postgresql": pg_version,
        "sqlite": sqlite3.sqlite_version,
        "psycopg": psycopg.__version__,
        "orjson": orjson.__version__,
        "go": shutil.which("go") or "not installed",
    }


# ---------------------------------------------------------------------------------------------
# docs/performance.md, one section at a time


def _sections(doc: str, level: str) -> tuple[str, list[tuple[str, str]]]:
    """What comes before the first heading of `level` ("## ") and each such section as
    (its title line, its text up to the next one)."""
    parts = doc.split("\n" + level)
    head, sections = parts[0], []
    for part in parts[1:]:
        title = level + part.split("\n", 1)[0]
        sections.append((title, "\n" + level + part))
    return head, sections


def merge_document(existing: str, rendered: str) -> str:
    """`rendered` (bench/run.py's document) put into `existing`: its sections replace those of
    the same title, and the sections other benchmarks wrote (and their "### " parts inside a
    rendered section) are kept where they are, so a run of some parts loses nothing."""
    if not existing:
        return rendered
    old_head, old = _sections(existing, "## ")
    new_head, new = _sections(rendered, "## ")
    by_title = dict(new)
    merged = [new_head]
    for title, text in old:
        if title in by_title:
            text = by_title.pop(title)
            kept = [sub for sub in _sections(dict(old)[title], "### ")[1] if sub[0] not in text]
            if kept:
                bodies = "".join(body for _, body in kept).strip("\n")
                text = text.rstrip("\n") + "\n\n" + bodies + "\n"
        merged.append(text)
    for title, text in new:  # sections new to this document: before "## How to run"
        if title in by_title:
            at = next((i for i, t in enumerate(merged) if t.startswith("\n## How to run")), None)
            merged.insert(len(merged) if at is None else at, text)
    return "".join(merged)


def replace_section(path: Path, title: str, text: str, after: str = "") -> None:
    """Put `text` (a section starting with its `title` line, "## …") in the Markdown file in
    place of the section of that title, or, when there is none, after the section titled
    `after` (else before "## How to run"); nothing else of the file changes."""
    doc = path.read_text()
    start = doc.find(title + "\n")
    if start >= 0:
        end = doc.find("\n## ", start + len(title))
        doc = doc[:start] + text + doc[end + 1 if end >= 0 else len(doc) :]
    else:
        previous = doc.find(after + "\n") if after else -1
        anchor = doc.find("\n## ", previous + len(after)) + 1 if previous >= 0 else 0
        anchor = anchor or doc.find("## How to run")
        doc = doc[:anchor] + text + "\n" + doc[anchor:] if anchor >= 0 else doc + "\n" + text
    path.write_text(doc)
