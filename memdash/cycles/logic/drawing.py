"""Geometry of a cycle drawn as a loop of class boxes with the reference names on the arrows.

Pure (no Django): the template turns these numbers and strings into inline SVG, so every name
goes through the template's autoescaping.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

CHAR_WIDTH = 7.2  # px per character of the 12px monospace-ish label font
BOX_HEIGHT = 30.0
BOX_PADDING = 12.0
MARGIN = 40.0


@dataclass(frozen=True)
class Box:
    x: float  # top-left
    y: float
    width: float
    height: float
    label: str
    system: bool

    @property
    def cx(self) -> float:
        return self.x + self.width / 2

    @property
    def cy(self) -> float:
        return self.y + self.height / 2

    @property
    def text_x(self) -> float:
        return self.cx

    @property
    def text_y(self) -> float:
        return self.cy + 4


@dataclass(frozen=True)
class Arrow:
    path: str  # SVG path data
    label: str
    label_x: float
    label_y: float
    anchor: str = "middle"  # SVG text-anchor: labels sit outside the line, away from it
    weak: bool = False  # the reference to make weak (`clustering.link_to_weaken`)
    ownership: str = ""  # as the tool said it (`weak`, `strong` …); "" unknown
    retains: bool = True  # False for a reference that retains nothing (`__weak` …): dashed


@dataclass(frozen=True)
class LoopDrawing:
    width: float
    height: float
    boxes: list[Box]
    arrows: list[Arrow]


def _box_width(label: str) -> float:
    return max(60.0, len(label) * CHAR_WIDTH + 2 * BOX_PADDING)


def _edge_point(box: Box, toward_x: float, toward_y: float) -> tuple[float, float]:
    """Where the line from the box's centre toward a point leaves the box."""
    dx, dy = toward_x - box.cx, toward_y - box.cy
    if dx == 0 and dy == 0:
        return box.cx, box.cy
    scale_x = (box.width / 2) / abs(dx) if dx else math.inf
    scale_y = (box.height / 2) / abs(dy) if dy else math.inf
    scale = min(scale_x, scale_y)
    return box.cx + dx * scale, box.cy + dy * scale


def _fmt(value: float) -> str:
    return f"{value:.1f}"


def _self_loop(box: Box, label: str) -> Arrow:
    x1, x2, y = box.cx - 20, box.cx + 20, box.y
    top = _fmt(y - 50)
    path = (
        f"M {_fmt(x2)} {_fmt(y)} C {_fmt(x2 + 30)} {top} {_fmt(x1 - 30)} {top} {_fmt(x1)} {_fmt(y)}"
    )
    return Arrow(path=path, label=label, label_x=box.cx, label_y=y - 42)


def _arrow(source: Box, target: Box, label: str, bend: float) -> Arrow:
    """A straight arrow, or for bend != 0 a curve bulging to the left of its direction by bend px
    (two boxes have two arrows between them, one each way)."""
    mx, my = (source.cx + target.cx) / 2, (source.cy + target.cy) / 2
    dx, dy = target.cx - source.cx, target.cy - source.cy
    length = math.hypot(dx, dy) or 1.0
    nx, ny = dy / length, -dx / length  # left-hand normal
    control_x, control_y = mx + nx * bend * 2, my + ny * bend * 2
    sx, sy = _edge_point(source, control_x, control_y)
    tx, ty = _edge_point(target, control_x, control_y)
    if bend:
        path = (
            f"M {_fmt(sx)} {_fmt(sy)} Q {_fmt(control_x)} {_fmt(control_y)} {_fmt(tx)} {_fmt(ty)}"
        )
    else:
        path = f"M {_fmt(sx)} {_fmt(sy)} L {_fmt(tx)} {_fmt(ty)}"
    offset = bend + 8
    label_x = mx + nx * offset
    # Text is drawn above its baseline: below the line, move it down by about its height.
    label_y = my + ny * offset + 9 * max(ny, 0.0)
    anchor = "start" if nx > 0.35 else "end" if nx < -0.35 else "middle"
    return Arrow(path=path, label=label, label_x=label_x, label_y=label_y, anchor=anchor)


def via_label(via: Sequence[str]) -> str:
    return ".".join(via) if via else "(unnamed)"


def draw_loop(
    cycle: Sequence[tuple[str, Sequence[str]]],
    is_system: Callable[[str], bool],
    weak_index: int | None = None,
    ownership: Sequence[str] = (),
    non_retaining: frozenset[str] = frozenset(),
) -> LoopDrawing:
    """Boxes on an ellipse, in loop order clockwise from the top; the arrow into each box carries
    that box's `via` (the reference from the previous object) and its `ownership` where known;
    one whose ownership is in `non_retaining` is marked as retaining nothing. The arrow into box
    `weak_index` is the reference to make weak, marked."""
    n = len(cycle)
    widths = [_box_width(cls) for cls, _via in cycle]
    widest = max(widths, default=60.0)
    if n == 1:
        radius_x = radius_y = 0.0
    else:
        # Far enough apart that neighbouring boxes and their labels do not overlap.
        radius_x = max(widest * 0.9, n * (widest + 40) / (2 * math.pi))
        radius_y = max(70.0, radius_x * 0.55) if n > 2 else 20.0
        if n == 2:
            radius_x = widest / 2 + 90
    centre_x = MARGIN + widest / 2 + radius_x
    centre_y = MARGIN + 60 + radius_y
    boxes = []
    for i, ((cls, _via), width) in enumerate(zip(cycle, widths, strict=True)):
        angle = -math.pi / 2 + 2 * math.pi * i / n if n > 2 else math.pi * (1 - i)
        cx = centre_x + radius_x * math.cos(angle)
        cy = centre_y + radius_y * math.sin(angle) if n > 2 else centre_y
        boxes.append(
            Box(cx - width / 2, cy - BOX_HEIGHT / 2, width, BOX_HEIGHT, cls, is_system(cls))
        )
    arrows = []
    for i, (_cls, via) in enumerate(cycle):
        source, target = boxes[i - 1], boxes[i]
        label = via_label(via)
        if n == 1:
            arrow = _self_loop(target, label)
        else:
            arrow = _arrow(source, target, label, bend=30.0 if n == 2 else 0.0)
        own = ownership[i] if i < len(ownership) else ""
        arrow = replace(arrow, ownership=own, retains=own not in non_retaining)
        arrows.append(replace(arrow, weak=True) if i == weak_index else arrow)
    width = 2 * centre_x
    height = centre_y + radius_y + BOX_HEIGHT / 2 + MARGIN + (40 if n == 2 else 0)
    return LoopDrawing(width=round(width, 1), height=round(height, 1), boxes=boxes, arrows=arrows)
