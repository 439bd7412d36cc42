"""Reads only read (CONTRIBUTING.md, "The house"): every module under an app's `reads/` (or its
`reads.py`) queries and answers plain data. What it does not find it says with the model's
`DoesNotExist`; answers (a 404) and URLs are the web's to make, and changes the writes'. So no
reads module imports Django's 404s or URL reversing, nor reverses a page by kind; none imports a
writes module or a task, calls the ORM's writing methods, opens a transaction or sends SQL that
changes anything. (A cache is not the database: a read may keep what it computed there.)"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ANSWERS_AND_URLS = {
    "Http404",
    "get_object_or_404",
    "get_list_or_404",
    "reverse",
    "reverse_lazy",
    "redirect",
    "page_url",
}
# Modules whose attributes would be those, as in `shortcuts.get_object_or_404(...)`.
THEIR_MODULES = {"http", "shortcuts", "urls", "links", "django"}
# The ORM's writes: these names write whatever they are called on...
WRITING_METHODS = {
    "save",
    "bulk_create",
    "bulk_update",
    "get_or_create",
    "update_or_create",
    "select_for_update",
    "atomic",
}
# ...and these when called on a manager or a queryset (`X.objects.filter(...).update(...)`); on
# a dict, a set or the cache they are no write to the database.
QUERYSET_WRITES = {"create", "update", "delete"}
QUERYSET_STEPS = {"objects", "filter", "exclude", "all", "order_by", "annotate", "using"}
# SQL as memdash writes it (keywords in capitals), at the start of a string or f-string.
CHANGING_SQL = re.compile(
    r"^\s*(INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|TRUNCATE|MERGE|COPY|VACUUM|ANALYZE)(?:\s|$)"
)


def read_modules() -> list[Path]:
    return sorted(
        path
        for path in (ROOT / "memdash").rglob("*.py")
        if "reads" in path.relative_to(ROOT / "memdash").parts[1:] or path.name == "reads.py"
    )


def answers_and_urls(source: str) -> set[str]:
    """The names of ANSWERS_AND_URLS the module imports or reaches through their modules."""
    used = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            used |= {alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            used |= {alias.name.rsplit(".", 1)[-1] for alias in node.names}
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in THEIR_MODULES
        ):
            used.add(node.attr)
    return used & ANSWERS_AND_URLS


def _on_a_queryset(node: ast.expr) -> bool:
    """Whether the receiver chain of a call goes through a manager or a queryset method."""
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            if node.attr in QUERYSET_STEPS:
                return True
            node = node.value
        else:
            return False


def _first_text(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        return _first_text(node.values[0])  # type: ignore[arg-type]
    return None


def writes(source: str) -> set[str]:
    """What in `source` writes: imports of writes or tasks, writing calls, changing SQL."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            modules = []
        if isinstance(node, ast.ImportFrom | ast.Import):
            found |= {"atomic" for alias in node.names if alias.name == "atomic"}
        for module in modules:
            parts = module.split(".")
            if parts[0] == "memdash" and ("writes" in parts or parts[2:3] == ["tasks"]):
                found.add(module)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = node.func.attr
            if name in WRITING_METHODS or (
                name in QUERYSET_WRITES and _on_a_queryset(node.func.value)
            ):
                found.add(f".{name}()")
        elif isinstance(node, ast.Name) and node.id == "atomic":
            found.add("atomic")
        text = _first_text(node) if isinstance(node, ast.expr) else None
        if text is not None and (match := CHANGING_SQL.match(text)):
            found.add(match.group(1).upper())
    return found


def test_the_read_modules_are_found():
    names = {str(path.relative_to(ROOT)) for path in read_modules()}
    assert {
        "memdash/core/reads/apps.py",
        "memdash/allocations/reads/snapshots.py",
        "memdash/allocations/reads/calltree/trees.py",
        "memdash/compare/reads/refs.py",
        "memdash/compare/reads/diffs.py",
        "memdash/compare/reads/builds.py",
        "memdash/foom/reads/rates.py",
        "memdash/leaks/reads.py",
    } <= names


@pytest.mark.parametrize("path", read_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_reads_make_no_answers_and_no_urls(path: Path):
    assert answers_and_urls(path.read_text()) == set()


@pytest.mark.parametrize("path", read_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_reads_write_nothing(path: Path):
    assert writes(path.read_text()) == set()


def test_the_check_sees_each_way_of_reaching_them():
    source = (
        "from django.http import Http404\n"
        "from django import shortcuts\n"
        "from django.urls import reverse as url_of\n"
        "def read(items):\n"
        "    items.reverse()  # a list's own method: not a URL\n"
        "    return shortcuts.get_object_or_404(items)\n"
    )
    assert answers_and_urls(source) == {"Http404", "get_object_or_404", "reverse"}


def test_the_check_sees_each_way_of_writing():
    source = (
        "from django.db import transaction\n"
        "from django.db.transaction import atomic\n"
        "from memdash.core.writes import bulk\n"
        "from memdash.foom import tasks\n"
        "def read(cursor, totals, row, table):\n"
        "    totals.update({'a': 1})  # a dict's: no write\n"
        "    cache.delete('key')  # the cache's: no write\n"
        "    with transaction.atomic():\n"
        "        row.save()\n"
        "        Snapshot.objects.filter(pk=1).update(name='x')\n"
        "        Snapshot.objects.create(name='x')\n"
        "    cursor.execute(f'  DELETE FROM {table}')\n"
        "    '''Drop it: a docstring, not SQL.'''\n"
        "    cursor.execute('SELECT 1')\n"
    )
    assert writes(source) == {
        "memdash.core.writes",
        "memdash.core.writes.bulk",
        "memdash.foom.tasks",
        "atomic",
        ".atomic()",
        ".save()",
        ".update()",
        ".create()",
        "DELETE",
    }
