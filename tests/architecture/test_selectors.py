"""Selectors only read (CONTRIBUTING.md, "Where code goes"): what they do not find they say with
the model's `DoesNotExist`, and answers (a 404) and URLs are the views' to make. So no selectors
module imports Django's 404s or URL reversing, nor reverses a page by kind."""

from __future__ import annotations

import ast
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


def selector_modules() -> list[Path]:
    return sorted(
        path
        for path in (ROOT / "memdash").rglob("*.py")
        if "reads" in path.relative_to(ROOT / "memdash").parts or path.name == "reads.py"
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


def test_the_selectors_modules_are_found():
    names = {str(path.relative_to(ROOT)) for path in selector_modules()}
    assert {
        "memdash/core/reads/apps.py",
        "memdash/allocations/reads/snapshots.py",
        "memdash/allocations/reads/calltree/trees.py",
        "memdash/foom/reads/rates.py",
    } <= names


@pytest.mark.parametrize("path", selector_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_selectors_make_no_answers_and_no_urls(path: Path):
    assert answers_and_urls(path.read_text()) == set()


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
