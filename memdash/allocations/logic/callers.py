"""The responsible caller of each category (Matrix's: the first frame outside a system image on
the category's heaviest stack), over a parsed snapshot. Pure: no Django."""

from __future__ import annotations

from memdash.allocations.logic.analysis import frame_label, responsible_frame
from memdash.allocations.logic.document.parse import ParsedSnapshot

# category name -> (the label the statistics table shows, the id the frame is stored under)
Callers = dict[str, tuple[str, int]]


def responsible_callers(
    parsed: ParsedSnapshot, heaviest: dict[str, int], frame_ids: list[int]
) -> Callers:
    """Per category, the responsible caller of its heaviest stack (`heaviest`: category ->
    stack node, `totals.Totals.heaviest`); a category whose stack holds no app frame has none."""
    parents = dict(enumerate(parsed.stack_parents))
    frame_of = dict(enumerate(parsed.stack_frames))
    is_system = {i: f.is_system for i, f in enumerate(parsed.frames)}
    result: Callers = {}
    for category, stack in heaviest.items():
        frame = responsible_frame(stack, parents, frame_of, is_system)
        if frame is not None:
            f = parsed.frames[frame]
            label = frame_label(f.symbol, f.image, f.offset, f.address)
            result[category] = (label, frame_ids[frame])
    return result
