"""The leak pages' plotly figures."""

from __future__ import annotations

import plotly.graph_objects as go

from memdash.core.charts import figure_payload
from memdash.leaks.selectors import BuildLeaks

BYTES_COLOUR, ALLOCATIONS_COLOUR = "#9bbcf0", "#d62728"


def build_totals_figure(rows: list[BuildLeaks]) -> dict:
    """Per build, unreachable bytes and allocations per report (reports differ in number from
    build to build, so totals would mostly count uploads)."""
    labels = [str(row.build) for row in rows]
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=labels,
            y=[row.bytes_per_report for row in rows],
            name="unreachable bytes per report",
            marker_color=BYTES_COLOUR,
            customdata=[[row.reports, row.unreachable_bytes] for row in rows],
            hovertemplate="%{x}<br>%{y:,.0f} bytes per report<br>%{customdata[1]:,} bytes in "
            "%{customdata[0]} reports<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=labels,
            y=[row.allocations_per_report for row in rows],
            name="unreachable allocations per report",
            mode="lines+markers",
            yaxis="y2",
            line=dict(color=ALLOCATIONS_COLOUR),
            hovertemplate="%{x}<br>%{y:,.1f} allocations per report<extra></extra>",
        )
    )
    return figure_payload(
        fig,
        xaxis=dict(title="build (release order)", type="category"),
        yaxis=dict(title="bytes per report", rangemode="tozero"),
        yaxis2=dict(
            title="allocations per report", overlaying="y", side="right", rangemode="tozero"
        ),
        margin=dict(l=70, r=70, t=30, b=40),
    )


def group_builds_figure(per_build: list[tuple]) -> dict:
    fig = go.Figure(
        go.Bar(
            x=[str(build) for build, _n, _bytes in per_build],
            y=[n for _build, n, _bytes in per_build],
            customdata=[leaked for _build, _n, leaked in per_build],
            name="occurrences",
            marker_color=BYTES_COLOUR,
            hovertemplate="%{x}<br>%{y} occurrences, %{customdata:,} bytes<extra></extra>",
        )
    )
    return figure_payload(
        fig, height=260, xaxis_title="build", yaxis_title="occurrences", xaxis_type="category"
    )
