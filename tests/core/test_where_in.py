"""Reads by a list of values (`core.reads.where_in.where_in`, `where_in_parts`): every value found,
whatever its characters, in one query on PostgreSQL (one array literal) and in parts of at most
`SQLITE_IN_CHUNK` placeholders on SQLite."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memdash.allocations.models import Category
from memdash.core.reads import where_in as ids

# Names an array literal must quote: its separators, quotes, backslashes, braces, spaces, NULL.
AWKWARD = ['a "quoted" name', "back\\slash", "comma, brace {}", "  spaced  ", "NULL", "ü ✓"]


@pytest.fixture
def categories(app):
    return {
        name: Category.objects.create(app=app, name=name, name_hash=i, kind="heap").pk
        for i, name in enumerate([*AWKWARD, "plain"])
    }


def read_names(values: list[str]) -> tuple[set[str], int]:
    with CaptureQueriesContext(connection) as queries:
        found = {
            name
            for part in ids.where_in_parts("name", values)
            for name in Category.objects.filter(part).values_list("name", flat=True)
        }
    return found, len(queries)


def test_every_value_is_found_whatever_its_characters(categories):
    found = Category.objects.filter(ids.where_in("name", AWKWARD)).values_list("name", flat=True)
    assert sorted(found) == sorted(AWKWARD)


def test_ids_are_read_in_one_query_or_in_parts_within_sqlite_bound(categories, monkeypatch):
    monkeypatch.setattr(ids, "SQLITE_IN_CHUNK", 3)
    names = [*AWKWARD, "plain", "not stored"]  # 8 values: 3 + 3 + 2 on SQLite
    found, queries = read_names(names)
    assert found == set(categories)
    assert queries == (1 if connection.vendor == "postgresql" else 3)


def test_no_values_read_nothing(categories):
    assert read_names([]) == (set(), 0)
