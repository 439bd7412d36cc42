"""The demo's churn story: open_chat's churn rises in the leaking build and nowhere else, and
churn is steadier than elapsed time in every scenario."""

from __future__ import annotations

import pytest

from memdash.churn import demo
from memdash.churn.reads import flagged_builds, scenario_series

pytestmark = pytest.mark.django_db


@pytest.fixture
def ctx(demo_context):
    demo.load(demo_context)
    return demo_context


def test_only_the_leaking_build_is_flagged_for_open_chat(ctx):
    series = scenario_series(ctx.app)
    assert sorted(s.scenario.name for s in series) == sorted(demo.PROFILES)
    (flagged,) = flagged_builds(series)
    build, changes = flagged
    assert build.pk == ctx.leaking_build.pk
    assert [c.scenario for c in changes] == ["open_chat"]
    # The cache adds 60 · log2 65536 + 3 · 40 · log2 16384 = 960 + 1680 = 2640 to a base of
    # 6880 (malloc) + 6880 (free) + 2 · 100 · 6 (calloc) + 3 · 30 · 10 (realloc) = 15860:
    # about +16.6 %, give or take the runs' small noise.
    assert changes[0].change_percent == pytest.approx(100 * 2640 / 15860, abs=1.5)


def test_churn_is_steadier_than_time(ctx):
    for series in scenario_series(ctx.app):
        assert series.median_churn_cv < series.median_elapsed_cv / 5, series.scenario.name
        assert len(series.builds) == len(ctx.builds)
        assert all(b.churn.runs == 2 * demo.RUNS_PER_DEVICE for b in series.builds)
