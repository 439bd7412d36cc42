"""The FOOM pages' plotly figures, built from the selectors' plain rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

from memdash.core.logic.charts import bytes_axis, figure_payload
from memdash.core.logic.units import format_bytes
from memdash.foom.logic.classify import CLASSES, Rate, class_label

if TYPE_CHECKING:
    from memdash.foom.reads.exits import DayRates

CLASS_COLOURS = {
    "foom": "#d62728",
    "background_oom": "#ff9896",
    "crash": "#9467bd",
    "app_hang": "#8c564b",
    "user_quit": "#1f77b4",
    "exit": "#aec7e8",
    "app_upgrade": "#2ca02c",
    "os_upgrade": "#98df8a",
    "reboot": "#17becf",
    "thermal_kill": "#ff7f0e",
    "inactive_kill": "#ffbb78",
    "os_kill": "#e377c2",
    "excluded": "#c7c7c7",
    "pending": "#7f7f7f",
}


OS_RATE_NAME = "OS memory kill rate"  # foreground memory kills per foreground exit


def _rate_traces(
    xs: Sequence[str], rates: Sequence[Rate | None], name: str, colour: str, band: str
) -> list[go.Scatter]:
    """A rate line and its 95% Wilson band (upper bound, then lower bound filled up to it)."""
    lows = [r.low if r else None for r in rates]
    highs = [r.high if r else None for r in rates]
    values = [r.rate if r else None for r in rates]
    counts = [f"{r.successes} of {r.trials}" if r else "no data" for r in rates]
    return [
        go.Scatter(
            x=list(xs), y=highs, mode="lines", line=dict(width=0, color=colour),
            hoverinfo="skip", showlegend=False, legendgroup=name,
        ),
        go.Scatter(
            x=list(xs), y=lows, mode="lines", line=dict(width=0, color=colour), fill="tonexty",
            fillcolor=band, name=f"{name}: 95% interval", hoverinfo="skip", legendgroup=name,
        ),
        go.Scatter(
            x=list(xs), y=values, mode="lines+markers", name=name, line=dict(color=colour),
            customdata=list(zip(counts, lows, highs, strict=True)), legendgroup=name,
            hovertemplate="%{x}<br>" + name + ": %{y:.2%} (%{customdata[0]})"
            "<br>95%: %{customdata[1]:.2%} – %{customdata[2]:.2%}<extra></extra>",
        ),
    ]  # fmt: skip


def rate_trend_figure(
    labels: Sequence[str],
    session_rates: Sequence[Rate | None],
    user_rates: Sequence[Rate | None] | None = None,
    x_title: str = "build (release order)",
    by_build: bool = True,
    os_rates: Sequence[Rate | None] | None = None,
) -> dict[str, Any]:
    """The heuristic's FOOM rates, and with `os_rates` the OS's own word beside them: foreground
    memory kills per foreground exit (MetricKit, ApplicationExitInfo), each with its band."""
    fig = go.Figure()
    for trace in _rate_traces(
        labels, session_rates, "FOOM rate per session", "#d62728", "rgba(214,39,40,0.15)"
    ):
        fig.add_trace(trace)
    if user_rates is not None:
        for trace in _rate_traces(
            labels, user_rates, "FOOM rate per user", "#1f77b4", "rgba(31,119,180,0.15)"
        ):
            fig.add_trace(trace)
    if os_rates is not None:
        for trace in _rate_traces(
            labels, os_rates, OS_RATE_NAME, "#2ca02c", "rgba(44,160,44,0.15)"
        ):
            fig.add_trace(trace)
    xaxis: dict[str, Any] = {"title": x_title}
    if by_build:
        xaxis["type"] = "category"  # build labels in release order, never re-sorted as numbers
    return figure_payload(
        fig, yaxis=dict(title="FOOM rate", tickformat=".1%", rangemode="tozero"), xaxis=xaxis
    )


def day_rate_figure(days: Sequence[DayRates], per_user: bool) -> dict[str, Any] | None:
    """The FOOM rate per day and, on the days the OS reported exits, its rate as a second line
    (None without days). Over all builds devices do not add up: per user is one build's only."""
    if not days:
        return None
    os_rates = [d.os.memory_rate if d.os else None for d in days]
    spoke = any(d.os for d in days)
    return rate_trend_figure(
        [d.day.isoformat() for d in days],
        [d.heuristic.session_rate if d.heuristic else None for d in days],
        [d.heuristic.user_rate if d.heuristic else None for d in days] if per_user else None,
        x_title="day (UTC; a run's start, a MetricKit window's middle, an exit's time)"
        if spoke
        else "day the run started (UTC)",
        by_build=False,
        os_rates=os_rates if spoke else None,
    )


def class_breakdown_figure(
    labels: Sequence[str], classes: Sequence[dict[str, int]]
) -> dict[str, Any]:
    """How runs ended, per build: stacked shares of each class."""
    fig = go.Figure()
    for cls in CLASSES:
        counts = [c.get(cls, 0) for c in classes]
        if not any(counts):
            continue
        fig.add_trace(
            go.Bar(
                x=list(labels), y=counts, name=class_label(cls),
                marker_color=CLASS_COLOURS.get(cls),
                hovertemplate="%{x}<br>" + class_label(cls) + ": %{y} runs<extra></extra>",
            )
        )  # fmt: skip
    return figure_payload(
        fig,
        barmode="stack",
        barnorm="percent",
        yaxis=dict(title="share of runs (%)"),
        xaxis=dict(title="build (release order)", type="category"),
    )


def footprint_by_model_figure(footprints: dict[str, list[int]]) -> dict[str, Any]:
    """Last footprint of FOOM runs per device model: where each model's limit shows. Bytes as
    they are, on binary ticks; a run's hover says its footprint as the tables do."""
    fig = go.Figure()
    for model, values in footprints.items():
        fig.add_trace(
            go.Box(
                y=values, name=model, boxpoints="all", jitter=0.4, pointpos=0,
                text=[format_bytes(v) for v in values], hoveron="points",
                hovertemplate="%{fullData.name}: %{text}<extra></extra>",
            )
        )  # fmt: skip
    return figure_payload(
        fig,
        showlegend=False,
        yaxis=bytes_axis(
            [v for values in footprints.values() for v in values], title="footprint at the end"
        ),
        xaxis=dict(title="device model"),
    )
