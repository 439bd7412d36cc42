"""Plotly figures of what the OS reports: memory per build and device type (MetricKit), the
PSS of the processes Android killed for memory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from memdash.core.logic.charts import bytes_axis, figure_payload
from memdash.core.logic.samples import sorted_quantile
from memdash.core.logic.units import format_bytes

# (build label, device type, bytes) per point, builds in release order.
MemoryRows = Sequence[tuple[str, str, int]]


def box_stats(values: Sequence[int]) -> tuple[float, float, float, int, int]:
    """(q1, median, q3, lower fence, upper fence) of a box, as plotly draws one from its points:
    quartiles by linear interpolation (`samples.sorted_quantile`), each fence the furthest point
    within 1.5 IQR of its quartile."""
    ordered = sorted(values)
    q1, median, q3 = (sorted_quantile(ordered, q) for q in (0.25, 0.5, 0.75))
    reach = 1.5 * (q3 - q1)
    lower = min(v for v in ordered if v >= q1 - reach)
    upper = max(v for v in ordered if v <= q3 + reach)
    return q1, median, q3, lower, upper


def memory_by_build_figure(rows: MemoryRows, labels: Sequence[str], title: str) -> dict[str, Any]:
    """A box per build for each device type (over one point per device and day): where a build
    needs more memory than the one before, and on which devices. The boxes are sent worked out
    (quartiles and fences, plotly's precomputed boxes), not their thousands of points: the page
    stays small and quick whatever the fleet."""
    fig = go.Figure()
    for device_type in sorted({device for _, device, _ in rows}):
        by_build: dict[str, list[int]] = {}
        for label, device, value in rows:
            if device == device_type:
                by_build.setdefault(label, []).append(value)
        builds = [label for label in labels if label in by_build]
        boxes = [box_stats(by_build[label]) for label in builds]
        fig.add_trace(
            go.Box(
                x=builds, name=device_type,
                q1=[b[0] for b in boxes], median=[b[1] for b in boxes], q3=[b[2] for b in boxes],
                lowerfence=[b[3] for b in boxes], upperfence=[b[4] for b in boxes],
                text=[
                    f"median {format_bytes(b[1])} ({format_bytes(b[0])} to {format_bytes(b[2])}) "
                    f"over {len(by_build[label])} device-days"
                    for label, b in zip(builds, boxes, strict=True)
                ],
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
