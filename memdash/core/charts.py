"""Plotly figures for the pages: built in Python, drawn by the vendored plotly.js.

The figure goes to the page as JSON through `json_script` (so names in it cannot break out of
the script tag), and static/js/charts.js draws every `[data-chart]` element.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import orjson
import plotly.graph_objects as go

LAYOUT = dict(
    margin=dict(l=50, r=20, t=30, b=40),
    height=320,
    legend=dict(orientation="h", y=-0.2),
    font=dict(family="system-ui, sans-serif", size=12),
)
TEMPLATE = "plotly_white"


@cache
def _template_json() -> dict:
    """The layout template as plain JSON, expanded once per process: setting it through
    `update_layout` validates and deep-copies its ~6 KB on every figure, which was most of a
    chart's cost (about 10 of 15 ms) and the bulk of the FOOM page's time."""
    empty = go.Figure(layout={"template": TEMPLATE})
    return orjson.loads(empty.to_json())["layout"]["template"]


def figure_payload(fig: go.Figure, **layout) -> dict:
    """A plain dict {data, layout} for the template include core/chart.html."""
    # An empty template in the figure, or plotly would expand its default one on `to_json`.
    fig.update_layout(**{**LAYOUT, **layout}, template={})
    payload = orjson.loads(fig.to_json())
    payload["layout"]["template"] = _template_json()  # shared, read-only: only serialised
    return payload


OCCURRENCES_COLOUR = "#9bbcf0"


def occurrences_per_build_figure(per_build: Sequence[tuple], **bar) -> dict:
    """Bars of how often one item (a cycle cluster, a leak group) occurred in each build, from
    (build, occurrences, ...) rows in release order; `bar` adds to the trace (hover, data)."""
    fig = go.Figure(
        go.Bar(
            x=[str(row[0]) for row in per_build],
            y=[row[1] for row in per_build],
            name="occurrences",
            marker_color=OCCURRENCES_COLOUR,
            **bar,
        )
    )
    return figure_payload(
        fig, height=260, xaxis_title="build", yaxis_title="occurrences", xaxis_type="category"
    )


def per_build_two_axes_payload(
    fig: go.Figure, left_title: str, right_title: str, side_margin: int
) -> dict:
    """Layout of a per-build figure whose second measure has its own axis on the right (its
    traces set yaxis="y2"): builds as categories in release order, both axes from zero."""
    return figure_payload(
        fig,
        xaxis=dict(title="build (release order)", type="category"),
        yaxis=dict(title=left_title, rangemode="tozero"),
        yaxis2=dict(title=right_title, overlaying="y", side="right", rangemode="tozero"),
        margin=dict(l=side_margin, r=side_margin, t=30, b=40),
    )
