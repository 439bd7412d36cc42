"""Plotly figures for the pages: built in Python, drawn by the vendored plotly.js.

The figure goes to the page as JSON through `json_script` (so names in it cannot break out of
the script tag), and static/js/charts.js draws every `[data-chart]` element.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from typing import Any

import orjson
import plotly.graph_objects as go

from memdash.core.logic.numbers import MAX_INT64
from memdash.core.logic.units import format_bytes

LAYOUT = dict(
    margin=dict(l=50, r=20, t=30, b=40),
    height=320,
    # Above the plot area, left-aligned: below it, the legend would sit at a fixed fraction of
    # the plot's height and cover long or rotated tick labels; plotly grows the top margin for it.
    legend=dict(orientation="h", x=0, xanchor="left", y=1.02, yanchor="bottom"),
    font=dict(family="system-ui, sans-serif", size=12),
)
TEMPLATE = "plotly_white"

# Axis ticks. Plotly's own ticks on a byte axis are decimal (500M = 500 × 10^6), but memdash
# writes bytes in binary units (KiB, MiB, GiB) everywhere, so byte axes get ticks at whole
# multiples of a power of two: 1, 2, 4, … 512 × 2^(10k) bytes. Every such tick prints exactly in
# format_bytes' two decimals (768 MiB, 1.25 GiB), even where the unit changes. Counts get whole
# numbers at 1, 2, 2.5, 5 × 10^k (never a step of 2.5 itself).
MAX_INTERVALS = 6  # so an axis has 4 to 7 ticks (fewer only for counts below 3)
BINARY_STEPS = tuple(2**i for i in range(63))
COUNT_STEPS = tuple(
    sorted({m * 10**k for k in range(19) for m in (1, 2, 5)} | {25 * 10**k for k in range(18)})
)
TOP_SPACE = 0.04  # room above the highest tick, as a share of the axis (a marker there shows)


@dataclass(frozen=True)
class Scale:
    """Ticks at first·step, (first + 1)·step, … last·step: whole multiples of the step that cover
    the values and zero."""

    step: int
    first: int
    last: int

    @property
    def intervals(self) -> int:
        return self.last - self.first

    @property
    def ticks(self) -> list[float]:
        return [json_number(i * self.step) for i in range(self.first, self.last + 1)]

    @property
    def range(self) -> list[float]:
        low, high = self.first * self.step, self.last * self.step
        return [json_number(low), high + TOP_SPACE * (high - low)]

    def widened(self, intervals: int) -> Scale:
        """The same step with more intervals above (to line up with another axis)."""
        return Scale(self.step, self.first, self.first + max(intervals, self.intervals))


def json_number(value: int) -> float:
    """An axis number as JSON can carry it: exact while it fits 64 bits, else a float (a tick
    of 10^20 cannot be a JSON integer for orjson, and needs no more precision than that)."""
    return value if -MAX_INT64 <= value <= MAX_INT64 else float(value)


def scale_for(
    values: Iterable[float | None], steps: Sequence[int], max_intervals: int = MAX_INTERVALS
) -> Scale:
    """The smallest step of `steps` (ascending) whose ticks cover zero and the values (None
    skipped) in at most `max_intervals` intervals."""
    present = [v for v in values if v is not None and math.isfinite(v)]
    low, high = min([0, *present]), max([0, *present])
    for step in _steps_beyond(steps):
        first, last = math.floor(low / step), math.ceil(high / step)
        if last - first <= max_intervals:
            return Scale(step, first, max(last, first + 1))  # all zero: one interval above
    raise AssertionError("unreachable: the steps grow until they cover any finite value")


def _steps_beyond(steps: Sequence[int]) -> Iterator[int]:
    """The steps, then on past the last by its own ratio: a device may send a value past any
    table of steps (an elapsed time of 10^20 ms), and a chart still draws it."""
    yield from steps
    step, ratio = steps[-1], max(2, steps[-1] // steps[-2])
    while True:
        step *= ratio
        yield step


def byte_scale(values: Iterable[float | None], max_intervals: int = MAX_INTERVALS) -> Scale:
    return scale_for(values, BINARY_STEPS, max_intervals)


def count_scale(values: Iterable[float | None], max_intervals: int = MAX_INTERVALS) -> Scale:
    return scale_for(values, COUNT_STEPS, max_intervals)


def byte_axis_layout(scale: Scale, **axis: Any) -> dict[str, Any]:
    """Plotly axis settings: ticks of the scale labelled as the tables write bytes."""
    return dict(
        axis,
        tickmode="array",
        tickvals=scale.ticks,
        ticktext=[format_bytes(tick) for tick in scale.ticks],
        range=scale.range,
    )


def count_axis_layout(scale: Scale, **axis: Any) -> dict[str, Any]:
    """Plotly axis settings: whole-number ticks every `step`, with thousands separators."""
    return dict(
        axis,
        tickmode="linear",
        tick0=0,
        dtick=json_number(scale.step),
        tickformat=",d",
        range=scale.range,
    )


def bytes_axis(values: Iterable[float | None], **axis: Any) -> dict[str, Any]:
    """Axis settings for byte values (raw bytes, as plotted): binary ticks (0, 128 MiB, 256 MiB,
    …) labelled like the tables, the range from zero (or the lowest value) to the top tick."""
    return byte_axis_layout(byte_scale(values), **axis)


LOG_POWER_STEPS = (1, 2, 3, 5, 10)  # powers of two between a log axis's ticks


def log_bytes_axis(values: Iterable[float | None], **axis: Any) -> dict[str, Any]:
    """Axis settings for byte values on a logarithmic scale, so a 2 MiB series shows beside a
    400 MiB one: ticks at powers of two (1 MiB, 4 MiB, 16 MiB, …) labelled like the tables,
    at most MAX_INTERVALS apart, covering the positive values (zero and below cannot be drawn
    on it; without any, 1 B to 1 KiB)."""
    positive = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    low = math.floor(math.log2(min(positive))) if positive else 0
    high = math.ceil(math.log2(max(positive))) if positive else 10
    for step in LOG_POWER_STEPS:
        first, last = (
            math.floor(low / step),
            max(math.ceil(high / step), math.floor(low / step) + 1),
        )
        if last - first <= MAX_INTERVALS or step == LOG_POWER_STEPS[-1]:
            break
    ticks = [json_number(2 ** (i * step)) for i in range(first, last + 1)]
    # plotly's range of a log axis is in powers of ten
    bottom, top = math.log10(2.0 ** (first * step)), math.log10(2.0 ** (last * step))
    return dict(
        axis,
        type="log",
        tickmode="array",
        tickvals=ticks,
        ticktext=[format_bytes(tick) for tick in ticks],
        range=[bottom, top + TOP_SPACE * (top - bottom)],
    )


def count_axis(values: Iterable[float | None], **axis: Any) -> dict[str, Any]:
    """Axis settings for counts: ticks at whole numbers (0, 5,000, 10,000, …) from zero."""
    return count_axis_layout(count_scale(values), **axis)


def aligned_scales(
    left_values: Iterable[float | None],
    left_steps: Sequence[int],
    right_values: Iterable[float | None],
    right_steps: Sequence[int],
) -> tuple[Scale, Scale]:
    """Scales for two axes over one plot with as many intervals each, so the right axis's ticks
    fall on the left axis's grid lines: of 3 to MAX_INTERVALS intervals, the number that leaves
    the least empty space above the values on the emptier axis (the fewest on a tie)."""
    left_values, right_values = list(left_values), list(right_values)
    candidates = []
    for intervals in range(3, MAX_INTERVALS + 1):
        left = scale_for(left_values, left_steps, intervals).widened(intervals)
        right = scale_for(right_values, right_steps, intervals).widened(intervals)
        filled = min(_filled(left, left_values), _filled(right, right_values))
        candidates.append((filled, left, right))
    _filled_most, left, right = max(candidates, key=lambda c: c[0])  # the first on a tie
    return left, right


def _filled(scale: Scale, values: list[float | None]) -> float:
    """The share of the scale's span the values (and zero) take."""
    present = [v for v in values if v is not None]
    span = max([0, *present]) - min([0, *present])
    return span / (scale.intervals * scale.step)


@cache
def _template_json() -> dict[str, Any]:
    """The layout template as plain JSON, expanded once per process: setting it through
    `update_layout` validates and deep-copies its ~6 KB on every figure, which was most of a
    chart's cost and the bulk of the FOOM page's time (measured)."""
    empty = go.Figure(layout={"template": TEMPLATE})
    template: dict[str, Any] = orjson.loads(empty.to_json())["layout"]["template"]
    return template


def figure_payload(fig: go.Figure, **layout: Any) -> dict[str, Any]:
    """A plain dict {data, layout} for the template include core/chart.html, every string in
    it made plain text (`plain_text`) but the hover and text templates memdash writes.

    The traces are plotly's, checked as they were made; the layout (LAYOUT and `layout`) is
    memdash's own plain JSON, laid over the figure's as `update_layout` would (nested objects
    merged, a string title made `{"text": …}` as plotly.js 3 wants it) without plotly's
    validation of every key, which cost more than the rest of a chart (12 to 16 ms a figure,
    measured; the chart pages build three to six)."""
    made = fig.to_plotly_json()
    merged = _merged(made.get("layout") or {}, _titled({**LAYOUT, **layout}))
    merged["template"] = {}
    document = {"data": made.get("data") or [], "layout": merged}
    payload: dict[str, Any] = _as_plain_text(
        orjson.loads(orjson.dumps(document, default=_json_default, option=_JSON_OPTIONS))
    )
    payload["layout"]["template"] = _template_json()  # shared, read-only: only serialised
    return payload


_JSON_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


def _json_default(value: Any) -> Any:
    """What orjson does not write itself: a Decimal as a number, a set or tuple as a list."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _merged(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`changes` laid over `base`: nested objects merged key by key, anything else replaced."""
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def _titled(value: Any, key: str = "") -> Any:
    """A layout with each string `title` as plotly writes it, `{"text": title}`."""
    if key == "title" and isinstance(value, str):
        return {"text": value}
    if isinstance(value, dict):
        return {k: _titled(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_titled(v) for v in value]
    return value


# Strings memdash writes with plotly's markup on purpose (`<br>`, `<extra>`); a device's string
# placed in one goes through `plain_text` where the template is built.
TEMPLATE_KEYS = frozenset({"hovertemplate", "texttemplate"})


def plain_text(text: str) -> str:
    """A string as plotly draws it, as text: plotly reads a subset of HTML in every label (a
    category `<a href=…>` would be a live link, `<b>` bold), but decodes entities."""
    return html.escape(text, quote=False)


def _as_plain_text(value: Any, key: str = "") -> Any:
    if isinstance(value, str):
        return value if key in TEMPLATE_KEYS else plain_text(value)
    if isinstance(value, dict):
        return {k: _as_plain_text(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_plain_text(v, key) for v in value]
    return value


OCCURRENCES_COLOUR = "#9bbcf0"


def occurrences_per_build_figure(
    per_build: Sequence[tuple[Any, ...]], **bar: Any
) -> dict[str, Any]:
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
        fig,
        height=260,
        xaxis=dict(title="build", type="category"),
        yaxis=count_axis([row[1] for row in per_build], title="occurrences"),
    )


def per_build_two_axes_payload(
    fig: go.Figure, left: dict[str, Any], right: dict[str, Any], side_margin: int
) -> dict[str, Any]:
    """Layout of a per-build figure whose second measure has its own axis on the right (its
    traces set yaxis="y2"): builds as categories in release order, both axes from zero, the
    right axis's ticks on the left one's grid lines. `left` and `right` are axis settings from
    `two_axes`."""
    return figure_payload(
        fig,
        xaxis=dict(title="build (release order)", type="category"),
        yaxis=left,
        yaxis2=dict(right, overlaying="y", side="right", showgrid=False),
        margin=dict(l=side_margin, r=side_margin, t=30, b=40),
    )


def two_axes(
    left_values: Iterable[float | None],
    left_title: str,
    right_values: Iterable[float | None],
    right_title: str,
    left_bytes: bool = False,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Settings of a left and a right axis with lined-up ticks: the left in bytes or counts,
    the right in counts."""
    left, right = aligned_scales(
        left_values, BINARY_STEPS if left_bytes else COUNT_STEPS, right_values, COUNT_STEPS
    )
    left_layout = byte_axis_layout if left_bytes else count_axis_layout
    return left_layout(left, title=left_title), count_axis_layout(right, title=right_title)
