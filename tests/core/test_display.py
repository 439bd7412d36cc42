"""How pages print things: chart placeholders, times, OS versions in filters, demo OS names."""

from __future__ import annotations

from memdash.core import demo as core_demo
from memdash.core.models import natural_key
from memdash.core.templatetags.memdash import chart, since_launch
from memdash.foom import demo as foom_demo
from memdash.ingest.demo import matrix as demo_matrix


def test_chart_placeholder_is_as_tall_as_its_figure():
    """The div holds the figure's own height before plotly draws, so nothing moves, and a
    220 px chart leaves no 100 px gap under it."""
    html = chart({"data": [], "layout": {"height": 220}}, "build-trend")
    assert '<div class="chart" id="build-trend" data-chart="build-trend-data" ' in html
    assert 'style="min-height:220px"' in html
    # plotly's own default for a figure without a height
    assert 'style="min-height:450px"' in chart({"data": [], "layout": {}}, "x")


def test_times_since_launch_print_as_on_the_generations_page():
    assert since_launch(4000) == "00:04.000"
    assert since_launch(0) == "00:00.000"
    assert since_launch(125_320) == "02:05.320"  # 2 min = 120,000 ms, then 5.320 s
    assert since_launch(None) == ""


def test_os_versions_sort_naturally():
    versions = ["17.4.1", "16.7.10", "16.7.2", "17.5", "16.7.8", "17.10"]
    assert sorted(versions, key=natural_key) == [
        "16.7.2", "16.7.8", "16.7.10", "17.4.1", "17.5", "17.10",
    ]  # fmt: skip


def test_demo_names_each_os_one_way():
    """Bare versions, as the sessions format sends them ("17.4.1", not "iOS 17.4.1"), in every
    domain's demo: the core devices' versions are among the FOOM demo's."""
    core = {os for _key, _model, os in core_demo.DEVICES}
    assert core == {"17.4.1", "16.7.2", "17.5"}
    assert core <= {os for _model, os, _limit in foom_demo.MODELS}
    assert demo_matrix.DEVICE[2] in core
