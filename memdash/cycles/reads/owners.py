"""Owner suggestion: who last touched the files that define a cluster's app classes.

Only for apps whose source checkout a staff user configured on the server
(`settings.MEMDASH_SOURCE_CHECKOUTS`, bundle id → path); a web user never types a path. git runs
with an argument list, a timeout and no shell; file names from git are resolved and kept inside
the checkout.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.cache import cache

GIT_TIMEOUT_SECONDS = 10
SOURCE_SUFFIXES = (".m", ".mm", ".h", ".swift", ".kt", ".java")
MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_FILES = 200_000
CACHE_SECONDS = 600
# Definitions first: an @implementation or a Swift/Kotlin class, then an @interface (a header).
_DEFINITION_RANK = {"implementation": 0, "class": 1, "interface": 2}


@dataclass(frozen=True)
class ClassOwner:
    class_name: str
    file: str | None  # relative to the checkout
    author: str | None
    email: str | None


@dataclass(frozen=True)
class OwnerSuggestion:
    classes: list[ClassOwner]
    suggested: str | None  # "Name <email>", the author of most of the classes' files


def checkout_for(bundle_id: str) -> Path | None:
    configured = getattr(settings, "MEMDASH_SOURCE_CHECKOUTS", {}) or {}
    path = configured.get(bundle_id)
    if not path:
        return None
    checkout = Path(path).resolve()
    return checkout if (checkout / ".git").exists() else None


def _git(checkout: Path, *args: str) -> str | None:
    try:
        completed = subprocess.run(  # noqa: S603 - argument list, no shell
            [
                shutil.which("git") or "git",
                "-c",
                f"safe.directory={checkout}",  # the checkout may belong to another user
                "-C",
                str(checkout),
                "--no-pager",
                *args,
            ],
            capture_output=True,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
            shell=False,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if completed.returncode != 0:
        return None
    return completed.stdout.decode("utf-8", errors="replace")


def source_files(checkout: Path) -> list[Path]:
    listed = _git(checkout, "ls-files", "-z")
    if listed is None:
        return []
    names = [name for name in listed.split("\0") if name.endswith(SOURCE_SUFFIXES)]
    return [Path(name) for name in names[:MAX_FILES]]


def _plain_name(class_name: str) -> str:
    """`Chat.ChatViewController` (a Swift class and its module) is defined as ChatViewController."""
    return class_name.rsplit(".", 1)[-1]


def _definition_patterns(class_name: str) -> dict[str, re.Pattern[str]]:
    name = re.escape(_plain_name(class_name))
    return {
        "implementation": re.compile(rf"^\s*@implementation\s+{name}\b", re.MULTILINE),
        "interface": re.compile(rf"^\s*@interface\s+{name}\b(?!\s*\()", re.MULTILINE),
        "class": re.compile(rf"^[^\S\n]*(?:[\w@]+[^\S\n]+)*class[^\S\n]+{name}\b", re.MULTILINE),
    }


def _read_inside(checkout: Path, relative: Path) -> str | None:
    path = (checkout / relative).resolve()
    if not path.is_relative_to(checkout) or not path.is_file():
        return None  # a symlink out of the checkout, or gone
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def defining_files(checkout: Path, class_names: Iterable[str]) -> dict[str, str]:
    """class → the file (relative path) that best defines it, for the classes found."""
    wanted = {cls: _definition_patterns(cls) for cls in class_names}
    best: dict[str, tuple[int, str]] = {}
    for relative in source_files(checkout):
        text = _read_inside(checkout, relative)
        if text is None:
            continue
        for cls, patterns in wanted.items():
            if _plain_name(cls) not in text:  # cheap test before the regular expressions
                continue
            for kind, pattern in patterns.items():
                if pattern.search(text):
                    candidate = (_DEFINITION_RANK[kind], str(relative))
                    if cls not in best or candidate < best[cls]:
                        best[cls] = candidate
    return {cls: path for cls, (_rank, path) in best.items()}


def last_author(checkout: Path, relative: str) -> tuple[str, str] | None:
    output = _git(checkout, "log", "-1", "--format=%an|%ae", "--", relative)
    if not output or "|" not in output:
        return None
    name, email = output.strip().split("|", 1)
    return name, email


def suggest_owners(checkout: Path, class_names: list[str]) -> OwnerSuggestion:
    files = defining_files(checkout, class_names)
    owners = []
    for cls in class_names:
        relative = files.get(cls)
        author = last_author(checkout, relative) if relative else None
        owners.append(
            ClassOwner(
                class_name=cls,
                file=relative,
                author=author[0] if author else None,
                email=author[1] if author else None,
            )
        )
    votes = Counter(f"{o.author} <{o.email}>" for o in owners if o.author)
    # Most classes' files; ties to the first class in loop order (Counter keeps insertion order).
    suggested = votes.most_common(1)[0][0] if votes else None
    return OwnerSuggestion(classes=owners, suggested=suggested)


def owner_suggestion_for(bundle_id: str, class_names: list[str]) -> OwnerSuggestion | None:
    """None when the app has no configured checkout. Cached for a few minutes per HEAD commit,
    since it reads the whole checkout."""
    checkout = checkout_for(bundle_id)
    if checkout is None or not class_names:
        return None
    head = (_git(checkout, "rev-parse", "HEAD") or "").strip()
    wanted = "\0".join([bundle_id, head, *class_names])
    cache_key = "cycles:owners:" + hashlib.sha256(wanted.encode()).hexdigest()
    cached = cache.get(cache_key)
    if cached is not None:
        return cached
    suggestion = suggest_owners(checkout, class_names)
    cache.set(cache_key, suggestion, CACHE_SECONDS)
    return suggestion
