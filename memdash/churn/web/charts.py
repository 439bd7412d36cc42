"""The churn page's plotly figure: churn per build next to elapsed time, each with its spread."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from memdash.churn.reads import ScenarioSeries
from memdash.core.logic.charts import per_build_two_axes_payload, two_axes

CHURN_COLOUR, TIME_COLOUR, FLAG_COLOUR = "#1f77b4", "#ff7f0e", "#d62728"


def scenario_figure(series: ScenarioSeries) -> dict[str, Any]:
    """Median over runs per build, with bars from the lowest to the highest run; churn on the
    left axis, elapsed time on the right; builds flagged for churn growth marked in red."""
    labels = [str(measured.build) for measured in series.builds]
    churn = [measured.churn for measured in series.builds]
    elapsed = [measured.elapsed for measured in series.builds]
    flagged = [measured.change.regressed for measured in series.builds]
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=labels,
            y=[s.median for s in churn],
            name="churn (median of runs)",
            mode="lines+markers",
            line=dict(color=CHURN_COLOUR),
            marker=dict(
                color=[FLAG_COLOUR if f else CHURN_COLOUR for f in flagged],
                size=[12 if f else 7 for f in flagged],
            ),
            error_y=dict(
                type="data",
                symmetric=False,
                array=[s.high - s.median for s in churn],
                arrayminus=[s.median - s.low for s in churn],
            ),
            customdata=[[s.runs, s.low, s.high] for s in churn],
            hovertemplate="%{x}<br>churn %{y:,.1f} (runs %{customdata[0]}, "
            "%{customdata[1]:,.1f} – %{customdata[2]:,.1f})<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=labels,
            y=[s.median for s in elapsed],
            name="elapsed ms (median of runs)",
            mode="lines+markers",
            yaxis="y2",
            line=dict(color=TIME_COLOUR, dash="dot"),
            error_y=dict(
                type="data",
                symmetric=False,
                array=[s.high - s.median for s in elapsed],
                arrayminus=[s.median - s.low for s in elapsed],
            ),
            hovertemplate="%{x}<br>%{y:,.1f} ms<extra></extra>",
        )
    )
    left, right = two_axes(
        [value for s in churn for value in (s.low, s.high)],  # the ends of the bars
        "churn",
        [value for s in elapsed for value in (s.low, s.high)],
        "elapsed ms",
    )
    return per_build_two_axes_payload(fig, left, right, side_margin=60)
