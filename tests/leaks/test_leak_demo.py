"""The demo's leak story: the image cache's group appears in the leaking build only, the JSON
parser's group fixed in 8.0.2 comes back in the leaking build as a regression."""

from __future__ import annotations

import pytest

from memdash.leaks import demo
from memdash.leaks.reads import build_totals, current_groups, occurrences_per_build
from memdash.triage.models import Status

pytestmark = pytest.mark.django_db


@pytest.fixture
def ctx(demo_context):
    demo.load(demo_context)
    return demo_context


def test_cache_group_only_in_the_leaking_build(ctx):
    groups = {group.title: group for group in current_groups(ctx.app)}
    cache = groups["ChatImageCache::Insert(ImageKey const&, Bitmap*)"]
    assert [build.pk for build, _n, _b in occurrences_per_build(cache)] == [ctx.leaking_build.pk]
    # two devices, one record each, 24 objects of 96 bytes: 2 · 2304 = 4608 bytes
    assert (cache.occurrences, cache.devices, cache.bytes) == (2, 2, 4608)
    assert cache.first_seen_build == cache.last_seen_build == ctx.leaking_build
    # the store leak is in every build: one group, 5 builds, 10 occurrences
    store = groups["sqlite3MemMalloc"]
    assert (store.builds, store.occurrences, store.status) == (5, 10, Status.OPEN)


def test_json_parser_leak_is_a_regression(ctx):
    json = current_groups(ctx.app).get(title="json::Parser::ParseString()")
    assert json.status == Status.OPEN and json.regression
    assert json.fixed_in_build == ctx.builds[1]
    assert json.last_seen_build == ctx.leaking_build


def test_unreachable_bytes_jump_in_the_leaking_build(ctx):
    per_report = {row.build.pk: row.bytes_per_report for row in build_totals(ctx.app)}
    # every report: the store leak, 64 bytes; 8.0.1 adds the parser's 3 · 48 = 144;
    # the leaking build adds 144 + 24 · 96 + 24 · 262144 = 144 + 2304 + 6291456
    assert per_report[ctx.builds[0].pk] == 64 + 144
    assert per_report[ctx.builds[2].pk] == 64
    assert per_report[ctx.leaking_build.pk] == 64 + 144 + 2304 + 6291456
    assert per_report[ctx.fixed_build.pk] == 64
