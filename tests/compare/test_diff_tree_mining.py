"""Data mining on the diff call tree of two builds (test_diff_tree_options' builds and figures,
medians per snapshot of the persistent bytes): a rule applies to every snapshot's tree before
the medians; the minimums fold, per level, the nodes under them on both sides into one line."""

from __future__ import annotations

import pytest

from tests.compare.test_diff_tree_options import builds, figures, level  # noqa: F401

pytestmark = pytest.mark.django_db


def feed_level(api_client, app, **params):
    (main,) = level(api_client, app, **params)
    (feed,) = level(api_client, app, main["id"], **params)
    return main, level(api_client, app, feed["id"], **params)


def test_a_pruned_symbol_leaves_every_snapshot(api_client, app, builds):  # noqa: F811
    main, below = feed_level(api_client, app, prune_symbol="-[Cache store]")
    # Cell alone: 50 in each base snapshot, 60 in each target one; counts 5 -> 1. Three
    # snapshots a side fully apart: p = 0.1, so "changed", not grown (test_diff_tree_options)
    assert figures(main) == ("main", 50, 60, 10, -4, "changed")
    assert [figures(n) for n in below] == [("-[Cell init]", 50, 60, 10, -4, "changed")]


def test_a_charged_symbol_is_its_callers_own(api_client, app, builds):  # noqa: F811
    main, below = feed_level(api_client, app, charge_symbol="malloc")
    assert figures(main) == ("main", 150, 310, 160, -3, "changed")  # totals stay (p = 0.6)
    cache = below[0]
    assert figures(cache)[:4] == ("-[Cache store]", 100, 250, 150)
    assert not cache["has_children"]  # malloc is gone: what it allocated is Cache store's


def test_minimums_fold_what_is_small_on_both_sides(api_client, app, builds):  # noqa: F811
    _, below = feed_level(api_client, app, min_bytes=100)
    # Cell's 50 -> 60 is under 100 on both sides: one line; Cache store (100 -> 250) stays
    assert [figures(n) for n in below] == [
        ("-[Cache store]", 100, 250, 150, 1, "changed"),  # p = 0.6
        # the folded line is a sum of nodes, not tested: grown as measured, never significant
        ("other (under the minimum)", 50, 60, 10, -4, "grown"),
    ]
    assert not below[1]["has_children"]
    _, both = feed_level(api_client, app, min_count=6)
    # counts: Cache store 1 -> 2, Cell 5 -> 1, both under 6: their sums 150 -> 310
    assert [figures(n)[:4] for n in both] == [("other (under the minimum)", 150, 310, 160)]


def test_bad_rules_and_minimums_are_400(api_client, app, builds):  # noqa: F811
    query = {"base": "build:1.0:1", "target": "build:2.0:2", "app": app.pk}
    for bad, name in [
        ({"min_bytes": "x"}, "min_bytes"),
        ({"prune_library": "y" * 2001}, "prune_library"),
    ]:
        for url in ("/api/v1/diff/calltree", "/api/v1/diff/flame"):
            response = api_client.get(url, {**query, **bad})
            assert response.status_code == 400
            assert name in response.json()["fields"]
