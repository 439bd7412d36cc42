"""Logic is pure (CONTRIBUTING.md, "The house"): a module under an app's `logic/` works on plain
data, so it imports nothing of Django, DRF or drf-spectacular, and of memdash only other logic.
Only for an annotation (under `if TYPE_CHECKING:`) may it name a model: a value it is handed and
passes on, never queries. import-linter's `roles` contract keeps logic below its own app's reads,
writes and web; this test also covers what it cannot see: Django itself, and other apps' layers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WEB_FRAMEWORKS = {"django", "rest_framework", "drf_spectacular"}


def logic_modules() -> list[Path]:
    return sorted(
        path
        for path in (ROOT / "memdash").rglob("*.py")
        if "logic" in path.relative_to(ROOT / "memdash").parts[1:] or path.name == "logic.py"
    )


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(source: str) -> list[tuple[str, bool]]:
    """(module, only for type checking) for every import of `source`, wherever it is."""
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, typing_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                found.extend((alias.name, typing_only) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                found.append((child.module, typing_only))
                found.extend((f"{child.module}.{a.name}", typing_only) for a in child.names)
            visit(child, typing_only or (isinstance(child, ast.If) and _is_type_checking(child)))

    visit(ast.parse(source), False)
    return found


def impurities(source: str) -> set[str]:
    """What a logic module may not import, of what `source` imports."""
    bad = set()
    for module, typing_only in imports(source):
        parts = module.split(".")
        if parts[0] in WEB_FRAMEWORKS:
            bad.add(module)
        elif parts[0] == "memdash" and "logic" not in parts:
            is_a_model = len(parts) >= 3 and parts[2] == "models"
            if not (typing_only and is_a_model):
                bad.add(module)
    # `from memdash.x.logic import y` also lists `memdash.x.logic.y`, a name or a module: fine.
    return bad


def test_the_logic_modules_are_found():
    names = {str(path.relative_to(ROOT)) for path in logic_modules()}
    assert {
        "memdash/core/logic/units.py",
        "memdash/allocations/logic/calltree/flame.py",
        "memdash/foom/logic/classify.py",
        "memdash/ingest/logic/pprof/convert.py",
        "memdash/leaks/logic/parsers/valgrind.py",
    } <= names


@pytest.mark.parametrize("path", logic_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_logic_imports_no_django_and_only_logic_of_memdash(path: Path):
    assert impurities(path.read_text()) == set()


def test_the_check_sees_each_way_of_importing():
    source = (
        "from typing import TYPE_CHECKING\n"
        "import django.db\n"
        "from rest_framework import serializers\n"
        "from memdash.core.logic import units\n"
        "from memdash.core.reads import apps\n"
        "from memdash.foom.models import Session\n"
        "if TYPE_CHECKING:\n"
        "    from memdash.core.models import Build\n"
        "    from django.db.models import QuerySet\n"
        "def later():\n"
        "    from memdash.compare.web import views\n"
    )
    assert impurities(source) == {
        "django.db",
        "rest_framework",
        "rest_framework.serializers",
        "memdash.core.reads",
        "memdash.core.reads.apps",
        "memdash.foom.models",
        "memdash.foom.models.Session",
        "django.db.models",
        "django.db.models.QuerySet",
        "memdash.compare.web",
        "memdash.compare.web.views",
    }
