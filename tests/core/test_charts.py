"""The chart payload: a plotly figure as plain JSON with memdash's layout and the template."""

import json

import plotly.graph_objects as go
import pytest

from memdash.core.logic.charts import (
    BINARY_STEPS,
    COUNT_STEPS,
    aligned_scales,
    byte_scale,
    bytes_axis,
    count_axis,
    count_scale,
    figure_payload,
    log_bytes_axis,
    occurrences_per_build_figure,
    per_build_two_axes_payload,
    two_axes,
)


def test_payload_has_the_traces_the_layout_and_plotly_white():
    payload = figure_payload(go.Figure(go.Bar(x=["8.0.4", "8.0.5"], y=[3, 1])), height=200)

    assert payload["data"][0]["type"] == "bar"
    assert payload["data"][0]["x"] == ["8.0.4", "8.0.5"]
    assert payload["data"][0]["y"] == [3, 1]
    assert payload["layout"]["height"] == 200  # the caller's layout wins over the default 320
    assert payload["layout"]["margin"] == {"l": 50, "r": 20, "t": 30, "b": 40}
    # plotly_white: white plot area and grid lines in #EBF0F8 (plotly's own template file)
    template = payload["layout"]["template"]["layout"]
    assert template["plot_bgcolor"] == "white"
    assert template["xaxis"]["gridcolor"] == "#EBF0F8"


def test_template_is_the_one_plotly_would_set_itself():
    """The template is expanded once and attached; it must equal what update_layout sets."""
    by_plotly = go.Figure(go.Bar(x=[1], y=[1]))
    by_plotly.update_layout(template="plotly_white")
    expected = json.loads(by_plotly.to_json())["layout"]["template"]

    first = figure_payload(go.Figure(go.Bar(x=[1], y=[1])))
    second = figure_payload(go.Figure(go.Scatter(x=[1], y=[2])))

    assert first["layout"]["template"] == expected
    assert second["layout"]["template"] == expected


# --- axis ticks -------------------------------------------------------------------------------

MIB, GIB = 2**20, 2**30


def test_byte_axis_of_the_app_page_ticks_every_128_mib():
    """8.0.4's median 470.40 MiB: 64 MiB steps would need ceil(470.4 / 64) = 8 intervals (more
    than 6), 128 MiB steps ceil(3.675) = 4: 0 … 512 MiB, printed as the tables print bytes."""
    axis = bytes_axis([69.44 * MIB, 470.40 * MIB], title="persistent bytes (median)")

    assert axis["tickvals"] == [0, 128 * MIB, 256 * MIB, 384 * MIB, 512 * MIB]
    assert axis["ticktext"] == ["0 Bytes", "128.00 MiB", "256.00 MiB", "384.00 MiB", "512.00 MiB"]
    assert axis["tickmode"] == "array"
    assert axis["title"] == "persistent bytes (median)"
    # from zero to the top tick, with 4% of the 512 MiB above it
    assert axis["range"] == [0, 512 * MIB * 1.04]


def test_byte_axis_of_a_generation_chart():
    """A 25.97 MiB bar: 4 MiB steps need ceil(6.49) = 7 intervals, 8 MiB steps 4."""
    axis = bytes_axis([25.97 * MIB, 12.36 * MIB, 16.87 * MIB])
    assert axis["ticktext"] == ["0 Bytes", "8.00 MiB", "16.00 MiB", "24.00 MiB", "32.00 MiB"]


def test_byte_ticks_stay_exact_where_the_unit_changes():
    """Footprints up to 3000 MiB (2.93 GiB): 256 MiB steps need ceil(11.7) = 12 intervals,
    512 MiB steps ceil(5.86) = 6; ticks past 1 GiB print in GiB with no rounding."""
    axis = bytes_axis([1400 * MIB, 3000 * MIB])
    assert axis["ticktext"] == [
        "0 Bytes", "512.00 MiB", "1.00 GiB", "1.50 GiB", "2.00 GiB", "2.50 GiB", "3.00 GiB",
    ]  # fmt: skip
    assert axis["tickvals"][-1] == 3 * GIB


def test_byte_ticks_below_a_kib_and_below_zero():
    # 700 bytes: 64-byte steps need 11 intervals, 128-byte steps ceil(5.47) = 6
    assert byte_scale([700]).ticks == [0, 128, 256, 384, 512, 640, 768]
    # -3 KiB … 5 KiB: 1 KiB steps span -3 … 5 = 8 intervals; 2 KiB steps -2 … 3 = 5
    axis = bytes_axis([-3 * 1024, 5 * 1024])
    assert axis["ticktext"] == [
        "-4.00 KiB", "-2.00 KiB", "0 Bytes", "2.00 KiB", "4.00 KiB", "6.00 KiB",
    ]  # fmt: skip
    assert axis["range"] == [-4096, 6144 + 0.04 * 10240]


def test_nothing_to_plot_still_has_an_axis():
    assert byte_scale([]).ticks == [0, 1]
    assert byte_scale([None, 0]).ticks == [0, 1]


def test_count_axis_has_whole_round_ticks():
    """Churn up to 18,517: steps of 2,000 need 10 intervals, 2,500 need 8, 5,000 need 4."""
    assert count_scale([15_829, 18_517]).ticks == [0, 5_000, 10_000, 15_000, 20_000]
    axis = count_axis([15_829, 18_517], title="churn")
    assert (axis["tickmode"], axis["tick0"], axis["dtick"]) == ("linear", 0, 5_000)
    assert axis["tickformat"] == ",d"
    # never a step below one: two occurrences tick at 0, 1, 2 (not 0, 0.5, … 2)
    assert count_scale([2, 2]).ticks == [0, 1, 2]
    assert count_scale([0.5]).ticks == [0, 1]


def test_occurrences_chart_counts_in_whole_numbers():
    payload = occurrences_per_build_figure([("8.0.1 (101)", 2), ("8.0.4 (104)", 2)])
    yaxis = payload["layout"]["yaxis"]
    assert (yaxis["dtick"], yaxis["tickformat"]) == (1, ",d")
    assert yaxis["range"] == [0, 2.08]  # ticks 0, 1, 2 and 4% of 2 above


def test_two_axes_line_up_on_the_leak_chart():
    """Bytes per report up to 6,293,968 (6.0024 MiB) on the left, allocations per report up to
    52 on the right. With n intervals on both axes, the share of each axis the values fill:
      n = 3: left 4 MiB steps (0 … 12 MiB) 0.50, right 20 (0 … 60) 0.87: the emptier 0.50
      n = 4: left 2 MiB steps (0 … 8 MiB) 0.75, right 20 (0 … 80) 0.65: 0.65
      n = 5: left 2 MiB (0 … 10 MiB) 0.60, right 20 (0 … 100) 0.52: 0.52
      n = 6: left 2 MiB (0 … 12 MiB) 0.50, right 10 (0 … 60) 0.87: 0.50
    so 4 intervals, the fullest emptier axis."""
    left, right = aligned_scales([208, 64, 6_293_968], BINARY_STEPS, [4, 1, 52], COUNT_STEPS)
    assert left.ticks == [0, 2 * MIB, 4 * MIB, 6 * MIB, 8 * MIB]
    assert right.ticks == [0, 20, 40, 60, 80]


def test_two_axes_line_up_on_the_churn_chart():
    """Churn 15,829 … 18,517 and elapsed 347.4 … 585.2 ms:
    n = 3: 10,000 steps (0 … 30,000) 0.62; 200 (0 … 600) 0.98: 0.62
    n = 4: 5,000 (0 … 20,000) 0.93; 200 widened to 0 … 800, 0.73: 0.73
    n = 5: 5,000 (0 … 25,000) 0.74; 200 (0 … 1,000) 0.59: 0.59
    n = 6: 5,000 (0 … 30,000) 0.62; 100 (0 … 600) 0.98: 0.62"""
    left, right = two_axes([15_829, 18_517], "churn", [347.4, 585.2], "elapsed ms")
    assert (left["dtick"], left["range"]) == (5_000, [0, 20_000 * 1.04])
    assert (right["dtick"], right["range"]) == (200, [0, 800 * 1.04])
    assert (left["title"], right["title"]) == ("churn", "elapsed ms")


def test_two_axes_payload_puts_the_right_ticks_on_the_left_grid():
    left, right = two_axes([208, 6_293_968], "bytes per report", [4, 52], "allocations",
                           left_bytes=True)  # fmt: skip
    fig = go.Figure([go.Bar(x=["a", "b"], y=[208, 6_293_968]),
                     go.Scatter(x=["a", "b"], y=[4, 52], yaxis="y2")])  # fmt: skip
    layout = per_build_two_axes_payload(fig, left, right, side_margin=80)["layout"]
    y, y2 = layout["yaxis"], layout["yaxis2"]
    # every right tick sits at the height of a left tick (same share of its axis's range)
    left_heights = [v / y["range"][1] for v in y["tickvals"]]
    right_heights = [i * y2["dtick"] / y2["range"][1] for i in range(len(left_heights))]
    assert right_heights == pytest.approx(left_heights)
    assert (y2["overlaying"], y2["side"], y2["showgrid"]) == ("y", "right", False)
    assert y2["tickformat"] == ",d"


def test_legend_sits_above_the_plot():
    """Not below it, where rotated category names are drawn."""
    legend = figure_payload(go.Figure(go.Bar(x=["a"], y=[1])))["layout"]["legend"]
    assert (legend["orientation"], legend["yanchor"]) == ("h", "bottom")
    assert legend["y"] > 1


def test_every_string_a_device_sent_is_plain_text_in_a_figure():
    """plotly reads a subset of HTML in labels: a category `<a href=…>` would be a live link in
    the chart. Every string is escaped (plotly decodes the entities back to the same text),
    but the hover templates memdash writes keep their markup."""
    link = '<a href="https://evil.example/">Cache</a>'
    fig = go.Figure(
        go.Bar(
            x=[link], y=[1], name="<b>bold</b> & co", text=["<i>x</i>"],
            customdata=[["<br>"]], hovertemplate="%{x}<br>%{customdata[0]}<extra></extra>",
        )
    )  # fmt: skip
    payload = figure_payload(fig, title=dict(text="<sup>t</sup>"))
    trace = payload["data"][0]
    assert trace["x"] == ['&lt;a href="https://evil.example/"&gt;Cache&lt;/a&gt;']
    assert trace["name"] == "&lt;b&gt;bold&lt;/b&gt; &amp; co"
    assert trace["text"] == ["&lt;i&gt;x&lt;/i&gt;"]
    assert trace["customdata"] == [["&lt;br&gt;"]]
    assert trace["hovertemplate"] == "%{x}<br>%{customdata[0]}<extra></extra>"
    assert payload["layout"]["title"]["text"] == "&lt;sup&gt;t&lt;/sup&gt;"


def test_log_byte_axis_shows_2_mib_beside_400_mib():
    """The issue's trends: 2 MiB = 2^21 B and 400 MiB ≈ 2^28.6 B. A tick per power of two would
    take 29 - 21 = 8 intervals (more than 6); one per two powers 2^20 … 2^30, 5 intervals."""
    axis = log_bytes_axis([2 * MIB, 0, None, 400 * MIB], title="persistent bytes")

    assert axis["type"] == "log"
    assert axis["tickvals"] == [MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB, 1024 * MIB]
    assert axis["ticktext"] == [
        "1.00 MiB", "4.00 MiB", "16.00 MiB", "64.00 MiB", "256.00 MiB", "1.00 GiB",
    ]  # fmt: skip
    # plotly's log range is in powers of ten: log10(2^20) = 6.0206, log10(2^30) = 9.0309,
    # with 4% of the span above the top tick
    bottom, top = axis["range"]
    assert bottom == pytest.approx(6.0206, abs=1e-4)
    assert top == pytest.approx(9.0309 + 0.04 * (9.0309 - 6.0206), abs=1e-4)
    assert axis["title"] == "persistent bytes"


def test_log_byte_axis_without_positive_values():
    """Nothing a log axis can draw: 1 B (2^0) to 1 KiB (2^10), every second power."""
    axis = log_bytes_axis([0, None])
    assert axis["tickvals"] == [1, 4, 16, 64, 256, 1024]
