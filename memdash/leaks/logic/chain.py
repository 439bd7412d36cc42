"""Geometry of a LeakCanary leak trace drawn as the retain-cycle pages draw a loop: class boxes and
labelled reference arrows, from the GC root down to the leaking object (pure: no Django). The
references LeakCanary underlines (`~~~`, the likely causes) are marked as the ones to cut, as
the cycle pages mark the link to weaken; each box says its `Leaking:` verdict.

The template turns these numbers and strings into inline SVG, so every name goes through its
autoescaping.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

CHAR_WIDTH = 7.2  # px per character of the 12px monospace label font
BOX_HEIGHT = 30.0
BOX_PADDING = 12.0
GAP = 54.0  # between two boxes: the arrow and its reference label
MARGIN = 16.0
LABEL_OFFSET = 12.0  # of a reference's label from its arrow


@dataclass(frozen=True)
class ChainObject:
    """What the drawing needs of one object of a trace."""

    cls: str  # fully qualified, as LeakCanary prints it
    type: str  # instance, class, array
    verdict: str  # YES, NO, UNKNOWN, ""
    reference: str  # to the next object; "" for the leaking object
    suspect: bool  # LeakCanary underlined the reference: a likely cause


@dataclass(frozen=True)
class ChainBox:
    x: float
    y: float
    width: float
    label: str  # the simple class name and its type
    title: str  # the full class name
    verdict: str  # YES, NO, UNKNOWN, "" (the GC root is "root")

    height: float = BOX_HEIGHT

    @property
    def text_x(self) -> float:
        return self.x + self.width / 2

    @property
    def text_y(self) -> float:
        return self.y + self.height / 2 + 4


@dataclass(frozen=True)
class ChainArrow:
    x: float
    y1: float
    y2: float
    label: str
    label_x: float
    label_y: float
    suspect: bool


@dataclass(frozen=True)
class ChainDrawing:
    width: float
    height: float
    root_label: str  # the GC root, written above the first object (which it holds)
    root_y: float
    boxes: list[ChainBox]
    arrows: list[ChainArrow]


def simple_name(cls: str) -> str:
    """`com.example.ui.MainActivity` → `MainActivity`; `java.lang.Object[]` → `Object[]`."""
    return cls.rsplit(".", 1)[-1] if "." in cls else cls


def _width(label: str) -> float:
    return max(80.0, len(label) * CHAR_WIDTH + 2 * BOX_PADDING)


def draw_chain(gc_root: str, objects: Sequence[ChainObject]) -> ChainDrawing:
    """The objects in a column, from the one the GC root holds (its root written above it) down
    to the leaking one; between two, the reference from the upper to the lower, its name beside
    the arrow, a likely cause marked."""
    root_label = f"GC root: {gc_root}" if gc_root else "GC root"
    labels = [f"{simple_name(o.cls)} {o.type}" for o in objects]
    widths = [_width(label) for label in labels] or [80.0]
    widest = max(widths)
    axis = MARGIN + widest / 2
    top = MARGIN + 18  # under the root's line
    boxes: list[ChainBox] = []
    arrows: list[ChainArrow] = []
    widest_label = len(root_label) * CHAR_WIDTH
    for index, obj in enumerate(objects):
        y = top + index * (BOX_HEIGHT + GAP)
        boxes.append(
            ChainBox(
                axis - widths[index] / 2, y, widths[index], labels[index], obj.cls, obj.verdict
            )
        )
        if index == 0:
            continue
        above = objects[index - 1]
        label = f"✂ {above.reference}" if above.suspect else above.reference
        widest_label = max(widest_label, len(label) * CHAR_WIDTH + LABEL_OFFSET)
        arrows.append(
            ChainArrow(
                x=axis,
                y1=y - GAP + 2,
                y2=y - 2,
                label=label,
                label_x=axis + LABEL_OFFSET,
                label_y=y - GAP / 2 + 4,
                suspect=above.suspect,
            )  # fmt: skip
        )
    width = max(2 * MARGIN + widest, axis + widest_label + MARGIN, 2 * MARGIN + widest_label)
    height = top + len(objects) * BOX_HEIGHT + max(len(objects) - 1, 0) * GAP + MARGIN
    return ChainDrawing(round(width, 1), round(height, 1), root_label, MARGIN + 8, boxes, arrows)
