"""The snapshot page's timeline (live bytes or count over time, with the generation marks as
flags) and the time range (`from_ms`, `to_ms`) that the page, the API and the CSV exports read."""

from __future__ import annotations

from typing import Any

import orjson
import plotly.graph_objects as go
from django.core.exceptions import BadRequest
from django.http import Http404, QueryDict
from rest_framework.exceptions import ValidationError

from memdash.allocations.models import Snapshot
from memdash.allocations.reads.timeline import (
    NoSuchRange,
    TimeRange,
    no_timeline_reason,
    time_range,
    timeline_chart_data,
)
from memdash.core.logic.charts import bytes_axis, count_axis, figure_payload
from memdash.core.logic.units import format_bytes
from memdash.core.web.api import MissingReference, parse_decimal

MAX_MS = 2.0**63  # the largest time an upload may give (t_ms and at_ms are checked to it)
SERIES = {"bytes": "Live Bytes", "count": "# Live"}
GROWTH = "Growth"  # summed rows' generation marks: the persistent bytes made after each
RANGE_PARAMETERS = ("from_ms", "to_ms")


def parse_time_range(snapshot: Snapshot, params: QueryDict) -> TimeRange | None:
    """The range the query asks for: `from_ms` to `to_ms` (either may be left out: from the
    start of the run, to its end; given the wrong way round, the same range), None for neither.
    ValidationError (400) naming the parameter that is no decimal number; MissingReference
    (404) for a snapshot without a timeline or a range outside its run."""
    from_ms = parse_decimal(params, "from_ms", -MAX_MS, MAX_MS)
    to_ms = parse_decimal(params, "to_ms", -MAX_MS, MAX_MS)
    if from_ms is None and to_ms is None:
        return None
    try:
        return time_range(snapshot, from_ms, to_ms)
    except NoSuchRange as error:
        raise MissingReference(error.parameter, str(error)) from None


def page_time_range(snapshot: Snapshot, params: QueryDict) -> TimeRange | None:
    """`parse_time_range` for a page: 400 for a bad number, 404 for a range not there."""
    try:
        return parse_time_range(snapshot, params)
    except ValidationError as error:
        raise BadRequest(str(error.detail)) from None
    except MissingReference as error:
        raise Http404(str(error.detail)) from None


def parse_series(params: QueryDict) -> str:
    value = params.get("series") or "bytes"
    if value not in SERIES:
        raise ValidationError({"series": f"must be one of {', '.join(SERIES)}"})
    return value


def _seconds(ms: float) -> float:
    return round(ms / 1000, 6)


def timeline_figure(data: dict[str, Any], series: str, chosen: TimeRange | None) -> dict[str, Any]:
    """The live series as steps over time (s), a flag at each generation mark, the chosen range
    shaded; dragging across it (plotly's horizontal select) picks a range (timeline.js)."""
    values = data[f"live_{series}"]
    text = [format_bytes(v) for v in values] if series == "bytes" else [f"{v:,}" for v in values]
    name = GROWTH if data["kind"] == "marks" else SERIES[series]
    fig = go.Figure(
        go.Scatter(
            x=[_seconds(t) for t in data["times"]],
            y=values,
            text=text,
            # an events run's series holds between bucket ends; massif's is sampled at its points
            mode="lines" if data["kind"] == "buckets" else "lines+markers",
            line={"shape": "hv" if data["kind"] == "buckets" else "linear", "width": 2},
            fill="tozeroy",
            name=name,
            hovertemplate="%{x:.3f} s: %{text}<extra></extra>",
        )
    )
    shapes: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    for i, mark in enumerate(data["marks"]):
        x = _seconds(mark["at_ms"])
        shapes.append(
            {"type": "line", "x0": x, "x1": x, "yref": "paper", "y0": 0, "y1": 1,
             "line": {"color": "#c2410c", "width": 1.5, "dash": "dot"}}
        )  # fmt: skip
        # every other flag's name higher, so that close marks' names stay apart on a phone
        annotations.append(
            {"x": x, "y": 1, "yref": "paper", "yanchor": "bottom", "xanchor": "left",
             "text": f"⚑ {mark['name']}", "showarrow": False, "font": {"size": 11,
             "color": "#c2410c"}, "yshift": 14 * (i % 2)}
        )  # fmt: skip
    if chosen is not None:
        shapes.append(
            {"type": "rect", "x0": _seconds(chosen.from_ms), "x1": _seconds(chosen.to_ms),
             "yref": "paper", "y0": 0, "y1": 1, "fillcolor": "rgba(37, 99, 235, 0.15)",
             "line": {"width": 0}, "layer": "below"}
        )  # fmt: skip
    axis = bytes_axis if series == "bytes" else count_axis
    return figure_payload(
        fig,
        height=240,
        margin={"l": 60, "r": 20, "t": 44, "b": 40},
        showlegend=False,
        dragmode="select",
        selectdirection="h",
        shapes=shapes,
        annotations=annotations,
        xaxis={"title": {"text": "time (s)"}, "fixedrange": True},
        yaxis=axis(values, title={"text": name}, fixedrange=True),
    )


def timeline_context(
    snapshot: Snapshot, params: QueryDict, chosen: TimeRange | None
) -> dict[str, Any]:
    """The page's timeline section: its chart and what a drag snaps to, or why there is none."""
    data = timeline_chart_data(snapshot)
    if data is None:
        return {"timeline": None, "no_timeline": no_timeline_reason(snapshot)}
    counted = data["live_count"] is not None
    series = parse_series(params) if counted else "bytes"  # massif counts bytes only
    if data["kind"] != "buckets":  # a range snaps to massif's snapshots, or to the marks
        snap = {"points": orjson.dumps(data["times"]).decode()}
    else:
        snap = {
            "start_ms": data["start_ms"],
            "bucket_ms": data["bucket_ms"],
            "count": data["buckets"],
        }
    return {
        "timeline": {
            "chart": timeline_figure(data, series, chosen),
            "series": series,
            "series_labels": SERIES if counted else {},
            "snap": snap,
            "massif": data["kind"] == "points",
            "marks": data["kind"] == "marks",
            "flagged": bool(data["marks"]),  # a heaptrack run has no generation marks to flag
        },
        "time_range": chosen,
    }
