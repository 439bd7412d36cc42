"""Plotly figures for the pages: built in Python, drawn by the vendored plotly.js.

The figure goes to the page as JSON through `json_script` (so names in it cannot break out of
the script tag), and static/js/charts.js draws every `[data-chart]` element.
"""

from __future__ import annotations

import orjson
import plotly.graph_objects as go

LAYOUT = dict(
    margin=dict(l=50, r=20, t=30, b=40),
    height=320,
    template="plotly_white",
    legend=dict(orientation="h", y=-0.2),
    font=dict(family="system-ui, sans-serif", size=12),
)


def figure_payload(fig: go.Figure, **layout) -> dict:
    """A plain dict {data, layout} for the template include core/chart.html."""
    fig.update_layout(**{**LAYOUT, **layout})
    return orjson.loads(fig.to_json())
