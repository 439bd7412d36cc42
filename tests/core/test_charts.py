"""The chart payload: a plotly figure as plain JSON with memdash's layout and the template."""

import json

import plotly.graph_objects as go

from memdash.core.charts import figure_payload


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
