"""Plotly figures of what the OS reports: memory per build and device type (MetricKit), the
PSS of the processes Android killed for memory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from memdash.core.logic.charts import bytes_axis, figure_payload
from memdash.core.logic.units import format_bytes

# (build label, device type, bytes) per point, builds in release order.
MemoryRows = Sequence[tuple[str, str, int]]


def memory_by_build_figure(rows: MemoryRows, labels: Sequence[str], title: str) -> dict[str, Any]:
    """A box per build for each device type (one point per device and day): where a build
    needs more memory than the one before, and on which devices."""
    fig = go.Figure()
    for device_type in sorted({device for _, device, _ in rows}):
        points = [(label, value) for label, device, value in rows if device == device_type]
        fig.add_trace(
            go.Box(
                x=[label for label, _ in points], y=[value for _, value in points],
                name=device_type, boxpoints="outliers", text=[format_bytes(v) for _, v in points],
                hovertemplate="%{x} · %{fullData.name}: %{text}<extra></extra>",
            )
        )  # fmt: skip
    return figure_payload(
        fig,
        boxmode="group",
        yaxis=bytes_axis([value for *_, value in rows], title=title),
        xaxis=dict(
            title="build (release order)",
            type="category",
            categoryorder="array",
            categoryarray=list(labels),
        ),
    )
