"""The leak pages' plotly figures."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from memdash.core.logic.charts import (
    occurrences_per_build_figure,
    per_build_two_axes_payload,
    two_axes,
)
from memdash.core.models import Build
from memdash.leaks.reads import BuildLeaks

BYTES_COLOUR, ALLOCATIONS_COLOUR = "#9bbcf0", "#d62728"


def build_totals_figure(rows: list[BuildLeaks]) -> dict[str, Any]:
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
    left, right = two_axes(
        [row.bytes_per_report for row in rows],
        "bytes per report",
        [row.allocations_per_report for row in rows],
        "allocations per report",
        left_bytes=True,
    )
    return per_build_two_axes_payload(fig, left, right, side_margin=80)


def group_builds_figure(per_build: list[tuple[Build, int, int]]) -> dict[str, Any]:
    """Occurrences per build, with the bytes they leaked in the hover: (build, n, bytes) rows."""
    return occurrences_per_build_figure(
        per_build,
        customdata=[leaked for _build, _n, leaked in per_build],
        hovertemplate="%{x}<br>%{y} occurrences, %{customdata:,} bytes<extra></extra>",
    )
